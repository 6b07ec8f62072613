// The cores this process may use (common/usable_cores.h): the cgroup v2 CPU quota read from
// `cpu.max`, and the usable cores bounded by the affinity mask.
#include "common/usable_cores.h"

#include <sched.h>

#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(CoresFromCpuMaxTest, ReadsAQuotaAndNoQuota) {
  EXPECT_EQ(CoresFromCpuMax("200000 100000\n"), 2.0);
  EXPECT_EQ(CoresFromCpuMax("50000 100000"), 0.5);
  EXPECT_EQ(CoresFromCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax(""), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("200000"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("0 100000"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("100000 0"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("-5 100000"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("a b"), std::nullopt);
  EXPECT_EQ(CoresFromCpuMax("1 2 3"), std::nullopt);
}

TEST(UsableCoresTest, AtMostTheAffinityMask) {
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  const double cores = UsableCores();
  EXPECT_GT(cores, 0);
  EXPECT_LE(cores, CPU_COUNT(&cpus));
}

}  // namespace
}  // namespace ringside
