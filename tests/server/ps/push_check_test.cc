// PushCheck, the checks every push to a shard passes whatever its mode, in memory: each refusal
// with its code, the first failing check of a header deciding it, and a NaN or infinity refused
// counted and logged whether it comes as floats or as wire pieces (split between pieces too).
#include "server/ps/push_check.h"

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"

namespace ringside::server {
namespace {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Generation 7 of three workers on shard 2, a range of 4 elements.
PushCheck Check(NonFiniteReport report = {}) {
  return PushCheck(ShardIdentity{/*generation=*/7, /*workers=*/3, /*shard=*/2,
                                 /*range_elements=*/4},
                   std::move(report));
}

TEST(PushCheckTest, AcceptsAPushOfTheGenerationFromAWorkerForTheWholeRange) {
  const PushCheck check = Check();
  EXPECT_TRUE(check.Header(7, 0, 4).ok());
  EXPECT_TRUE(check.Header(7, 2, 4).ok());
  EXPECT_EQ(check.identity().shard, 2);
}

TEST(PushCheckTest, RefusesAnotherGenerationAsStaleBeforeAnythingElse) {
  const PushCheck check = Check();
  for (uint64_t generation : {6u, 8u}) {
    const absl::Status status = check.Header(generation, /*worker=*/9, /*range_elements=*/1);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), HasSubstr("is not ps-2's current 7"));
  }
}

TEST(PushCheckTest, RefusesARankOutsideTheGeneration) {
  const PushCheck check = Check();
  for (int worker : {-1, 3, std::numeric_limits<int>::max()}) {
    const absl::Status status = check.Header(7, worker, 4);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << worker;
    EXPECT_THAT(status.message(), HasSubstr("is not in generation 7 of 3 workers"));
    EXPECT_EQ(check.Worker(worker).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(PushCheckTest, RefusesARangeOfAnotherLength) {
  const PushCheck check = Check();
  for (uint64_t range : {0u, 3u, 5u}) {
    const absl::Status status = check.Header(7, 1, range);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << range;
    EXPECT_THAT(status.message(), HasSubstr("ps-2 owns 4"));
  }
}

TEST(PushCheckTest, RefusesANonFiniteValueCountedAndLoggedNamingTheWorkerAndStep) {
  prometheus::Counter refused;
  std::vector<std::string> lines;
  NonFiniteReport report;
  report.refused = &refused;
  report.log = [&lines](const std::string& line) { lines.push_back(line); };
  const PushCheck check = Check(report);

  EXPECT_TRUE(check.Finite(1, 5, std::vector<float>{1, 2, 3, 4}).ok());
  EXPECT_EQ(refused.Value(), 0);
  const absl::Status status = check.Finite(1, 5, std::vector<float>{1, kNaN, kInf, 4});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("worker-1's push of step 5 (generation 7) has 2 of 4"));
  EXPECT_EQ(refused.Value(), 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("ps-2: refused worker-1's push of step 5"));
}

TEST(PushCheckTest, FindsANonFiniteValueInWirePiecesWhateverTheDtype) {
  for (WireDtype dtype : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    const std::vector<float> values = {1, 2, kInf, 4, 5};
    std::string wire(values.size() * WireBytesPerElement(dtype), '\0');
    EncodeWire(dtype, values, wire.data());
    // Split inside the infinity's bytes: the pieces are read as one payload.
    const size_t cut = 2 * WireBytesPerElement(dtype) + 1;
    const std::vector<absl::string_view> pieces = {absl::string_view(wire).substr(0, cut),
                                                   absl::string_view(wire).substr(cut)};
    const absl::Status status = Check().Finite(0, 3, dtype, pieces, values.size());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << WireDtypeName(dtype);
    EXPECT_THAT(status.message(), HasSubstr("has 1 of 5"));
    const std::vector<absl::string_view> finite = {absl::string_view(wire).substr(0, cut - 1)};
    EXPECT_TRUE(Check().Finite(0, 3, dtype, finite, 2).ok()) << WireDtypeName(dtype);
  }
}

}  // namespace
}  // namespace ringside::server
