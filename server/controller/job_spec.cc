#include "server/controller/job_spec.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside::server {

proto::JobSpec JobSpecOf(const TrainingOptions& training) {
  proto::JobSpec job;
  job.set_model(training.model);
  job.set_activation(training.activation);
  job.set_data(training.data);
  job.set_steps(training.steps);
  job.set_batch_size(training.batch_size);
  job.set_lr(training.optimizer.learning_rate);
  job.set_optimizer(std::string(OptimizerName(training.optimizer.kind)));
  job.set_seed(training.seed);
  job.set_eval_every(training.eval_every);
  return job;
}

absl::StatusOr<TrainingOptions> TrainingOptionsOf(const proto::JobSpec& job,
                                                  const std::string& device) {
  TrainingOptions training;
  training.model = job.model();
  training.activation = job.activation();
  training.data = job.data();
  training.steps = job.steps();
  training.batch_size = job.batch_size();
  ASSIGN_OR_RETURN(training.optimizer.kind, ParseOptimizer(job.optimizer()));
  training.optimizer.learning_rate = static_cast<float>(job.lr());
  RETURN_IF_ERROR(Annotate(ValidateOptimizerConfig(training.optimizer), "the controller's job"));
  training.seed = job.seed();
  if (job.eval_every() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the controller's job: eval_every ", job.eval_every(), " is negative"));
  }
  if (job.eval_every() > 0) training.eval_every = job.eval_every();
  training.device = device;
  return training;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view flag) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": give the file holding the token"));
  }
  absl::StatusOr<std::string> read = ReadFileToString(path);
  if (!read.ok()) return Annotate(read.status(), flag);
  const std::string token(absl::StripAsciiWhitespace(*read));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, " is empty"));
  return token;
}

absl::StatusOr<std::string> ReadJoinToken(const std::string& path) {
  return ReadTokenFile(path, "--join_token_file");
}

absl::StatusOr<std::string> AdvertisedAddress(const std::string& advertise,
                                              const std::string& listen, int bound_port) {
  if (!advertise.empty()) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(advertise).status(), "--advertise"));
    return advertise;
  }
  absl::StatusOr<HostPort> host_port = ParseHostPort(listen);
  if (!host_port.ok()) return Annotate(host_port.status(), "--listen");
  if (host_port->host == "0.0.0.0" || host_port->host == "::" || host_port->host == "[::]") {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen=", listen,
                     " binds every interface, which others cannot dial; give "
                     "--advertise=HOST:PORT, the address the other members should use"));
  }
  return HostPort{host_port->host, bound_port}.ToString();
}

}  // namespace ringside::server
