// Test support: a hand-built CompareReport that looks like a real `ringside compare` run, with
// its byte figures taken from the cost model so every table, JSON and chart test can assert
// exact numbers.
//   job 0: 784,1024,1024,10 (K = 1,863,690) on synthetic:4096, N = 4, S = 2; ring wins 1.67x.
//   job 1: Iris 4,16,3 (K = 131), N = 4, S = 2; worker-3 is lost in ring mode; ps wins.
// and, apart (not in SampleReport): the heavy model on Fashion-MNIST with test evaluations every
// 25 steps; ring reaches the 75% target at 12 s (step 150), ps at 20 s (step 150).
#ifndef RINGSIDE_TESTS_CLI_SAMPLE_REPORT_H_
#define RINGSIDE_TESTS_CLI_SAMPLE_REPORT_H_

#include <vector>

#include "cli/report/compare_report.h"

namespace ringside::cli::testing {

JobComparison SyntheticJob();
JobComparison IrisJobWithLostWorker();
CompareReport SampleReport();  // both jobs, in that order
JobComparison FashionMnistJob();

// `count` steady step times whose median is `median`, spread evenly over ±`spread`/2 of it in a
// fixed shuffled order: what a step trace gives the verdict's interval.
std::vector<double> StepTimes(double median, double spread, int count);

}  // namespace ringside::cli::testing

#endif  // RINGSIDE_TESTS_CLI_SAMPLE_REPORT_H_
