// `ringside compare --repeats=R`: R runs of each mode summarised as one report per mode, so every
// rendering (table, JSON, HTML) shows medians while the runs themselves stay in
// ModeReport::repeats for the spread, the verdict's interval and the JSON.
// Pure; thread-safe.
#ifndef RINGSIDE_CLI_REPORT_REPEATS_H_
#define RINGSIDE_CLI_REPORT_REPEATS_H_

#include <string>
#include <vector>

#include "cli/report/compare_report.h"
#include "cli/report/spread.h"

namespace ringside::cli {

// One mode's runs, in run order, as one report: with a single run, that run; otherwise the run
// with the median step time p50 (its links, curves and processes), every scalar figure replaced
// by its median over the runs, `repeats` holding the runs and `events` each run's, prefixed
// "repeat i: ". The time, steps and bytes to target are the medians where every run reached the
// target (an event says so where only some did). A failed run makes the summary failed: that
// run's report, with the runs in `repeats`.
ModeReport SummariseRepeats(std::vector<ModeReport> runs);

// A job's rounds (round r: one run of each mode, alternated ring, ps, ...) as one comparison:
// the first round's configuration with `repeats` set, each mode (and each --ps_variants and
// --compression_variants run, and the colocated run) summarised, and the parity's largest
// difference over the rounds that checked it. Rounds cut short by a failure are merged as far as
// they ran. Needs one round.
JobComparison MergeRounds(std::vector<JobComparison> rounds);

// A mode's runs: `repeats`, or the report itself when it ran once.
std::vector<const ModeReport*> RunsOf(const ModeReport& mode);

// One figure over a mode's runs (min, median, max).
Spread FigureSpread(const ModeReport& mode, double (*figure)(const ModeReport&));

// "(77.1 ms–79.9 ms)": a figure's smallest and largest over the runs, written by `text`.
std::string RangeText(const ModeReport& mode, double (*figure)(const ModeReport&),
                      std::string (*text)(double));

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_REPORT_REPEATS_H_
