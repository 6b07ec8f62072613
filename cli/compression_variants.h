// `ringside compare --compression_variants`: gradient codecs run beside the plain modes, a run
// per codec and mode it fits (common/compression.h says which: random-k the ring, top-k and sign
// the parameter server), each on a fresh cluster with the job's other settings unchanged, so
// their test accuracy can be set against the bytes they sent. Pure; thread-safe.
#ifndef RINGSIDE_CLI_COMPRESSION_VARIANTS_H_
#define RINGSIDE_CLI_COMPRESSION_VARIANTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/compression.h"
#include "common/training_options.h"

namespace ringside::cli {

// A comma-separated list of --compression specs other than none (randomk:0.01,topk:0.001,sign),
// each at most once. INVALID_ARGUMENT naming the item for anything else, a repeat or an empty
// list.
absl::StatusOr<std::vector<Compression>> ParseCompressionVariants(absl::string_view text);

// Whether a run of `compression` in `mode` is part of the comparison: the kind fits the mode
// (CheckCompressionFitsMode).
bool RunsCompressed(const Compression& compression, SyncMode mode);

// `job` compressed with `compression`, checked together with the job's other settings
// (CheckSyncSettings: e.g. staleness, backup workers or --bucket_bytes refuse a codec).
absl::StatusOr<TrainingOptions> WithCompression(const TrainingOptions& job,
                                                const Compression& compression);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMPRESSION_VARIANTS_H_
