// The job as the controller hands it out (proto::JobSpec) and as a daemon runs it
// (TrainingOptions), and what every member of an elastic job needs besides: its join
// token and the address others dial. One conversion each way, so controller, shards and workers
// cannot disagree on a field.
#ifndef RINGSIDE_SERVER_CONTROLLER_JOB_SPEC_H_
#define RINGSIDE_SERVER_CONTROLLER_JOB_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/training_options.h"
#include "proto/controller.pb.h"

namespace ringside::server {

// Both conversions go through the options' description (common/training_options.h): every
// row of the job's scope is the JobSpec field of its name, read and written through protobuf's
// reflection, so a new setting needs a row and a field, not code here.
proto::JobSpec JobSpecOf(const TrainingOptions& training);
// INVALID_ARGUMENT "the controller's job: name=value: why" for a value out of range (an unknown
// optimiser, a bad learning rate, a negative eval_every; 0 there means the default). `device` is
// the member's own.
absl::StatusOr<TrainingOptions> TrainingOptionsOf(const proto::JobSpec& job,
                                                  const std::string& device);

// How a daemon joins an elastic job (--controller, --join_token_file, --advertise).
struct MemberOptions {
  std::string controller;  // empty: static cluster
  std::string join_token_file;
  std::string advertise;  // empty: the listen address with the bound port
  absl::Duration register_timeout = absl::Seconds(60);
};

// The token in `path`, without surrounding whitespace. INVALID_ARGUMENT naming `flag` when the
// path or the file is empty; a file that cannot be read gives its own error (NOT_FOUND for a
// missing one) annotated with `flag`.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view flag);
// ReadTokenFile for --join_token_file.
absl::StatusOr<std::string> ReadJoinToken(const std::string& path);

// The address other members dial: `advertise` if given, else `listen`'s host with the port the
// server bound. A wildcard listen host (0.0.0.0, ::) cannot be dialled: INVALID_ARGUMENT asking
// for --advertise.
absl::StatusOr<std::string> AdvertisedAddress(const std::string& advertise,
                                              const std::string& listen, int bound_port);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_JOB_SPEC_H_
