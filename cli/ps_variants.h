// `ringside compare --ps_variants`: the parameter-server settings one comparison runs side by
// side against the ring (issue 28's straggler comparison: synchronous, bounded staleness,
// backup workers, async), each on a fresh cluster with the job's other settings unchanged.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_PS_VARIANTS_H_
#define RINGSIDE_CLI_PS_VARIANTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/training_options.h"

namespace ringside::cli {

// The item suffix that runs a variant without the job's --straggler ("sync/no_straggler").
inline constexpr absl::string_view kWithoutStragglerSuffix = "/no_straggler";

struct PsVariant {
  // As the reports print it: "sync", "staleness=2", "backup_workers=1", "async",
  // "sync/no_straggler".
  std::string name;
  int64_t staleness = 0;  // TrainingOptions::staleness
  int64_t backup_workers = 0;
  // Run without the job's --straggler: the reference a slow worker's cost is measured against.
  bool without_straggler = false;
};

// A comma-separated list of `sync`, `staleness=K` (K >= 1), `async` and `backup_workers=B`
// (B >= 1), each optionally followed by `/no_straggler`, each at most once. INVALID_ARGUMENT
// naming the item for anything else, a repeat or an empty list.
absl::StatusOr<std::vector<PsVariant>> ParsePsVariants(absl::string_view text);

// `job` with the variant's staleness and backup workers (and no straggler, when the variant says
// so), checked together with the job's other
// settings (CheckSyncSettings: e.g. a 16-bit wire refuses staleness).
absl::StatusOr<TrainingOptions> WithPsVariant(const TrainingOptions& job, const PsVariant& variant);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_PS_VARIANTS_H_
