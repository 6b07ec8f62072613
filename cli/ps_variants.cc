#include "cli/ps_variants.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace ringside::cli {
namespace {

absl::StatusOr<PsVariant> ParseSettings(absl::string_view item) {
  const auto bad = [item](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ps_variants: \"", item.substr(0, 40), "\" ", why,
        " (items: sync, staleness=K, async, backup_workers=B, each optionally /no_straggler)"));
  };
  if (item == "sync") return PsVariant{"sync", 0, 0};
  if (item == "async") return PsVariant{"async", kAsyncStaleness, 0};
  const size_t eq = item.find('=');
  if (eq == absl::string_view::npos) return bad("is not a variant");
  const absl::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
  if (key == "staleness") {
    absl::StatusOr<int64_t> staleness = ParseStaleness(value);
    if (!staleness.ok() || *staleness == 0) return bad("needs a staleness >= 1 or async");
    return PsVariant{absl::StrCat("staleness=", StalenessText(*staleness)), *staleness, 0};
  }
  if (key == "backup_workers") {
    int64_t backups = 0;
    if (!absl::SimpleAtoi(value, &backups) || backups < 1 || backups > 1000) {
      return bad("needs a count of backup workers in [1, 1000]");
    }
    return PsVariant{absl::StrCat("backup_workers=", backups), 0, backups};
  }
  return bad("is not a variant");
}

// An item: its settings, and "/no_straggler" to run it without the job's --straggler.
absl::StatusOr<PsVariant> ParseOne(absl::string_view item) {
  const bool without = absl::ConsumeSuffix(&item, kWithoutStragglerSuffix);
  ASSIGN_OR_RETURN(PsVariant variant, ParseSettings(item));
  if (without) {
    variant.without_straggler = true;
    absl::StrAppend(&variant.name, kWithoutStragglerSuffix);
  }
  return variant;
}

}  // namespace

absl::StatusOr<std::vector<PsVariant>> ParsePsVariants(absl::string_view text) {
  std::vector<PsVariant> variants;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    ASSIGN_OR_RETURN(PsVariant variant, ParseOne(item));
    const bool repeated =
        std::any_of(variants.begin(), variants.end(),
                    [&variant](const PsVariant& other) { return other.name == variant.name; });
    if (repeated) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ps_variants: ", variant.name, " is listed twice"));
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

absl::StatusOr<TrainingOptions> WithPsVariant(const TrainingOptions& job,
                                              const PsVariant& variant) {
  TrainingOptions options = job;
  options.staleness = variant.staleness;
  options.backup_workers = variant.backup_workers;
  if (variant.without_straggler) options.straggler = Straggler();
  RETURN_IF_ERROR(
      Annotate(CheckSyncSettings(options), absl::StrCat("--ps_variants=", variant.name)));
  return options;
}

}  // namespace ringside::cli
