// The controller's membership record on disk, so a restarted controller (same address, same
// --checkpoint_dir, as a Kubernetes Deployment with a volume gives it) carries on with the
// members it had: `<dir>/membership.json`, written atomically (temporary file, fsync, rename)
// after every change. JSON, because an operator may want to read it.
// Errors: INVALID_ARGUMENT naming what does not hold together (the restored controller then
// refuses to start: move the file aside to start afresh); INTERNAL for I/O.
#ifndef RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_RECORD_H_
#define RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_RECORD_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/controller/membership.h"

namespace ringside::server {

std::string MembershipRecordPath(const std::string& dir);
std::string MembershipRecordJson(const MembershipRecord& record);
absl::StatusOr<MembershipRecord> ParseMembershipRecord(absl::string_view json);

absl::Status SaveMembershipRecord(const std::string& dir, const MembershipRecord& record);
// nullopt when `dir` holds no record (a first start).
absl::StatusOr<std::optional<MembershipRecord>> LoadMembershipRecord(const std::string& dir);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_RECORD_H_
