// The controller's membership rules (server/controller/membership.h) under arbitrary call
// sequences: registrations (right and wrong tokens, repeated and malformed addresses), heartbeats
// of known and unknown members at any generation, expiries as time passes, members leaving
// (known, unknown and already gone), mode switches, and
// restarts that restore the durable record, as saved, edited (a corrupt or hand-edited file) or
// parsed from arbitrary JSON.
//
// Checks, besides the sanitizers, after every call: membership_check.h's invariants (unique ids
// below the next id, a topology naming each member once in its role, assignments matching it
// with ranks below the world size) and a generation that never decreases, except when a Restore
// replaces the whole state (what it is for); after a restore and at the end, that the record
// reads back and restores.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/controller/membership.h"
#include "server/controller/membership_record.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/membership_check.h"

namespace ringside::fuzz {
namespace {

// A member's own secret (common/auth.h); its value does not matter to these rules.
const std::string kCredential(32, 'k');

using server::MemberRole;

constexpr char kToken[] = "t0ken";

// Mostly one of a few well-formed addresses (so registrations collide and replace), sometimes
// the input's own bytes.
std::string Address(FuzzReader& in) {
  const uint8_t pick = in.Byte();
  if (pick < 224) return absl::StrCat("10.0.0.", pick % 6, ":7000");
  return in.Bytes(pick % 32);
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace op = membership_ops;
  FuzzReader in(data, size);
  server::MembershipConfig config;
  config.workers = 1 + in.Byte() % 3;
  config.ps_shards = in.Byte() % 3;
  config.mode = in.Byte() % 2 == 0 ? SyncMode::kRing : SyncMode::kPs;
  config.join_token = kToken;
  config.heartbeat_timeout = absl::Seconds(10);
  server::Membership membership(config);
  absl::Time now = absl::UnixEpoch() + absl::Hours(1);
  std::vector<uint64_t> ids;  // every id handed out, dropped ones included
  uint64_t generation = 0;

  while (!in.empty()) {
    bool restored = false;
    switch (in.Byte() % op::kCount) {
      case op::kRegister: {
        const bool right_token = in.Byte() < 240;
        const MemberRole role = in.Byte() % 2 == 0 ? MemberRole::kWorker : MemberRole::kShard;
        const std::string address = Address(in);
        now += absl::Seconds(in.Byte() % 4);
        const absl::StatusOr<uint64_t> id =
            membership.Register(right_token ? kToken : "wrong", role, address, now, kCredential);
        FUZZ_CHECK(id.ok() || absl::IsUnauthenticated(id.status()) ||
                       absl::IsInvalidArgument(id.status()) ||
                       absl::IsResourceExhausted(id.status()),
                   "Register: %s", id.status().ToString().c_str());
        if (id.ok()) {
          FUZZ_CHECK(membership.IsMember(*id), "registered member %lu is not a member", *id);
          ids.push_back(*id);
        }
        break;
      }
      case op::kHeartbeat: {
        const uint8_t pick = in.Byte();
        const uint64_t id = !ids.empty() && pick < 224 ? ids[pick % ids.size()] : pick;
        const uint64_t current = membership.topology().generation;
        const uint8_t delta = in.Byte() % 3;  // one behind, current, one ahead
        const uint64_t beat = delta == 0 && current > 0 ? current - 1 : current + delta / 2;
        now += absl::Seconds(in.Byte() % 4);
        const absl::Status status = membership.Heartbeat(id, beat, now);
        FUZZ_CHECK(status.ok() || absl::IsNotFound(status) || absl::IsFailedPrecondition(status),
                   "Heartbeat: %s", status.ToString().c_str());
        FUZZ_CHECK(!status.ok() || (membership.IsMember(id) && beat == current),
                   "a heartbeat of member %lu at generation %lu (current %lu) accepted", id, beat,
                   current);
        break;
      }
      case op::kReportFailure: {
        const uint8_t pick = in.Byte();
        const uint64_t id = !ids.empty() && pick < 224 ? ids[pick % ids.size()] : pick;
        const server::Topology before = membership.topology();
        const uint8_t delta = in.Byte() % 3;  // one behind, current, one ahead
        const uint64_t failed = delta == 0 && before.generation > 0 ? before.generation - 1
                                                                    : before.generation + delta / 2;
        const absl::StatusOr<uint64_t> next = membership.ReportFailure(id, failed);
        FUZZ_CHECK(next.ok() || absl::IsNotFound(next.status()) ||
                       absl::IsPermissionDenied(next.status()) ||
                       absl::IsFailedPrecondition(next.status()),
                   "ReportFailure: %s", next.status().ToString().c_str());
        const server::Topology after = membership.topology();
        FUZZ_CHECK(after.workers == before.workers && after.shards == before.shards,
                   "a failure report changed the members");
        const bool formed = next.ok() && *next != 0;
        FUZZ_CHECK(formed == (next.ok() && failed == before.generation && failed != 0),
                   "a report of generation %lu (current %lu) formed %lu", failed, before.generation,
                   next.value_or(0));
        FUZZ_CHECK(!formed || (*next > before.generation && after.generation == *next),
                   "a failure report formed generation %lu after %lu", next.value_or(0),
                   before.generation);
        break;
      }
      case op::kExpire:
        now += absl::Seconds(in.Byte() % 16);
        for (uint64_t id : membership.Expire(now)) {
          FUZZ_CHECK(!membership.IsMember(id), "expired member %lu is still a member", id);
        }
        break;
      case op::kLeave: {
        const uint8_t pick = in.Byte();
        const uint64_t id = !ids.empty() && pick < 224 ? ids[pick % ids.size()] : pick;
        const bool was_member = membership.IsMember(id);
        const uint64_t before = membership.topology().generation;
        const absl::StatusOr<uint64_t> left = membership.Leave(id, now);
        FUZZ_CHECK(left.ok() == was_member, "Leave of member %lu (a member: %d): %s", id,
                   was_member, left.status().ToString().c_str());
        FUZZ_CHECK(!membership.IsMember(id), "member %lu is still a member after leaving", id);
        FUZZ_CHECK(left.ok() || membership.topology().generation == before,
                   "a refused leave changed the generation");
        FUZZ_CHECK(!left.ok() || *left == membership.topology().generation,
                   "Leave returned generation %lu, the topology has %lu", *left,
                   membership.topology().generation);
        break;
      }
      case op::kSetMode: {
        const absl::StatusOr<uint64_t> switched =
            membership.SetMode(in.Byte() % 2 == 0 ? SyncMode::kRing : SyncMode::kPs);
        FUZZ_CHECK(switched.ok() || absl::IsFailedPrecondition(switched.status()), "SetMode: %s",
                   switched.status().ToString().c_str());
        break;
      }
      case op::kRoundTrip: {  // a controller restart with its own record
        const server::MembershipRecord before = membership.Record();
        // Past the last generation (reached from a record restored at the limit) a restart
        // refuses the record, saying why: allowed, as membership_check.h says.
        if (before.topology.generation > server::kMaxGeneration) break;
        absl::StatusOr<server::MembershipRecord> read =
            server::ParseMembershipRecord(server::MembershipRecordJson(before));
        FUZZ_CHECK(read.ok(), "the record does not read back: %s",
                   read.status().ToString().c_str());
        const absl::Status status = membership.Restore(*read, now);
        FUZZ_CHECK(status.ok() && SameRecord(membership.Record(), before),
                   "a controller does not restore its own record: %s", status.ToString().c_str());
        break;
      }
      case op::kRestoreEdited: {  // a corrupt or hand-edited record
        server::MembershipRecord record = membership.Record();
        const uint8_t what = in.Byte() % 7;
        const uint8_t small = in.Byte();
        const uint64_t value = small < 192 ? small : in.Uint(8);
        // An id in use when there is one, so that edits make near misses.
        const uint64_t id = record.members.empty() || small >= 128
                                ? value
                                : record.members[value % record.members.size()].id;
        switch (what) {
          case 0:
            record.next_id = value;
            break;
          case 1:
            record.topology.generation = value;
            break;
          case 2:
            record.topology.workers.push_back(id);
            break;
          case 3:
            record.topology.shards.push_back(id);
            break;
          case 4:
            if (!record.members.empty()) record.members[value % record.members.size()].id = value;
            break;
          case 5:
            if (!record.members.empty()) {
              MemberRole& role = record.members[value % record.members.size()].role;
              role = role == MemberRole::kWorker ? MemberRole::kShard : MemberRole::kWorker;
            }
            break;
          default:  // ids close to running out
            record.next_id = ~uint64_t{0} - small % 4;
            break;
        }
        const absl::Status status = membership.Restore(record, now);
        FUZZ_CHECK(status.ok() || absl::IsInvalidArgument(status), "Restore: %s",
                   status.ToString().c_str());
        restored = status.ok();
        break;
      }
      case op::kRestoreJson: {
        absl::StatusOr<server::MembershipRecord> record =
            server::ParseMembershipRecord(in.Bytes(in.Uint(2) % 2048));
        FUZZ_CHECK(record.ok() || absl::IsInvalidArgument(record.status()), "Parse: %s",
                   record.status().ToString().c_str());
        if (!record.ok()) break;
        const absl::Status status = membership.Restore(*record, now);
        FUZZ_CHECK(status.ok() || absl::IsInvalidArgument(status), "Restore: %s",
                   status.ToString().c_str());
        restored = status.ok();
        break;
      }
    }
    const uint64_t current = membership.topology().generation;
    FUZZ_CHECK(restored || current >= generation, "generation went from %lu to %lu", generation,
               current);
    generation = current;
    // The record's round trip after the changes to it that matter most, and at the end.
    CheckMembership(membership, /*durable=*/restored || in.empty());
  }
  return 0;
}
