// The streamed forward pass against the CPU computer's: the same figures bit for bit when a block
// holds a whole layer, the same to float rounding in blocks of a single row; a file of another
// size, a batch that does not fit and a file cut short under the pass are errors, never a crash.
#include "worker/streamed_forward_pass.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "worker/batching.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

class StreamedForwardPassTest : public ::testing::Test {
 protected:
  StreamedForwardPassTest()
      : spec_(*ModelSpec::Parse("6,40,24,4", "relu")),
        data_(MakeSyntheticDataset(100, 6, 4, 7)),
        params_(InitialParameters(spec_, 3)),
        dir_(*launch::TempDir::Create("ringside-streamed-")) {}

  // The parameters as a file.
  ScratchFile Write(const std::vector<float>& values, const std::string& name = "params") {
    absl::StatusOr<ScratchFile> file =
        ScratchFile::Create(dir_.File(name), values.size() * sizeof(float));
    EXPECT_TRUE(file.ok()) << file.status();
    EXPECT_TRUE(file->Write(0, absl::string_view(reinterpret_cast<const char*>(values.data()),
                                                 values.size() * sizeof(float)))
                    .ok());
    return *std::move(file);
  }
  Evaluation Direct() {
    auto computer = MakeGradientComputer("cpu", spec_);
    return *(*computer)->Evaluate(params_, data_.AllRows(), {});
  }

  const ModelSpec spec_;
  const Dataset data_;
  const std::vector<float> params_;
  launch::TempDir dir_;
};

TEST_F(StreamedForwardPassTest, AWholeLayerBlockGivesTheComputersFiguresBitForBit) {
  const ScratchFile file = Write(params_);
  StreamedForwardPass pass(spec_);
  absl::StatusOr<Evaluation> streamed = pass.Evaluate(file, data_.AllRows());
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  const Evaluation direct = Direct();
  EXPECT_EQ(streamed->mean_loss, direct.mean_loss);
  EXPECT_EQ(streamed->correct, direct.correct);
  EXPECT_EQ(streamed->rows, 100);
}

TEST_F(StreamedForwardPassTest, BlocksOfOneRowGiveTheSameFiguresToRounding) {
  const ScratchFile file = Write(params_);
  StreamedForwardPass pass(spec_, StreamedForwardPass::Options{1});
  absl::StatusOr<Evaluation> streamed = pass.Evaluate(file, data_.AllRows());
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  const Evaluation direct = Direct();
  EXPECT_NEAR(streamed->mean_loss, direct.mean_loss, 1e-5 * direct.mean_loss);
  EXPECT_EQ(streamed->correct, direct.correct);
  // And over a data set in pieces, as the test evaluator runs it.
  absl::StatusOr<Evaluation> pieces = EvaluateDatasetWith(
      [&](const Batch& piece) { return pass.Evaluate(file, piece); }, data_, 32);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  EXPECT_NEAR(pieces->mean_loss, direct.mean_loss, 1e-5 * direct.mean_loss);
  EXPECT_EQ(pieces->correct, direct.correct);
}

TEST_F(StreamedForwardPassTest, AFileOrABatchThatDoesNotFitIsAnError) {
  StreamedForwardPass pass(spec_);
  std::vector<float> longer = params_;
  longer.push_back(0);
  EXPECT_EQ(pass.Evaluate(Write(longer, "longer"), data_.AllRows()).status().code(),
            absl::StatusCode::kInvalidArgument);
  const ScratchFile file = Write(params_);
  const std::vector<float> features(5, 0.0f);
  const std::vector<int32_t> labels = {1};
  EXPECT_EQ(pass.Evaluate(file, Batch{features, labels}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> bad_label = {9};
  const std::vector<float> row(6, 0.0f);
  EXPECT_EQ(pass.Evaluate(file, Batch{row, bad_label}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(truncate(file.path().c_str(), 16), 0);
  const absl::Status cut = pass.Evaluate(file, data_.AllRows()).status();
  EXPECT_EQ(cut.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(cut.message()), ::testing::HasSubstr("ended early"));
}

}  // namespace
}  // namespace ringside::worker
