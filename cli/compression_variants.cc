#include "cli/compression_variants.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace ringside::cli {
namespace {

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
  return *compression;
}

}  // namespace

bool RunsCompressed(const Compression& compression, SyncMode mode) {
  return compression.kind != CompressionKind::kNone && Fits(compression, mode);
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
