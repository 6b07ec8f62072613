#include "server/controller/membership.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside::server {
namespace {

absl::string_view RoleName(MemberRole role) {
  return role == MemberRole::kWorker ? "worker" : "shard";
}

}  // namespace

absl::StatusOr<uint64_t> Membership::Register(absl::string_view token, MemberRole role,
                                              const std::string& address, absl::Time now,
                                              const std::string& credential,
                                              uint64_t generation_seen) {
  if (config_.join_token.empty() || token != config_.join_token) {
    return absl::UnauthenticatedError(
        "wrong or missing join token; pass the controller's --join_token_file");
  }
  RETURN_IF_ERROR(ParseDialAddress(address).status());
  RETURN_IF_ERROR(ValidateCredential(credential));
  if (generation_seen > kMaxReportedGeneration) {
    return absl::InvalidArgumentError(absl::StrCat("generation ", generation_seen,
                                                   " reported as seen is past the last one a "
                                                   "member may report, ",
                                                   kMaxReportedGeneration));
  }
  absl::MutexLock lock(&mu_);
  // Ids are never reused: wrapping around would hand out 0 and then the ids of live members
  // (reachable only from a record whose next_id is near the end).
  if (next_id_ == std::numeric_limits<uint64_t>::max()) {
    return absl::ResourceExhaustedError(
        "no member id left (the next one would wrap around); start the controller without its "
        "membership record");
  }
  const uint64_t id = next_id_++;
  ++version_;
  generation_floor_ = std::max(generation_floor_, generation_seen);
  std::optional<uint64_t> replaced;
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->second.role != role || it->second.address != address) continue;
    // The process serving this address was replaced: the newcomer takes the old one's place.
    replaced = it->first;
    members_.erase(it);
    break;
  }
  members_[id] = Member{role, address, now, credential};
  // A departed shard's process no longer serves its address (rule 12).
  departed_.erase(
      std::remove_if(departed_.begin(), departed_.end(),
                     [&](const Departed& departed) { return departed.shard.address == address; }),
      departed_.end());
  if (replaced.has_value() && ReplaceInTopologyLocked(*replaced, id)) {
    NextGenerationLocked();  // same rank or shard index
  } else if (topology_.generation == 0) {
    MaybeFormLocked();
  } else {
    JoinLocked(id, role, address);
  }
  return id;
}

void Membership::JoinLocked(uint64_t id, MemberRole role, const std::string& address) {
  if (role == MemberRole::kWorker) {
    topology_.workers.push_back(id);  // a late worker joins at the next generation
    NextGenerationLocked();
    return;
  }
  std::set<std::string> held;  // the places a shard of the topology holds
  for (uint64_t shard : topology_.shards) held.insert(members_.at(shard).address);
  auto vacant = [&](const std::string& place) { return held.count(place) == 0; };
  auto place = std::find(shard_places_.begin(), shard_places_.end(), address);
  if (place == shard_places_.end())
    place = std::find_if(shard_places_.begin(), shard_places_.end(), vacant);
  if (place == shard_places_.end()) {
    place = shard_places_.insert(shard_places_.end(), address);
  } else {
    *place = address;
  }
  // Its shard index: the places before it that a shard holds.
  const auto index = std::count_if(shard_places_.begin(), place,
                                   [&](const std::string& other) { return !vacant(other); });
  topology_.shards.insert(topology_.shards.begin() + index, id);
  NextGenerationLocked();
}

void Membership::NextGenerationLocked() {
  topology_.generation = std::max(topology_.generation, generation_floor_) + 1;
}

void Membership::ResetShardPlacesLocked() {
  shard_places_.clear();
  for (uint64_t shard : topology_.shards) shard_places_.push_back(members_.at(shard).address);
}

bool Membership::ReplaceInTopologyLocked(uint64_t old_id, uint64_t new_id) {
  bool replaced = false;
  for (std::vector<uint64_t>* list : {&topology_.workers, &topology_.shards}) {
    for (uint64_t& id : *list) {
      if (id == old_id) {
        id = new_id;
        replaced = true;
      }
    }
  }
  return replaced;
}

void Membership::MaybeFormLocked() {
  std::vector<uint64_t> workers, shards;
  for (const auto& [id, member] : members_) {
    (member.role == MemberRole::kWorker ? workers : shards).push_back(id);
  }
  if (static_cast<int>(workers.size()) < config_.workers ||
      static_cast<int>(shards.size()) < config_.ps_shards) {
    return;
  }
  workers.resize(config_.workers);
  shards.resize(config_.ps_shards);
  topology_ = Topology{generation_floor_ + 1, config_.mode, workers, shards};
  ResetShardPlacesLocked();
}

absl::Status Membership::Heartbeat(uint64_t member, uint64_t generation, absl::Time now,
                                   uint64_t completed_steps) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(member);
  if (it == members_.end()) {
    return absl::NotFoundError(
        absl::StrCat("member ", member, " is unknown or was dropped; register again"));
  }
  if (generation != topology_.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("generation ", generation, " is not the current ", topology_.generation,
                     "; take the latest assignment from the watch stream"));
  }
  it->second.last_seen = now;
  it->second.completed_steps = completed_steps;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Membership::ReportFailure(uint64_t member, uint64_t generation) {
  absl::MutexLock lock(&mu_);
  if (members_.count(member) == 0) {
    return absl::NotFoundError(
        absl::StrCat("member ", member, " is unknown or was dropped; register again"));
  }
  if (std::find(topology_.workers.begin(), topology_.workers.end(), member) ==
      topology_.workers.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("member ", member, " is no worker of generation ", topology_.generation,
                     ": only a worker's collective can fail"));
  }
  if (topology_.generation == 0) {
    return absl::FailedPreconditionError("the job has not started: no generation failed");
  }
  if (generation != topology_.generation) return 0;
  ++version_;
  NextGenerationLocked();
  return topology_.generation;
}

uint64_t Membership::CompletedStepsOf(uint64_t member) const {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(member);
  if (it == members_.end()) return 0;
  return it->second.completed_steps;
}

std::vector<uint64_t> Membership::Expire(absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> dropped;
  for (auto it = members_.begin(); it != members_.end();) {
    if (now - it->second.last_seen > config_.heartbeat_timeout) {
      dropped.push_back(it->first);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  departed_.erase(std::remove_if(departed_.begin(), departed_.end(),
                                 [&](const Departed& departed) {
                                   return now - departed.left > config_.heartbeat_timeout;
                                 }),
                  departed_.end());
  bool changed = false;
  for (uint64_t id : dropped) changed = RemoveFromTopologyLocked(id) || changed;
  if (changed && topology_.generation > 0) NextGenerationLocked();
  if (!dropped.empty()) ++version_;
  return dropped;
}

absl::StatusOr<uint64_t> Membership::Leave(uint64_t member, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(member);
  if (it == members_.end()) {
    return absl::NotFoundError(
        absl::StrCat("member ", member, " is unknown or was dropped; nothing to leave"));
  }
  if (std::find(topology_.shards.begin(), topology_.shards.end(), member) !=
      topology_.shards.end()) {
    departed_.push_back({{it->second.address, it->second.credential}, now});
  }
  members_.erase(it);
  ++version_;
  if (RemoveFromTopologyLocked(member) && topology_.generation > 0) NextGenerationLocked();
  return topology_.generation;
}

bool Membership::RemoveFromTopologyLocked(uint64_t id) {
  bool removed = false;
  for (std::vector<uint64_t>* list : {&topology_.workers, &topology_.shards}) {
    auto pos = std::find(list->begin(), list->end(), id);
    if (pos != list->end()) {
      list->erase(pos);
      removed = true;
    }
  }
  return removed;
}

absl::StatusOr<uint64_t> Membership::SetMode(SyncMode mode) {
  absl::MutexLock lock(&mu_);
  if (topology_.generation == 0) {
    return absl::FailedPreconditionError("the job has not started: not every member registered");
  }
  if (mode == SyncMode::kPs && topology_.shards.empty()) {
    return absl::FailedPreconditionError("ps mode needs parameter-server shards; none are up");
  }
  topology_.mode = mode;
  ++version_;
  NextGenerationLocked();
  return topology_.generation;
}

Topology Membership::topology() const {
  absl::MutexLock lock(&mu_);
  return topology_;
}

bool Membership::IsMember(uint64_t member) const {
  absl::MutexLock lock(&mu_);
  return members_.count(member) > 0;
}

std::optional<MemberAssignment> Membership::AssignmentOf(uint64_t member) const {
  absl::MutexLock lock(&mu_);
  if (topology_.generation == 0 || members_.count(member) == 0) return std::nullopt;
  MemberAssignment assignment;
  assignment.generation = topology_.generation;
  assignment.mode = topology_.mode;
  for (size_t r = 0; r < topology_.workers.size(); ++r) {
    if (topology_.workers[r] == member) assignment.rank = static_cast<int>(r);
    assignment.ring.push_back(members_.at(topology_.workers[r]).address);
    assignment.ring_ids.push_back(topology_.workers[r]);
  }
  for (size_t s = 0; s < topology_.shards.size(); ++s) {
    if (topology_.shards[s] == member) assignment.shard = static_cast<int>(s);
    assignment.shards.push_back(members_.at(topology_.shards[s]).address);
    assignment.shard_ids.push_back(topology_.shards[s]);
  }
  if (assignment.rank < 0 && assignment.shard < 0) return std::nullopt;
  if (assignment.rank == 0) {
    for (const Departed& departed : departed_) assignment.departed_shards.push_back(departed.shard);
  }
  return assignment;
}

MembershipRecord Membership::Record() const {
  absl::MutexLock lock(&mu_);
  MembershipRecord record;
  record.next_id = next_id_;
  for (const auto& [id, member] : members_) {
    record.members.push_back({id, member.role, member.address, member.credential});
  }
  record.topology = topology_;
  return record;
}

absl::Status Membership::Restore(const MembershipRecord& record, absl::Time now) {
  if (record.next_id == 0) {
    return absl::InvalidArgumentError("next id 0: member ids start at 1");
  }
  if (record.topology.generation > kMaxGeneration) {
    return absl::InvalidArgumentError(absl::StrCat("generation ", record.topology.generation,
                                                   " is past the last one, ", kMaxGeneration));
  }
  std::map<uint64_t, Member> members;
  for (const MembershipRecord::Member& member : record.members) {
    if (member.id == 0 || member.id >= record.next_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("member id ", member.id, " is not below the next id ", record.next_id));
    }
    RETURN_IF_ERROR(
        Annotate(ParseDialAddress(member.address).status(), absl::StrCat("member ", member.id)));
    RETURN_IF_ERROR(
        Annotate(ValidateCredential(member.credential), absl::StrCat("member ", member.id)));
    if (!members.emplace(member.id, Member{member.role, member.address, now, member.credential})
             .second) {
      return absl::InvalidArgumentError(absl::StrCat("member id ", member.id, " appears twice"));
    }
  }
  std::set<uint64_t> named;  // a member has one place in the topology
  auto check = [&](const std::vector<uint64_t>& ids, MemberRole role) -> absl::Status {
    for (uint64_t id : ids) {
      if (!named.insert(id).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("the topology names member ", id, " more than once"));
      }
      auto it = members.find(id);
      if (it == members.end() || it->second.role != role) {
        return absl::InvalidArgumentError(absl::StrCat("the topology names member ", id, " as a ",
                                                       RoleName(role),
                                                       ", which the record does not hold"));
      }
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check(record.topology.workers, MemberRole::kWorker));
  RETURN_IF_ERROR(check(record.topology.shards, MemberRole::kShard));
  absl::MutexLock lock(&mu_);
  next_id_ = record.next_id;
  members_ = std::move(members);
  topology_ = record.topology;
  generation_floor_ = 0;
  ResetShardPlacesLocked();
  ++version_;
  return absl::OkStatus();
}

std::optional<std::string> Membership::CredentialOf(uint64_t member) const {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(member);
  if (it == members_.end()) return std::nullopt;
  return it->second.credential;
}

uint64_t Membership::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

uint64_t Membership::AwaitChange(uint64_t seen, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; };
  mu_.AwaitWithDeadline(absl::Condition(&changed), deadline);
  return version_;
}

}  // namespace ringside::server
