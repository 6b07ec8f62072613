// What must hold of a controller's membership (server/controller/membership.h) at any moment,
// whatever calls or restored record led there; shared by membership_fuzzer and
// membership_record_fuzzer.
#ifndef RINGSIDE_TESTS_FUZZ_MEMBERSHIP_CHECK_H_
#define RINGSIDE_TESTS_FUZZ_MEMBERSHIP_CHECK_H_

#include <map>
#include <optional>
#include <set>

#include "server/controller/membership.h"
#include "server/controller/membership_record.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {

inline bool SameRecord(const server::MembershipRecord& a, const server::MembershipRecord& b) {
  if (a.next_id != b.next_id || a.members.size() != b.members.size() ||
      a.topology.generation != b.topology.generation || a.topology.mode != b.topology.mode ||
      a.topology.workers != b.topology.workers || a.topology.shards != b.topology.shards) {
    return false;
  }
  for (size_t i = 0; i < a.members.size(); ++i) {
    if (a.members[i].id != b.members[i].id || a.members[i].role != b.members[i].role ||
        a.members[i].address != b.members[i].address) {
      return false;
    }
  }
  return true;
}

// Ids are unique, nonzero and below the next id; the topology names each member at most once,
// in the role it registered with; every member's assignment puts it where the topology does,
// with a rank below the ring's size; and, with `durable` (the dearer part), the record reads
// back from its JSON and restores into a controller started afresh, as a restarted controller
// would do with it.
inline void CheckMembership(const server::Membership& membership, bool durable = true) {
  using server::MemberRole;
  const server::MembershipRecord record = membership.Record();
  const server::Topology& topology = record.topology;
  std::map<uint64_t, const server::MembershipRecord::Member*> members;
  for (const auto& member : record.members) {
    FUZZ_CHECK(member.id != 0 && member.id < record.next_id, "member id %lu, next id %lu",
               member.id, record.next_id);
    FUZZ_CHECK(members.emplace(member.id, &member).second, "member id %lu twice", member.id);
  }
  std::set<uint64_t> named;
  auto check_list = [&](const std::vector<uint64_t>& ids, MemberRole role) {
    for (uint64_t id : ids) {
      FUZZ_CHECK(named.insert(id).second, "the topology names member %lu twice", id);
      auto it = members.find(id);
      FUZZ_CHECK(it != members.end() && it->second->role == role,
                 "the topology names %lu, not a member in that role", id);
    }
  };
  check_list(topology.workers, MemberRole::kWorker);
  check_list(topology.shards, MemberRole::kShard);

  for (const auto& [id, member] : members) {
    const std::optional<server::MemberAssignment> assignment = membership.AssignmentOf(id);
    if (!assignment) continue;
    FUZZ_CHECK(topology.generation > 0 && assignment->generation == topology.generation,
               "assignment of generation %lu in generation %lu", assignment->generation,
               topology.generation);
    FUZZ_CHECK(assignment->ring.size() == topology.workers.size() &&
                   assignment->shards.size() == topology.shards.size(),
               "assignment lists %zu workers and %zu shards", assignment->ring.size(),
               assignment->shards.size());
    if (assignment->rank >= 0) {
      FUZZ_CHECK(static_cast<size_t>(assignment->rank) < topology.workers.size() &&
                     topology.workers[assignment->rank] == id &&
                     assignment->ring[assignment->rank] == member->address,
                 "member %lu assigned rank %d of %zu", id, assignment->rank,
                 topology.workers.size());
    }
    if (assignment->shard >= 0) {
      FUZZ_CHECK(static_cast<size_t>(assignment->shard) < topology.shards.size() &&
                     topology.shards[assignment->shard] == id &&
                     assignment->shards[assignment->shard] == member->address,
                 "member %lu assigned shard %d of %zu", id, assignment->shard,
                 topology.shards.size());
    }
  }

  // Past kMaxGeneration no restore takes the record (the ring's collective numbers end there).
  // A controller gets there only after four billion changes, or from a record restored at the
  // limit: allowed, and what a restart then refuses, saying why.
  if (!durable || topology.generation > server::kMaxGeneration) return;
  absl::StatusOr<server::MembershipRecord> parsed =
      server::ParseMembershipRecord(server::MembershipRecordJson(record));
  FUZZ_CHECK(parsed.ok() && SameRecord(*parsed, record), "the record does not read back: %s",
             parsed.status().ToString().c_str());
  server::Membership restarted(server::MembershipConfig{});
  const absl::Status restored = restarted.Restore(record, absl::UnixEpoch());
  FUZZ_CHECK(restored.ok() && SameRecord(restarted.Record(), record),
             "the record does not restore: %s", restored.ToString().c_str());
}

}  // namespace ringside::fuzz

#endif  // RINGSIDE_TESTS_FUZZ_MEMBERSHIP_CHECK_H_
