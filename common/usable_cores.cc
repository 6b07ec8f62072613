#include "common/usable_cores.h"

#include <sched.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"

namespace ringside {
namespace {

// This process's cgroup v2 path ("/kubepods/pod1/c2"): the "0::" line of /proc/self/cgroup;
// nullopt where there is none (cgroup v1, or no /proc).
std::optional<std::string> OwnCgroup() {
  absl::StatusOr<std::string> text = ReadFileToString("/proc/self/cgroup");
  if (!text.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "0::")) return std::string(line);
  }
  return std::nullopt;
}

// The smallest quota on the way from this process's cgroup to the root: a limit on a pod holds
// for each of its containers. Unreadable files are no quota (none is then known to apply).
std::optional<double> CgroupQuotaCores() {
  std::optional<std::string> cgroup = OwnCgroup();
  if (!cgroup.has_value()) return std::nullopt;
  std::optional<double> smallest;
  std::string path = *cgroup;
  while (true) {
    absl::StatusOr<std::string> text =
        ReadFileToString(absl::StrCat("/sys/fs/cgroup", path, path == "/" ? "" : "/", "cpu.max"));
    const std::optional<double> cores = text.ok() ? CoresFromCpuMax(*text) : std::nullopt;
    if (cores.has_value()) smallest = std::min(smallest.value_or(*cores), *cores);
    if (path.empty() || path == "/") return smallest;
    const size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
}

}  // namespace

std::optional<double> CoresFromCpuMax(absl::string_view text) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  double quota = 0, period = 0;
  if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &quota) ||
      !absl::SimpleAtod(fields[1], &period) || !(quota > 0) || !(period > 0)) {
    return std::nullopt;  // "max 100000" (no quota) is one of these
  }
  return quota / period;
}

double UsableCores() {
  cpu_set_t cpus;
  const double affinity = sched_getaffinity(0, sizeof(cpus), &cpus) == 0
                              ? CPU_COUNT(&cpus)
                              : std::max(1u, std::thread::hardware_concurrency());
  const std::optional<double> quota = CgroupQuotaCores();
  return quota.has_value() ? std::min(affinity, *quota) : affinity;
}

}  // namespace ringside
