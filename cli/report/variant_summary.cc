#include "cli/report/variant_summary.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/ps_variants.h"
#include "cli/report/comparison_summary.h"
#include "cli/report/format_units.h"
#include "cli/report/job_runs.h"

namespace ringside::cli {
namespace {

std::string ToTargetCell(const ModeReport& run) {
  if (!run.completed) return "failed";
  if (run.accuracy_over_time.empty()) return "not measured";
  if (!run.seconds_to_target.has_value()) return "not reached";
  return absl::StrCat(HumanSeconds(*run.seconds_to_target), " (step ",
                      WithThousands(run.steps_to_target.value_or(0)), ")");
}

// "1.20 MiB (step 120)": what one worker had sent when the target was first reached.
std::string BytesToTargetCell(const ModeReport& run) {
  if (!run.completed) return "failed";
  if (run.accuracy_over_time.empty()) return "not measured";
  if (!run.seconds_to_target.has_value()) return "not reached";
  if (!run.bytes_to_target.has_value()) return "not recorded";
  return HumanBytes(static_cast<double>(*run.bytes_to_target));
}

std::string OrDash(bool measured, const std::string& text) { return measured ? text : "\u2014"; }

// "2.41× sooner than the ring (29.6 s)", or why there is no ratio.
std::string Against(const std::optional<double>& ratio, const ModeReport* other,
                    const std::string& name) {
  if (other == nullptr) return absl::StrCat(name, " was not run");
  if (!other->completed) return absl::StrCat(name, " failed");
  if (!ratio.has_value()) return absl::StrCat(name, " did not reach it");
  // A ratio below 1 reads as how much later, not as "0.66× sooner".
  return absl::StrFormat("%.2f\u00d7 %s than %s (%s)", *ratio >= 1 ? *ratio : 1 / *ratio,
                         *ratio >= 1 ? "sooner" : "later", name,
                         HumanSeconds(*other->seconds_to_target));
}

}  // namespace

std::vector<std::vector<std::string>> VariantTable(const JobComparison& job) {
  const std::string target = TargetText(job.config);
  std::vector<std::vector<std::string>> table = {
      {"run", absl::StrCat("time to ", target), absl::StrCat("bytes to ", target),
       "final test accuracy", "samples/s (worker-0)", "step p50"}};
  for (const ModeReport* run : JobRuns(job)) {
    const bool ran = run->completed;
    table.push_back(
        {RunName(*run), ToTargetCell(*run), BytesToTargetCell(*run),
         OrDash(ran && run->test_accuracy.has_value(), Percent(run->test_accuracy.value_or(0))),
         OrDash(ran, ShortNumber(run->samples_per_second)),
         OrDash(ran, HumanSeconds(run->step_p50))});
  }
  return table;
}

std::string VariantTableTitle(const JobComparison& job) {
  if (job.compression_variants.empty()) return "The ring and every PS variant (--ps_variants)";
  if (job.ps_variants.empty()) {
    return "Every run, plain and compressed (--compression_variants)";
  }
  return "Every run (--ps_variants, --compression_variants)";
}

VariantVerdict DecideBestVariant(const JobComparison& job) {
  VariantVerdict verdict;
  const ModeReport* best = nullptr;
  const ModeReport* sync = nullptr;
  const ModeReport* sync_without_straggler = nullptr;  // the reference a slow worker costs against
  for (const ModeReport& run : job.ps_variants) {
    if (run.variant == "sync") sync = &run;
    if (run.variant == "sync/no_straggler") sync_without_straggler = &run;
    // A run without the straggler is a reference, not a contender.
    if (absl::EndsWith(run.variant, kWithoutStragglerSuffix) || !run.completed ||
        !run.seconds_to_target.has_value()) {
      continue;
    }
    if (best == nullptr || *run.seconds_to_target < *best->seconds_to_target) best = &run;
  }
  const std::string target = TargetText(job.config);
  if (best == nullptr) {
    verdict.line = absl::StrCat("No PS variant reached ", target, " test accuracy.");
    return verdict;
  }
  verdict.best = RunName(*best);
  verdict.seconds_to_target = best->seconds_to_target;
  const auto ratio = [&best](const ModeReport* other) -> std::optional<double> {
    if (other == nullptr || !other->completed || !other->seconds_to_target.has_value()) {
      return std::nullopt;
    }
    return *other->seconds_to_target / *best->seconds_to_target;
  };
  verdict.over_ring = ratio(&job.ring);
  if (sync != best) verdict.over_sync = ratio(sync);
  verdict.line = absl::StrCat("First PS variant to ", target, ": ", verdict.best, ", in ",
                              HumanSeconds(*verdict.seconds_to_target), ": ",
                              Against(verdict.over_ring, &job.ring, "the ring"));
  if (sync != best) {
    absl::StrAppend(&verdict.line, "; ", Against(verdict.over_sync, sync, "the synchronous PS"));
  }
  if (const std::optional<double> reference = ratio(sync_without_straggler); reference) {
    verdict.best_over_sync_without_straggler = 1 / *reference;
    absl::StrAppend(
        &verdict.line, "; ",
        absl::StrFormat("%.2f\u00d7 the synchronous PS's time without the straggler "
                        "(%s)",
                        1 / *reference, HumanSeconds(*sync_without_straggler->seconds_to_target)));
  }
  verdict.line += ".";
  return verdict;
}

}  // namespace ringside::cli
