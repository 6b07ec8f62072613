// The controller's membership record file (server/controller/membership_record.h) as arbitrary
// text: what a restarted controller reads from --checkpoint_dir, corrupt, truncated or edited by
// hand.
//
// Checks, besides the sanitizers: parsing never throws (nlohmann's exceptions would end the
// controller) and refuses with INVALID_ARGUMENT; a record that parses writes back to JSON that
// parses to the same record; restoring it is refused with INVALID_ARGUMENT or leaves a
// membership that holds together (membership_check.h) and that a few registrations, heartbeats
// and an expiry keep together.
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/controller/membership.h"
#include "server/controller/membership_record.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/membership_check.h"

// A member's own secret (common/auth.h); its value does not matter to these rules.
static const std::string kCredential(32, 'k');

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<server::MembershipRecord> record = server::ParseMembershipRecord(text);
  FUZZ_CHECK(record.ok() || absl::IsInvalidArgument(record.status()), "%s",
             record.status().ToString().c_str());
  if (!record.ok()) return 0;

  absl::StatusOr<server::MembershipRecord> again =
      server::ParseMembershipRecord(server::MembershipRecordJson(*record));
  FUZZ_CHECK(again.ok() && SameRecord(*again, *record), "the record does not write back: %s",
             again.status().ToString().c_str());

  server::MembershipConfig config;
  config.workers = 2;
  config.ps_shards = 1;
  config.join_token = "t0ken";
  server::Membership membership(config);
  const absl::Time start = absl::UnixEpoch() + absl::Hours(1);
  const absl::Status restored = membership.Restore(*record, start);
  FUZZ_CHECK(restored.ok() || absl::IsInvalidArgument(restored), "%s", restored.ToString().c_str());
  if (!restored.ok()) return 0;
  CheckMembership(membership);

  // The restarted controller carries on: every member heartbeats the current generation, a
  // replacement and a newcomer register, and a silent member expires.
  const uint64_t generation = membership.topology().generation;
  for (const auto& member : record->members) {
    membership.Heartbeat(member.id, generation, start).IgnoreError();
  }
  CheckMembership(membership);
  if (!record->members.empty()) {
    const auto& first = record->members.front();
    membership.Register("t0ken", first.role, first.address, start, kCredential).IgnoreError();
    CheckMembership(membership);
  }
  membership.Register("t0ken", server::MemberRole::kWorker, "10.9.9.9:7000", start, kCredential)
      .IgnoreError();
  CheckMembership(membership);
  membership.Expire(start + absl::Seconds(60));
  CheckMembership(membership);
  FUZZ_CHECK(membership.topology().generation >= generation, "generation went back from %lu",
             generation);
  return 0;
}
