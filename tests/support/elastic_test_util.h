// What the elastic multi-process tests share: a mode switch through the controller, a worker's
// parameters file, the comparison with the one-process reference, and waiting on a cluster.
#ifndef RINGSIDE_TESTS_SUPPORT_ELASTIC_TEST_UTIL_H_
#define RINGSIDE_TESTS_SUPPORT_ELASTIC_TEST_UTIL_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/metrics.h"
#include "launch/local_cluster.h"
#include "tests/support/parameters.h"

namespace ringside::testing {

// A local cluster of `workers` and `shards` in `dir` starting in `mode`, with the short heartbeat
// timeout and collective deadline the process tests share (losses are noticed within seconds).
launch::LocalClusterOptions ClusterOptions(const std::string& dir, int workers, int shards,
                                           SyncMode mode, TrainingOptions training);

// Controller.SetMode, as the cluster's operator (its operator token, and its client certificate
// under TLS); a failure is a test failure.
void SetMode(launch::LocalCluster& cluster, SyncMode mode);

// A metric sample of a process of the cluster; -1 while it does not answer (a server being
// restarted, say) or lacks the sample: never a test failure by itself.
double MetricOf(const launch::ClusterProcess& process, const std::string& name,
                const std::map<std::string, std::string>& labels = {});

// A worker's --params_out file (raw float32); empty if it is missing.
std::vector<float> ReadParams(const std::string& path);

// The last lines of every process's log, for failure messages.
std::string ClusterLogs(launch::LocalCluster& cluster);

// Waits until `condition` holds. A child that dies meanwhile fails the test at once (with
// `workers_may_die`, a dead worker is counted as lost instead); so does the limit, with the logs.
bool Eventually(launch::LocalCluster& cluster, const std::function<bool()>& condition,
                absl::Duration limit = absl::Seconds(60), bool workers_may_die = false);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_ELASTIC_TEST_UTIL_H_
