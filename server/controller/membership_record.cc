#include "server/controller/membership_record.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace ringside::server {
namespace {

constexpr absl::string_view kFormat = "ringside-membership/1";
// Far above any real job (a member is under 300 bytes); bounds what a corrupt file can cost.
constexpr off_t kMaxRecordBytes = off_t{16} << 20;

nlohmann::json Ids(const std::vector<uint64_t>& ids) { return nlohmann::json(ids); }

absl::StatusOr<std::vector<uint64_t>> IdsOf(const nlohmann::json& value, absl::string_view what) {
  if (!value.is_array()) return absl::InvalidArgumentError(absl::StrCat(what, " is not a list"));
  std::vector<uint64_t> ids;
  for (const nlohmann::json& id : value) {
    if (!id.is_number_unsigned()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " holds a value that is not an id"));
    }
    ids.push_back(id.get<uint64_t>());
  }
  return ids;
}

}  // namespace

std::string MembershipRecordPath(const std::string& dir) { return dir + "/membership.json"; }

std::string MembershipRecordJson(const MembershipRecord& record) {
  nlohmann::json members = nlohmann::json::array();
  for (const MembershipRecord::Member& member : record.members) {
    members.push_back({{"id", member.id},
                       {"role", member.role == MemberRole::kWorker ? "worker" : "shard"},
                       {"address", member.address},
                       // The member's secret: the file is kept private (0600).
                       {"credential", member.credential}});
  }
  const nlohmann::json json = {{"format", kFormat},
                               {"next_id", record.next_id},
                               {"generation", record.topology.generation},
                               {"mode", SyncModeName(record.topology.mode)},
                               {"workers", Ids(record.topology.workers)},
                               {"shards", Ids(record.topology.shards)},
                               {"members", members}};
  return json.dump(1) + "\n";
}

absl::StatusOr<MembershipRecord> ParseMembershipRecord(absl::string_view text) {
  // Not const: operator[] of a missing key then gives null instead of undefined behaviour.
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json["format"].is_string() ||
      json["format"].get<std::string>() != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a membership record (", kFormat, " JSON object expected)"));
  }
  MembershipRecord record;
  nlohmann::json& next_id = json["next_id"];
  nlohmann::json& generation = json["generation"];
  if (!next_id.is_number_unsigned() || !generation.is_number_unsigned()) {
    return absl::InvalidArgumentError("next_id and generation must be unsigned integers");
  }
  record.next_id = next_id.get<uint64_t>();
  record.topology.generation = generation.get<uint64_t>();
  nlohmann::json& mode = json["mode"];
  if (!mode.is_string()) return absl::InvalidArgumentError("mode must be \"ring\" or \"ps\"");
  ASSIGN_OR_RETURN(record.topology.mode, ParseSyncMode(mode.get<std::string>()));
  ASSIGN_OR_RETURN(record.topology.workers, IdsOf(json["workers"], "workers"));
  ASSIGN_OR_RETURN(record.topology.shards, IdsOf(json["shards"], "shards"));
  nlohmann::json& members = json["members"];
  if (!members.is_array()) return absl::InvalidArgumentError("members is not a list");
  for (nlohmann::json& entry : members) {
    if (!entry.is_object() || !entry["id"].is_number_unsigned() || !entry["role"].is_string() ||
        !entry["address"].is_string() || !entry["credential"].is_string()) {
      return absl::InvalidArgumentError(
          "a member needs an id, a role, an address and a credential");
    }
    const std::string role = entry["role"].get<std::string>();
    if (role != "worker" && role != "shard") {
      return absl::InvalidArgumentError("a member's role is \"worker\" or \"shard\"");
    }
    record.members.push_back(
        {entry["id"].get<uint64_t>(), role == "worker" ? MemberRole::kWorker : MemberRole::kShard,
         entry["address"].get<std::string>(), entry["credential"].get<std::string>()});
  }
  return record;
}

absl::Status SaveMembershipRecord(const std::string& dir, const MembershipRecord& record) {
  // Private: the members' credentials are in it.
  return WriteFileAtomically(MembershipRecordPath(dir), MembershipRecordJson(record), 0600);
}

absl::StatusOr<std::optional<MembershipRecord>> LoadMembershipRecord(const std::string& dir) {
  const std::string path = MembershipRecordPath(dir);
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return std::optional<MembershipRecord>();
  if (info.st_size > kMaxRecordBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", info.st_size, " bytes, not a membership record"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  absl::StatusOr<MembershipRecord> record = ParseMembershipRecord(text);
  if (!record.ok()) {
    return Annotate(record.status(),
                    absl::StrCat(path, " (move it aside to start the job afresh)"));
  }
  return std::optional<MembershipRecord>(*std::move(record));
}

}  // namespace ringside::server
