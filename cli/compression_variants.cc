#include "cli/compression_variants.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace ringside::cli {
namespace {

constexpr SyncMode kModes[] = {SyncMode::kRing, SyncMode::kPs};

// Whether `mode`'s sync carries a kind that fits it. The ring carries random-k
// (ring/compressed_sum.h); the parameter server carries none yet: the worker's ps sync refuses
// top-k and sign (UNIMPLEMENTED, worker/generation_sync.cc) until its Step stream carries them.
// Once it does, this is the one line to change: the runs, rows and reports take them as they are.
bool SyncCarries(SyncMode mode) { return mode == SyncMode::kRing; }

bool Fits(const Compression& compression, SyncMode mode) {
  return CheckCompressionFitsMode(compression, mode).ok();
}

absl::StatusOr<Compression> ParseOne(absl::string_view item) {
  absl::StatusOr<Compression> compression = ParseCompression(item);
  if (!compression.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--compression_variants: ", compression.status().message()));
  }
  if (compression->kind == CompressionKind::kNone) {
    return absl::InvalidArgumentError(
        "--compression_variants: none is the plain modes' own run; list codecs only");
  }
  const bool runs = std::any_of(std::begin(kModes), std::end(kModes),
                                [&](SyncMode mode) { return RunsCompressed(*compression, mode); });
  if (!runs) {
    std::string fitting;
    for (SyncMode mode : kModes) {
      if (Fits(*compression, mode)) fitting = std::string(SyncModeName(mode));
    }
    return absl::UnimplementedError(absl::StrCat(
        "--compression_variants: ", item.substr(0, 40), " fits ", fitting,
        " mode only, whose stream does not carry compressed gradients yet; the ring takes "
        "randomk:F"));
  }
  return *compression;
}

}  // namespace

bool RunsCompressed(const Compression& compression, SyncMode mode) {
  return compression.kind != CompressionKind::kNone && Fits(compression, mode) && SyncCarries(mode);
}

absl::StatusOr<std::vector<Compression>> ParseCompressionVariants(absl::string_view text) {
  std::vector<Compression> variants;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    ASSIGN_OR_RETURN(const Compression compression, ParseOne(item));
    if (std::find(variants.begin(), variants.end(), compression) != variants.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--compression_variants: ", CompressionText(compression), " is listed twice"));
    }
    variants.push_back(compression);
  }
  return variants;
}

absl::StatusOr<TrainingOptions> WithCompression(const TrainingOptions& job,
                                                const Compression& compression) {
  TrainingOptions options = job;
  options.compression = compression;
  RETURN_IF_ERROR(Annotate(CheckSyncSettings(options),
                           absl::StrCat("--compression_variants=", CompressionText(compression))));
  return options;
}

}  // namespace ringside::cli
