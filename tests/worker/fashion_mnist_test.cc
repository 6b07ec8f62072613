// Fashion-MNIST's IDX files: small ones the test writes (gzipped through zlib, or not), read back
// exactly; broken ones (wrong magic, truncated, cut-short gzip, trailing bytes, a header that
// would allocate gigabytes, a missing file, a label out of range) refused naming the file; the
// `--data=fashion-mnist[:DIR]` spec; and the training set split across workers exactly as any
// data set is.
#include "worker/fashion_mnist.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"
#include "tests/support/idx_files.h"
#include "worker/batching.h"
#include "worker/data_parallel.h"
#include "worker/dataset.h"
#include "worker/device.h"
#include "worker/idx_file.h"

namespace ringside::worker {
namespace {

using ringside::testing::IdxImagesBytes;
using ringside::testing::IdxLabelsBytes;
using ringside::testing::WriteGzipFile;
using ringside::testing::WritePlainFile;
using ringside::testing::WriteTinyFashionMnist;
using ::testing::HasSubstr;

constexpr uint64_t kLimit = 1 << 20;

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = launch::TempDir::Create("ringside-idx-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }
  std::optional<launch::TempDir> dir_;
};

TEST_F(IdxFileTest, ReadsGzippedAndPlainFilesExactly) {
  const std::vector<uint8_t> pixels = {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255};
  ASSERT_TRUE(WriteGzipFile(Path("images.gz"), IdxImagesBytes(2, 2, 3, pixels)));
  ASSERT_TRUE(WritePlainFile(Path("labels"), IdxLabelsBytes({7, 9})));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("images.gz"), kLimit);
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->count, 2);
  EXPECT_EQ(images->rows, 2);
  EXPECT_EQ(images->columns, 3);
  EXPECT_EQ(images->pixels, pixels);
  absl::StatusOr<std::vector<uint8_t>> labels = ReadIdxLabels(Path("labels"), kLimit);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(*labels, (std::vector<uint8_t>{7, 9}));
}

TEST_F(IdxFileTest, WrongMagicNamesTheFileAndBothNumbers) {
  ASSERT_TRUE(WriteGzipFile(Path("labels.gz"), IdxLabelsBytes({1, 2})));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("labels.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(images.status().message(), HasSubstr(Path("labels.gz")));
  EXPECT_THAT(images.status().message(), HasSubstr("0x00000801"));
  EXPECT_THAT(images.status().message(), HasSubstr("0x00000803"));
}

TEST_F(IdxFileTest, FewerPixelsThanTheHeaderSaysIsTruncated) {
  ASSERT_TRUE(WriteGzipFile(Path("short.gz"), IdxImagesBytes(3, 2, 2, std::vector<uint8_t>(10))));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("short.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(images.status().message(), HasSubstr(Path("short.gz")));
  EXPECT_THAT(images.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(images.status().message(), HasSubstr("ends after 10"));
}

TEST_F(IdxFileTest, AHeaderCutShortIsTruncated) {
  ASSERT_TRUE(WriteGzipFile(Path("header.gz"), IdxImagesBytes(3, 2, 2, {}).substr(0, 9)));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("header.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(images.status().message(), HasSubstr("header"));
}

TEST_F(IdxFileTest, MorePixelsThanTheHeaderSaysIsTheWrongSize) {
  ASSERT_TRUE(WriteGzipFile(Path("long.gz"), IdxImagesBytes(1, 2, 2, std::vector<uint8_t>(5))));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("long.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(images.status().message(), HasSubstr("wrong size"));
  EXPECT_THAT(images.status().message(), HasSubstr(Path("long.gz")));
}

TEST_F(IdxFileTest, AGzipStreamCutShortIsAnErrorNotACrash) {
  std::vector<uint8_t> pixels(4000);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
  ASSERT_TRUE(WriteGzipFile(Path("whole.gz"), IdxImagesBytes(10, 20, 20, pixels)));
  absl::StatusOr<std::string> whole = ReadFileToString(Path("whole.gz"));
  ASSERT_TRUE(whole.ok());
  // Cut inside the compressed data, and just before the trailer's checksum and length.
  for (size_t keep : {whole->size() / 2, whole->size() - 6}) {
    SCOPED_TRACE(keep);
    ASSERT_TRUE(WritePlainFile(Path("cut.gz"), whole->substr(0, keep)));
    absl::StatusOr<IdxImages> images = ReadIdxImages(Path("cut.gz"), kLimit);
    ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument) << images.status();
    EXPECT_THAT(images.status().message(), HasSubstr(Path("cut.gz")));
  }
}

TEST_F(IdxFileTest, CorruptCompressedDataIsAnError) {
  std::vector<uint8_t> pixels(4000, 9);
  ASSERT_TRUE(WriteGzipFile(Path("whole.gz"), IdxImagesBytes(10, 20, 20, pixels)));
  std::string bytes = ReadFileToString(Path("whole.gz")).value();
  for (size_t i = 12; i < bytes.size() - 8; i += 3) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  ASSERT_TRUE(WritePlainFile(Path("bad.gz"), bytes));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("bad.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument) << images.status();
  EXPECT_THAT(images.status().message(), HasSubstr(Path("bad.gz")));
}

TEST_F(IdxFileTest, AHugeHeaderIsRefusedBeforeAnythingIsAllocated) {
  // 4 billion images of 65536 x 65536 pixels: refused from the header alone.
  ASSERT_TRUE(WriteGzipFile(Path("huge.gz"), IdxImagesBytes(0xffffffff, 65536, 65536, {})));
  absl::StatusOr<IdxImages> images = ReadIdxImages(Path("huge.gz"), kLimit);
  ASSERT_EQ(images.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(images.status().message(), HasSubstr("refused"));
  ASSERT_TRUE(WriteGzipFile(Path("zero.gz"), IdxImagesBytes(2, 0, 3, {})));
  EXPECT_THAT(ReadIdxImages(Path("zero.gz"), kLimit).status().message(), HasSubstr("is 0"));
}

TEST_F(IdxFileTest, AMissingFileIsNotFoundNamingIt) {
  absl::StatusOr<std::vector<uint8_t>> labels = ReadIdxLabels(Path("absent.gz"), kLimit);
  ASSERT_EQ(labels.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(labels.status().message(), HasSubstr(Path("absent.gz")));
}

// The file is read a block (1 MiB) at a time; the images asked for are kept, exactly, from
// any block, and the rest is still read and checked.
TEST_F(IdxFileTest, ReadsOnlyTheImagesAskedForFromEveryBlock) {
  constexpr int kImages = 3000;  // 400 B each: three blocks
  std::vector<uint8_t> pixels(kImages * 400);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 31 + i / 400);
  ASSERT_TRUE(WriteGzipFile(Path("images.gz"), IdxImagesBytes(kImages, 20, 20, pixels)));
  const std::vector<int64_t> keep = {0, 5, 2620, 2621, 2622, 2999};
  absl::StatusOr<IdxImages> some = ReadIdxImageRows(Path("images.gz"), 1 << 22, keep);
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(some->count, kImages);
  ASSERT_EQ(some->pixels.size(), keep.size() * 400);
  for (size_t k = 0; k < keep.size(); ++k) {
    SCOPED_TRACE(keep[k]);
    EXPECT_TRUE(std::equal(some->pixels.begin() + k * 400, some->pixels.begin() + (k + 1) * 400,
                           pixels.begin() + keep[k] * 400));
  }
  absl::StatusOr<IdxImages> none = ReadIdxImageRows(Path("images.gz"), 1 << 22, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->pixels.empty());

  for (const std::vector<int64_t>& bad :
       std::vector<std::vector<int64_t>>{{5, 5}, {7, 3}, {kImages}, {-1}}) {
    absl::StatusOr<IdxImages> refused = ReadIdxImageRows(Path("images.gz"), 1 << 22, bad);
    ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad[0];
    EXPECT_THAT(refused.status().message(), HasSubstr(Path("images.gz")));
  }
  // A file cut short in its last block is refused though no image of that block is asked for.
  pixels.resize(pixels.size() - 100);
  ASSERT_TRUE(WriteGzipFile(Path("short.gz"), IdxImagesBytes(kImages, 20, 20, pixels)));
  absl::StatusOr<IdxImages> cut = ReadIdxImageRows(Path("short.gz"), 1 << 22, {0});
  ASSERT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cut.status().message(), HasSubstr("truncated"));
}

// The reader gives the file's images piece by piece, exactly, and checks the whole file.
TEST_F(IdxFileTest, TheReaderGivesTheImagesPieceByPiece) {
  std::vector<uint8_t> pixels(7 * 6);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 5);
  ASSERT_TRUE(WriteGzipFile(Path("images.gz"), IdxImagesBytes(7, 2, 3, pixels)));
  absl::StatusOr<IdxImageReader> reader = IdxImageReader::Open(Path("images.gz"), kLimit);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->header().count, 7);
  EXPECT_EQ(reader->header().pixels_per_image(), 6);
  std::vector<uint8_t> got(7 * 6);
  ASSERT_TRUE(reader->Next(3, got.data()).ok());
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kFailedPrecondition);  // 4 unread
  EXPECT_EQ(reader->Next(5, got.data() + 18).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(reader->Next(4, got.data() + 18).ok());
  EXPECT_EQ(got, pixels);
  EXPECT_TRUE(reader->Finish().ok());

  ASSERT_TRUE(WriteGzipFile(Path("long.gz"), IdxImagesBytes(1, 2, 3, std::vector<uint8_t>(7))));
  reader = IdxImageReader::Open(Path("long.gz"), kLimit);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_TRUE(reader->Next(1, got.data()).ok());
  EXPECT_THAT(reader->Finish().message(), HasSubstr("wrong size"));
  ASSERT_TRUE(WriteGzipFile(Path("short.gz"), IdxImagesBytes(2, 2, 3, std::vector<uint8_t>(8))));
  reader = IdxImageReader::Open(Path("short.gz"), kLimit);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_THAT(reader->Next(2, got.data()).message(), HasSubstr("truncated"));
}

// A training set loaded for some rows holds those rows' pixels alone (and every label), and
// gives them as the same floats as the whole set does.
TEST_F(IdxFileTest, TrainingRowsHoldOnlyTheRowsAskedFor) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 50, 10));
  const std::vector<int64_t> rows = {3, 17, 42};
  absl::StatusOr<Dataset> some = LoadFashionMnistTrainingRows(dir_->path(), rows);
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(some->rows(), 50);
  EXPECT_EQ(some->stored_row_count(), 3);
  EXPECT_EQ(some->pixels.size(), 3u * 20);
  EXPECT_EQ(some->DataBytes(), 3u * 20 + 50 * sizeof(int32_t) + 3 * sizeof(int64_t));
  EXPECT_TRUE(some->Holds({42, 3}));
  EXPECT_FALSE(some->Holds({3, 4}));
  EXPECT_FALSE(some->HoldsEveryRow());
  const DataSplits whole = *LoadFashionMnist(dir_->path());
  OwnedBatch from_some, from_whole;
  GatherRows(*some, std::vector<int64_t>{42, 3, 17, 3}, from_some);
  GatherRows(whole.train, std::vector<int64_t>{42, 3, 17, 3}, from_whole);
  EXPECT_EQ(from_some.features, from_whole.features);
  EXPECT_EQ(from_some.labels, from_whole.labels);
  EXPECT_EQ(some->y, whole.train.y);

  absl::StatusOr<Dataset> none = LoadFashionMnistTrainingRows(dir_->path(), {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->stored_row_count(), 0);
  EXPECT_EQ(none->DataBytes(), 50 * sizeof(int32_t));
  EXPECT_EQ(LoadFashionMnistTrainingRows(dir_->path(), std::vector<int64_t>{50}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(IdxFileTest, LoadsBothSplitsWithPixelsInZeroToOne) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 30, 20));
  absl::StatusOr<DataSplits> splits = LoadFashionMnist(dir_->path());
  ASSERT_TRUE(splits.ok()) << splits.status();
  EXPECT_EQ(splits->train.rows(), 30);
  EXPECT_EQ(splits->test.rows(), 20);
  EXPECT_TRUE(splits->has_test());
  EXPECT_EQ(splits->train.features, 20);
  EXPECT_EQ(splits->train.classes, 10);
  EXPECT_EQ(splits->train.class_names[9], "Ankle boot");
  for (int64_t i = 0; i < splits->train.rows(); ++i) EXPECT_EQ(splits->train.y[i], i % 10);
  // Pixels are kept as bytes, a quarter of floats, every row of both splits.
  EXPECT_TRUE(splits->train.x.empty());
  EXPECT_EQ(splits->train.pixels.size(), 30u * 20);
  EXPECT_EQ(splits->test.pixels.size(), 20u * 20);
  EXPECT_EQ(splits->train.DataBytes(), 30u * 20 + 30 * sizeof(int32_t));
  EXPECT_TRUE(splits->train.HoldsEveryRow());
  std::vector<int64_t> every(30);
  std::iota(every.begin(), every.end(), 0);
  OwnedBatch batch;
  GatherRows(splits->train, every, batch);
  float low = 1, high = 0;
  for (float v : batch.features) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  EXPECT_GE(low, 0.0f);
  EXPECT_LE(high, 1.0f);
  EXPECT_GT(high, 0.7f) << "lit pixels are 180-240 of 255";
}

TEST_F(IdxFileTest, ExactPixelScale) {
  ASSERT_TRUE(
      WriteGzipFile(Path("train-images-idx3-ubyte.gz"), IdxImagesBytes(1, 1, 3, {0, 51, 255})));
  ASSERT_TRUE(WriteGzipFile(Path("train-labels-idx1-ubyte.gz"), IdxLabelsBytes({4})));
  ASSERT_TRUE(WritePlainFile(Path("t10k-images-idx3-ubyte"), IdxImagesBytes(1, 1, 3, {0, 0, 0})));
  ASSERT_TRUE(WritePlainFile(Path("t10k-labels-idx1-ubyte"), IdxLabelsBytes({0})));
  absl::StatusOr<DataSplits> splits = LoadFashionMnist(dir_->path());
  ASSERT_TRUE(splits.ok()) << splits.status();
  EXPECT_EQ(splits->train.pixels, (std::vector<uint8_t>{0, 51, 255}));
  OwnedBatch batch;
  GatherRows(splits->train, std::vector<int64_t>{0}, batch);
  EXPECT_EQ(batch.features, (std::vector<float>{0.0f, 0.2f, 1.0f}));
  EXPECT_EQ(splits->train.y, (std::vector<int32_t>{4}));
}

TEST_F(IdxFileTest, LabelsThatDoNotMatchTheImagesAreRefused) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 10, 10));
  ASSERT_TRUE(WriteGzipFile(Path("t10k-labels-idx1-ubyte.gz"), IdxLabelsBytes({1, 2, 3})));
  absl::StatusOr<DataSplits> splits = LoadFashionMnist(dir_->path());
  ASSERT_EQ(splits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(splits.status().message(), HasSubstr("t10k-labels-idx1-ubyte.gz holds 3 labels"));

  ASSERT_TRUE(WriteGzipFile(Path("t10k-labels-idx1-ubyte.gz"),
                            IdxLabelsBytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 10})));
  splits = LoadFashionMnist(dir_->path());
  ASSERT_EQ(splits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(splits.status().message(), HasSubstr("label 10 of image 9"));
}

TEST_F(IdxFileTest, TestImagesOfAnotherSizeAreRefused) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 10, 10));
  ASSERT_TRUE(WriteGzipFile(Path("t10k-images-idx3-ubyte.gz"),
                            IdxImagesBytes(10, 2, 2, std::vector<uint8_t>(40))));
  absl::StatusOr<DataSplits> splits = LoadFashionMnist(dir_->path());
  ASSERT_EQ(splits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(splits.status().message(), HasSubstr("test images have 4 pixels"));
}

TEST_F(IdxFileTest, ADirectoryWithoutTheFourFilesSaysWhichAreMissing) {
  ASSERT_TRUE(WriteGzipFile(Path("train-images-idx3-ubyte.gz"), IdxImagesBytes(1, 1, 1, {0})));
  const absl::Status status = CheckFashionMnistFiles(dir_->path());
  ASSERT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(dir_->path()));
  EXPECT_THAT(status.message(), HasSubstr("train-labels-idx1-ubyte.gz"));
  EXPECT_THAT(status.message(), HasSubstr("t10k-images-idx3-ubyte.gz"));
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("lacks train-images")));
  EXPECT_EQ(CheckDataSpec("fashion-mnist:" + dir_->path()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadFashionMnist(dir_->path()).status().code(), absl::StatusCode::kNotFound);
}

TEST(FashionMnistSpecTest, ParsesTheDefaultAndADirectory) {
  absl::StatusOr<DataSpec> spec = ParseDataSpec("fashion-mnist");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, DataSpec::Kind::kFashionMnist);
  EXPECT_EQ(spec->directory, kFashionMnistDefaultDir);
  EXPECT_EQ(spec->ToString(), "fashion-mnist");
  spec = ParseDataSpec("fashion-mnist:/data/fm");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->directory, "/data/fm");
  EXPECT_EQ(spec->ToString(), "fashion-mnist:/data/fm");
  EXPECT_EQ(ParseDataSpec("fashion-mnist:").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDataSpec("fashion-mnistx").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseDataSpec("mnist").status().message(), HasSubstr("fashion-mnist:DIR"));
}

TEST_F(IdxFileTest, AModelThatDoesNotFitIsRefused) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 10, 10));
  const DataSpec spec = *ParseDataSpec("fashion-mnist:" + dir_->path());
  absl::StatusOr<DataSplits> splits =
      LoadDataSplits(spec, *ModelSpec::Parse("784,16,10", "tanh"), 1);
  ASSERT_EQ(splits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(splits.status().message(), HasSubstr("use a model like 20,16,10"));
  splits = LoadDataSplits(spec, *ModelSpec::Parse("20,16,10", "tanh"), 1);
  ASSERT_TRUE(splits.ok()) << splits.status();
  EXPECT_EQ(splits->train.name, "fashion-mnist:" + dir_->path());
  // The same answer from the header alone, before anything is loaded.
  const std::string text = "fashion-mnist:" + dir_->path();
  EXPECT_TRUE(CheckDataFitsModel(text, *ModelSpec::Parse("20,16,10", "tanh")).ok());
  EXPECT_THAT(CheckDataFitsModel(text, *ModelSpec::Parse("784,16,10", "tanh")).message(),
              HasSubstr("use a model like 20,16,10"));
  EXPECT_THAT(CheckDataFitsModel("iris", *ModelSpec::Parse("20,16,10", "tanh")).message(),
              HasSubstr("use a model like 4,16,3"));
  EXPECT_TRUE(CheckDataFitsModel("synthetic:10", *ModelSpec::Parse("20,16,10", "tanh")).ok());
}

// As with any data set, N workers' slices of a step's global batch cover it exactly, and their
// summed gradients (normalised by the global batch) are one worker's gradient of the whole batch.
TEST_F(IdxFileTest, WorkersShareTheTrainingSetAsForAnyDataSet) {
  ASSERT_TRUE(WriteTinyFashionMnist(dir_->path(), 50, 10));
  const ModelSpec spec = *ModelSpec::Parse("20,8,10", "tanh");
  const DataSplits data = *LoadDataSplits(*ParseDataSpec("fashion-mnist:" + dir_->path()), spec, 1);
  const BatchSchedule schedule = *BatchSchedule::Create(data.train.rows(), 16, 1);
  auto computer = MakeGradientComputer("cpu", spec);
  ASSERT_TRUE(computer.ok()) << computer.status();
  const std::vector<float> params = InitialParameters(spec, 1);
  GradientOptions options;
  options.normalizer_rows = 16;
  for (int64_t step : {0, 3, 7}) {
    std::vector<float> whole(spec.parameter_count()), sum(whole.size(), 0.0f), part(whole.size());
    OwnedBatch batch;
    GatherRows(data.train, schedule.GlobalBatchRows(step), batch);
    ASSERT_TRUE((*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(whole)).ok());
    std::vector<int64_t> covered;
    for (int rank = 0; rank < 3; ++rank) {
      const std::vector<int64_t> rows = schedule.WorkerBatchRows(step, rank, 3);
      covered.insert(covered.end(), rows.begin(), rows.end());
      GatherRows(data.train, rows, batch);
      ASSERT_TRUE(
          (*computer)->ComputeGradient(params, batch.view(), absl::MakeSpan(part), options).ok());
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    EXPECT_EQ(covered, schedule.GlobalBatchRows(step));
    for (size_t i = 0; i < sum.size(); ++i) ASSERT_NEAR(sum[i], whole[i], 1e-5) << i;
  }
}

TEST(EvaluateInChunksTest, GivesTheFiguresOfOneCall) {
  const ModelSpec spec = *ModelSpec::Parse("6,12,4", "tanh");
  const Dataset data = MakeSyntheticDataset(1000, 6, 4, 5);
  const std::vector<float> params = InitialParameters(spec, 2);
  auto computer = MakeGradientComputer("cpu", spec);
  ASSERT_TRUE(computer.ok());
  const Evaluation whole = *(*computer)->Evaluate(params, data.AllRows(), {});
  for (int64_t chunk : {1, 7, 333, 1000, 5000}) {
    SCOPED_TRACE(chunk);
    absl::StatusOr<Evaluation> chunked =
        EvaluateInChunks(**computer, params, data.AllRows(), chunk);
    ASSERT_TRUE(chunked.ok()) << chunked.status();
    EXPECT_EQ(chunked->rows, whole.rows);
    EXPECT_EQ(chunked->correct, whole.correct);
    EXPECT_DOUBLE_EQ(chunked->accuracy, whole.accuracy);
    EXPECT_NEAR(chunked->mean_loss, whole.mean_loss, 1e-5);
  }
  const Batch ragged{absl::MakeConstSpan(data.x).subspan(0, 11), absl::MakeConstSpan(data.y)};
  EXPECT_EQ(EvaluateInChunks(**computer, params, ragged, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
