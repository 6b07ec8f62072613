// A member's profile of itself (worker/member_profile.h): a profile whose every figure is
// measured (positive) and one too large to allocate refused before anything is. No timing is
// asserted.
#include "worker/member_profile.h"

#include "common/usable_cores.h"
#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

proto::ProfileRequest Request(const std::string& model, int64_t rows) {
  proto::ProfileRequest request;
  request.set_model(model);
  request.set_activation("tanh");
  request.set_batch_rows(rows);
  request.set_repeats(1);
  return request;
}

TEST(ProfileThisProcessTest, MeasuresEveryFigure) {
  absl::StatusOr<proto::MemberProfile> profile = ProfileThisProcess(Request("4,16,3", 8), "cpu");
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->device(), "cpu");
  EXPECT_GT(profile->compute_seconds_per_sample(), 0);
  EXPECT_GT(profile->sync_cpu_seconds_per_byte(), 0);
  EXPECT_GT(profile->shard_bytes_per_second(), 0);
  EXPECT_EQ(profile->usable_cores(), ringside::UsableCores());
}

TEST(ProfileThisProcessTest, RefusesWhatCannotBeMeasured) {
  // 2^13 × 2^13 weights and the biases: over 2^26 parameters (a model ModelSpec allows).
  absl::StatusOr<proto::MemberProfile> huge = ProfileThisProcess(Request("8192,8192,3", 1), "cpu");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument) << huge.status();
  EXPECT_NE(huge.status().message().find("profile of"), absl::string_view::npos) << huge.status();
  // Few parameters, but 4096 rows of layers 32769 wide in all: over 2^26 activations.
  absl::StatusOr<proto::MemberProfile> wide =
      ProfileThisProcess(Request("16384,1,16384", 4096), "cpu");
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument) << wide.status();
  absl::StatusOr<proto::MemberProfile> bad = ProfileThisProcess(Request("4,x", 8), "cpu");
  EXPECT_FALSE(bad.ok());
  absl::StatusOr<proto::MemberProfile> no_device = ProfileThisProcess(Request("4,16,3", 8), "tpu");
  EXPECT_FALSE(no_device.ok());
}

}  // namespace
}  // namespace ringside::worker
