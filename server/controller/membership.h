// The controller's membership and topology rules, without any transport (controller_service.h
// adapts them to gRPC) and without a clock of its own (callers pass `now`, so tests are exact).
//
// Rules:
//  1. A member registers with the join token (else UNAUTHENTICATED) as a worker or a shard, with
//     the address it serves on. A registration with the role and address of a live member
//     replaces that member: only one process can serve an address, so the old one is gone (an
//     orchestrator restarted it with the same command line, as Kubernetes does). The newcomer
//     takes its place (rank or shard index) under a new generation; the old id is dropped.
//  2. The first topology forms when `workers` workers and `ps_shards` shards have registered:
//     generation 1, ranks and shard indices in registration order, ring order = rank order.
//  3. Every member heartbeats with the generation it runs. Unknown (or dropped) member:
//     NOT_FOUND, and it registers again (rule 8); a generation that is not the current one:
//     FAILED_PRECONDITION (the member must re-read its watch stream).
//  4. Expire(now) drops every member silent for longer than the heartbeat timeout, including
//     one that registered and never heartbeated. Losing a member of the topology re-forms it
//     among the survivors under a new generation (ranks stay in their old order).
//  5. A worker registering after the topology formed is admitted at the next generation, as
//     the last rank.
//  6. SetMode switches ring/ps under a new generation.
//  7. Durable: Record() is everything a restarted controller needs to carry on (ids, addresses,
//     topology, the next id), and Restore() takes it back, counting every member as seen at the
//     restore, so the generation numbering never goes backwards and members keep their ids.
//     version() counts the changes to the record (not heartbeats), for whoever persists it.
//  8. Registering again. A member that was dropped while alive (it missed heartbeats under
//     load), or that a controller restarted without its record does not know, registers again
//     like a newcomer: new id, new credential. A worker joins as a late one (rule 5). A shard
//     registering after the topology formed joins the shard map at the place its address held
//     (its old shard index, so it serves the range it served before), else at the first vacant
//     place, else at a new last place; the shard map keeps its places' order. Places are not
//     part of the record: after a restore a returning shard takes a vacant or new place.
//     Each registration reports the newest generation the member has seen; every later
//     generation is above it, so a controller that forgot its members never numbers backwards
//     (members ignore a generation that is not newer than theirs).
//  9. A worker of the current generation whose collective failed in it (a message refused, a
//     peer past the collective's deadline) reports that generation failed: the controller forms
//     the next generation of the same members at once, so the job regroups without an operator.
//     A report of an older generation changes nothing (a newer one already replaced it), so the
//     members of one failed generation, who all report it, cause one regroup. A shard runs no
//     collective: PERMISSION_DENIED.
//  10. Heartbeats carry the steps the member completed; the last one a heartbeat of the current
//     generation reported is kept (CompletedStepsOf), what the checkpoint rules account a step
//     against.
//  11. A member told to stop (SIGTERM: a drain, a rolling restart) leaves: Leave drops it at
//     once, as rule 4 drops a silent one at the timeout, so the survivors regroup without
//     waiting for it. Unknown or already dropped: NOT_FOUND, changing nothing.
//  12. A shard that leaves the topology may hold its range of the job's state (the shards hold
//     it under --staleness, async or --backup_workers) and stays up to hand it over: it is
//     offered, as a departed shard, to rank 0 of every generation formed until the heartbeat
//     timeout has passed since its leave (Expire forgets it then), or until a shard registers at
//     its address (the process is gone). Rank 0 reads it when the generation's shards alone do
//     not cover the parameters. Departed shards are not part of the record.
// Thread-safe.
#ifndef RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_H_
#define RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"

namespace ringside::server {

enum class MemberRole { kWorker, kShard };

// Generations stay below 2^32: ring collective numbers are (generation << 32) + n
// (worker/elastic_training.h). Restore refuses a record past it, which no controller writes (it
// would take four billion membership changes) and whose numbering would wrap around to 0.
inline constexpr uint64_t kMaxGeneration = (uint64_t{1} << 32) - 1;
// The newest generation a registering member may report (rule 8): half the range, so at least
// two billion membership changes are left after it. Above it: INVALID_ARGUMENT.
inline constexpr uint64_t kMaxReportedGeneration = kMaxGeneration / 2;

struct MembershipConfig {
  int workers = 1;    // workers the first topology waits for
  int ps_shards = 0;  // shards it waits for (0: ring only)
  std::string join_token;
  absl::Duration heartbeat_timeout = absl::Seconds(10);
  SyncMode mode = SyncMode::kRing;
};

struct Topology {
  uint64_t generation = 0;  // 0: not formed yet
  SyncMode mode = SyncMode::kRing;
  std::vector<uint64_t> workers;  // member ids in rank order
  std::vector<uint64_t> shards;   // member ids in shard order
};

// What one member is told.
struct MemberAssignment {
  uint64_t generation = 0;
  SyncMode mode = SyncMode::kRing;
  int rank = -1;                    // workers
  int shard = -1;                   // shards
  std::vector<std::string> ring;    // worker addresses in rank order
  std::vector<std::string> shards;  // shard addresses in shard order
  std::vector<uint64_t> ring_ids;   // their member ids (link keys are made from them)
  std::vector<uint64_t> shard_ids;
  // Rule 12, rank 0 only: shards that left still holding their range of the state, oldest
  // first, with the credentials their read keys are made from.
  struct DepartedShard {
    std::string address;
    std::string credential;
  };
  std::vector<DepartedShard> departed_shards;
};

// What survives a controller restart (server/controller/membership_record.h stores it).
struct MembershipRecord {
  struct Member {
    uint64_t id = 0;
    MemberRole role = MemberRole::kWorker;
    std::string address;
    std::string credential;  // the member's secret: it stays valid across a restart
  };
  uint64_t next_id = 1;
  std::vector<Member> members;  // id order
  Topology topology;
};

class Membership {
 public:
  explicit Membership(MembershipConfig config) : config_(std::move(config)) {}

  // UNAUTHENTICATED for a wrong token (rule 1). INVALID_ARGUMENT for an address others cannot
  // dial, a `credential` that is not a member's own secret (common/auth.h), or a
  // `generation_seen` above kMaxReportedGeneration. RESOURCE_EXHAUSTED once every id is used
  // (only a restored record can get that far).
  // `generation_seen`: the newest generation the member has seen (0: none; rule 8).
  absl::StatusOr<uint64_t> Register(absl::string_view token, MemberRole role,
                                    const std::string& address, absl::Time now,
                                    const std::string& credential, uint64_t generation_seen = 0);
  // NOT_FOUND for an unknown or dropped member, FAILED_PRECONDITION for a generation that is not
  // the current one (rule 3).
  absl::Status Heartbeat(uint64_t member, uint64_t generation, absl::Time now,
                         uint64_t completed_steps = 0);
  // Rule 9: returns the new generation when `generation` is the current one, else 0 (nothing
  // changes). NOT_FOUND for an unknown or dropped member, PERMISSION_DENIED for a member that is
  // not a worker of the topology, FAILED_PRECONDITION before the topology has formed.
  absl::StatusOr<uint64_t> ReportFailure(uint64_t member, uint64_t generation);
  // Rule 10: the steps `member` last reported (0: none yet, or not a member).
  uint64_t CompletedStepsOf(uint64_t member) const;
  // Drops silent members; returns the ids dropped.
  std::vector<uint64_t> Expire(absl::Time now);
  // Rule 11: drops `member` now. Returns the generation the members go on in: a new one when
  // `member` was part of the topology, else the current one (0 before formation). NOT_FOUND for
  // an unknown or dropped member. A shard of the topology becomes a departed shard (rule 12).
  absl::StatusOr<uint64_t> Leave(uint64_t member, absl::Time now);
  // Returns the new generation. FAILED_PRECONDITION, changing nothing, before the topology has
  // formed, or for ps mode while the topology has no shard.
  absl::StatusOr<uint64_t> SetMode(SyncMode mode);

  Topology topology() const;
  // The member's view of the current topology; nullopt while it has none (not formed yet, a
  // late worker waiting for its generation, or a dropped member).
  std::optional<MemberAssignment> AssignmentOf(uint64_t member) const;
  bool IsMember(uint64_t member) const;
  // The member's credential (common/auth.h) if `member` is a member; else nullopt.
  std::optional<std::string> CredentialOf(uint64_t member) const;

  MembershipRecord Record() const;
  // Replaces the whole state with `record` (INVALID_ARGUMENT, changing nothing, when it does not
  // hold together: unknown ids in the topology, duplicate ids among the members or in the
  // topology, a role that does not fit).
  absl::Status Restore(const MembershipRecord& record, absl::Time now);
  // Bumped by every change to Record().
  uint64_t version() const;
  // Waits until version() differs from `seen` or `deadline` passes; returns version().
  uint64_t AwaitChange(uint64_t seen, absl::Time deadline) const;

 private:
  struct Member {
    MemberRole role;
    std::string address;
    absl::Time last_seen;
    std::string credential;
    uint64_t completed_steps = 0;  // rule 10
  };
  void MaybeFormLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A member registering after formation joins the topology (rules 5 and 8).
  void JoinLocked(uint64_t id, MemberRole role, const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next generation: above the current one and above every generation a member reported.
  void NextGenerationLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shard map's places are the topology's shards, in order (formation, restore).
  void ResetShardPlacesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `id` from the topology's workers and shards; true if it was in either.
  bool RemoveFromTopologyLocked(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replaces `old_id` by `new_id` wherever the topology names it; true if it did.
  bool ReplaceInTopologyLocked(uint64_t old_id, uint64_t new_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Departed {
    MemberAssignment::DepartedShard shard;
    absl::Time left;
  };

  const MembershipConfig config_;
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Member> members_ ABSL_GUARDED_BY(mu_);  // id order = registration order
  Topology topology_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // The newest generation a registering member reported (rule 8).
  uint64_t generation_floor_ ABSL_GUARDED_BY(mu_) = 0;
  // The shard map's places, each named by the address that held it last; a place whose address
  // no shard of the topology holds is vacant (rule 8).
  std::vector<std::string> shard_places_ ABSL_GUARDED_BY(mu_);
  std::vector<Departed> departed_ ABSL_GUARDED_BY(mu_);  // rule 12, oldest first
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_MEMBERSHIP_H_
