// The training options' one description (common/training_options.h): it covers every field of
// TrainingOptions (a value with every field changed survives a copy made row by row), each row
// checks its range and type, and TrainingOptionsArgv writes one --name=value per row, in text
// that reads back to the same value.
#include "common/training_options.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/training_options_sample.h"

namespace ringside {
namespace {

using testing::ExpectSameTrainingOptions;
using testing::NonDefaultTrainingOptions;

TEST(TrainingOptionsTest, TheSampleChangesEveryField) {
  const TrainingOptions defaults;
  const auto& [model, activation, data, steps, eval_every, batch_size, optimizer, seed, staleness,
               backup_workers, straggler, wire_dtype, bucket_bytes, compression, compression_warmup,
               device] = NonDefaultTrainingOptions();
  EXPECT_NE(model, defaults.model);
  EXPECT_NE(activation, defaults.activation);
  EXPECT_NE(data, defaults.data);
  EXPECT_NE(steps, defaults.steps);
  EXPECT_NE(eval_every, defaults.eval_every);
  EXPECT_NE(batch_size, defaults.batch_size);
  EXPECT_NE(optimizer.kind, defaults.optimizer.kind);
  EXPECT_NE(optimizer.learning_rate, defaults.optimizer.learning_rate);
  EXPECT_NE(seed, defaults.seed);
  EXPECT_NE(staleness, defaults.staleness);
  EXPECT_NE(backup_workers, defaults.backup_workers);
  EXPECT_NE(straggler, defaults.straggler);
  EXPECT_NE(wire_dtype, defaults.wire_dtype);
  EXPECT_NE(bucket_bytes, defaults.bucket_bytes);
  EXPECT_NE(compression, defaults.compression);
  EXPECT_NE(compression_warmup, defaults.compression_warmup);
  EXPECT_NE(device, defaults.device);
}

// A field missing from the table keeps its default in the copy and fails here.
TEST(TrainingOptionsTest, ACopyMadeRowByRowHasEveryField) {
  const TrainingOptions source = NonDefaultTrainingOptions();
  TrainingOptions copy;
  for (const TrainingOption& option : TrainingOptionTable()) {
    SCOPED_TRACE(option.name);
    ASSERT_TRUE(option.set(option.get(source), copy).ok());
  }
  ExpectSameTrainingOptions(copy, source);
}

TEST(TrainingOptionsTest, RowsHaveDistinctNamesHelpAndTheJobsScopeButTheDevice) {
  std::set<std::string> names;
  for (const TrainingOption& option : TrainingOptionTable()) {
    EXPECT_TRUE(names.insert(option.name).second) << option.name << " twice";
    EXPECT_NE(std::string(option.help), "") << option.name;
    EXPECT_EQ(FindTrainingOption(option.name), &option);
    EXPECT_EQ(option.scope, std::string(option.name) == "device" ? TrainingOptionScope::kMember
                                                                 : TrainingOptionScope::kJob)
        << option.name;
  }
  EXPECT_EQ(FindTrainingOption("--model"), nullptr);
  EXPECT_EQ(FindTrainingOption("workers"), nullptr);
}

TEST(TrainingOptionsTest, RowsRefuseValuesOutOfRangeOrOfAnotherType) {
  TrainingOptions options;
  EXPECT_EQ(FindTrainingOption("eval_every")->set(int64_t{0}, options).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindTrainingOption("lr")->set(0.0f, options).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindTrainingOption("lr")->set(NAN, options).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindTrainingOption("optimizer")->set(std::string("lbfgs"), options).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindTrainingOption("wire_dtype")->set(std::string("fp8"), options).code(),
            absl::StatusCode::kInvalidArgument);
  for (const TrainingOption& option : TrainingOptionTable()) {
    SCOPED_TRACE(option.name);
    // A value of each other type than the row's own.
    const TrainingOptionValue own = option.get(options);
    for (const TrainingOptionValue& other :
         {TrainingOptionValue(std::string("1")), TrainingOptionValue(int64_t{1}),
          TrainingOptionValue(uint64_t{1}), TrainingOptionValue(1.0f)}) {
      if (other.index() == own.index()) continue;
      EXPECT_EQ(option.set(other, options).code(), absl::StatusCode::kInvalidArgument);
    }
  }
  ExpectSameTrainingOptions(options, TrainingOptions());  // nothing refused was stored
}

TEST(TrainingOptionsTest, ArgvHasOneFlagPerRowOfTheScopeAsked) {
  const TrainingOptions options = NonDefaultTrainingOptions();
  const std::vector<std::string> all = TrainingOptionsArgv(options);
  ASSERT_EQ(all.size(), TrainingOptionTable().size());
  for (size_t i = 0; i < all.size(); ++i) {
    const TrainingOption& option = TrainingOptionTable()[i];
    EXPECT_EQ(all[i],
              absl::StrCat("--", option.name, "=", TrainingOptionText(option.get(options))));
  }
  EXPECT_EQ(TrainingOptionsArgv(options, TrainingOptionScope::kMember),
            std::vector<std::string>{"--device=cuda:1"});
  const std::vector<std::string> job = TrainingOptionsArgv(options, TrainingOptionScope::kJob);
  EXPECT_EQ(job.size(), all.size() - 1);
  EXPECT_EQ(std::count(job.begin(), job.end(), "--device=cuda:1"), 0);
  EXPECT_EQ(std::count(job.begin(), job.end(), "--optimizer=momentum"), 1);
  EXPECT_EQ(std::count(job.begin(), job.end(), "--seed=18446744073709551557"), 1);
  EXPECT_EQ(std::count(job.begin(), job.end(), "--data=fashion-mnist:/data/fm"), 1);
}

TEST(TrainingOptionsTest, AFloatIsWrittenInTheFewestDigitsThatReadBack) {
  EXPECT_EQ(TrainingOptionText(0.01f), "0.01");
  EXPECT_EQ(TrainingOptionText(0.001f), "0.001");
  EXPECT_EQ(TrainingOptionText(1.0f), "1");
  for (const float value : {std::nextafter(0.1f, 1.0f), 3.14159274f, 1e-7f, 123456.789f}) {
    const std::string text = TrainingOptionText(value);
    float back = 0;
    ASSERT_TRUE(absl::SimpleAtof(text, &back)) << text;
    EXPECT_EQ(back, value) << text;
  }
  EXPECT_EQ(TrainingOptionText(int64_t{-3}), "-3");
  EXPECT_EQ(TrainingOptionText(std::string("a b")), "a b");
}

TEST(TrainingOptionsTest, StalenessIsACountOrAsyncAndReadsBack) {
  EXPECT_EQ(ParseStaleness("0").value(), 0);
  EXPECT_EQ(ParseStaleness("2").value(), 2);
  EXPECT_EQ(ParseStaleness("async").value(), kAsyncStaleness);
  for (const char* bad : {"", "-1", "ASYNC", "2.5", "1000001", "two"}) {
    EXPECT_EQ(ParseStaleness(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const int64_t staleness : {int64_t{0}, int64_t{5}, kAsyncStaleness}) {
    EXPECT_EQ(ParseStaleness(StalenessText(staleness)).value(), staleness);
  }
  TrainingOptions options;
  ASSERT_TRUE(FindTrainingOption("staleness")->set(std::string("async"), options).ok());
  EXPECT_EQ(options.staleness, kAsyncStaleness);
  EXPECT_EQ(TrainingOptionText(FindTrainingOption("staleness")->get(options)), "async");
}

TEST(TrainingOptionsTest, AStragglerNamesAWorkerAndAFactor) {
  const Straggler straggler = ParseStraggler("worker-3:2.5").value();
  EXPECT_EQ(straggler.worker, 3);
  EXPECT_EQ(straggler.factor, 2.5f);
  EXPECT_EQ(StragglerText(straggler), "worker-3:2.5");
  EXPECT_EQ(ParseStraggler("").value(), Straggler{});
  EXPECT_EQ(StragglerText(Straggler{}), "");
  for (const char* bad : {"worker-1", "worker-:2", "ps-0:2", "worker--1:2", "worker-1:0.5",
                          "worker-1:nan", "worker-1:1001", "worker-1:2x"}) {
    EXPECT_EQ(ParseStraggler(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TrainingOptionsTest, SixteenBitWireNeedsSynchronousSteps) {
  TrainingOptions options;
  options.wire_dtype = WireDtype::kFp16;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  options.staleness = kAsyncStaleness;
  const absl::Status refused = CheckSyncSettings(options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("--wire_dtype=fp16"), absl::string_view::npos) << refused;
  options.staleness = 0;
  options.backup_workers = 1;  // the shards hold the state too
  EXPECT_EQ(CheckSyncSettings(options).code(), absl::StatusCode::kInvalidArgument);
  options.wire_dtype = WireDtype::kFp32;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
}

TEST(TrainingOptionsTest, TheShardsHoldTheStateUnderStalenessAsyncOrBackupWorkers) {
  EXPECT_FALSE(ShardsHoldTheState(0, 0));
  EXPECT_TRUE(ShardsHoldTheState(2, 0));
  EXPECT_TRUE(ShardsHoldTheState(kAsyncStaleness, 0));
  EXPECT_TRUE(ShardsHoldTheState(0, 1));
}

TEST(TrainingOptionsTest, BackupWorkersNeedSynchronousSteps) {
  TrainingOptions options;
  options.backup_workers = 1;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  options.staleness = 2;
  EXPECT_EQ(CheckSyncSettings(options).code(), absl::StatusCode::kInvalidArgument);
  options.staleness = kAsyncStaleness;
  EXPECT_EQ(CheckSyncSettings(options).code(), absl::StatusCode::kInvalidArgument);
  options.backup_workers = 0;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  EXPECT_EQ(FindTrainingOption("backup_workers")->set(int64_t{-1}, options).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TrainingOptionsTest, BucketsNeedSynchronousStepsWithoutBackupWorkers) {
  TrainingOptions options;
  options.bucket_bytes = 4096;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  options.staleness = 1;
  const absl::Status refused = CheckSyncSettings(options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("--bucket_bytes=4096"), absl::string_view::npos) << refused;
  options.staleness = 0;
  options.backup_workers = 1;
  EXPECT_EQ(CheckSyncSettings(options).code(), absl::StatusCode::kInvalidArgument);
  options.bucket_bytes = 0;
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  EXPECT_EQ(FindTrainingOption("bucket_bytes")->set(kMaxBucketBytes + 1, options).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(FindTrainingOption("bucket_bytes")->set(kMaxBucketBytes, options).ok());
}

TEST(TrainingOptionsTest, CompressionNeedsSynchronousStepsAndAFloat32Wire) {
  TrainingOptions options;
  ASSERT_TRUE(FindTrainingOption("compression")->set(std::string("topk:0.01"), options).ok());
  EXPECT_EQ(options.compression, (Compression{CompressionKind::kTopK, 0.01f}));
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  for (const auto& [staleness, backup] :
       {std::pair<int64_t, int64_t>{1, 0}, {kAsyncStaleness, 0}, {0, 1}}) {
    options.staleness = staleness;
    options.backup_workers = backup;
    const absl::Status refused = CheckSyncSettings(options);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("--compression=topk:0.01 needs --staleness=0"),
              absl::string_view::npos)
        << refused;
  }
  options.staleness = 0;
  options.backup_workers = 0;
  options.wire_dtype = WireDtype::kFp16;
  const absl::Status refused = CheckSyncSettings(options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("takes --wire_dtype=fp32"), absl::string_view::npos) << refused;
  options.wire_dtype = WireDtype::kFp32;
  options.bucket_bytes = 4096;
  const absl::Status overlapped = CheckSyncSettings(options);
  EXPECT_EQ(overlapped.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(overlapped.message().find("needs --bucket_bytes=0"), absl::string_view::npos)
      << overlapped;
  options.wire_dtype = WireDtype::kFp16;
  options.compression = Compression{};  // none: any wire, any staleness, buckets
  EXPECT_TRUE(CheckSyncSettings(options).ok());
  const absl::Status bad = FindTrainingOption("compression")->set(std::string("top5"), options);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("is not none, topk:F, sign, randomk:F"), absl::string_view::npos)
      << bad;
  EXPECT_EQ(FindTrainingOption("compression_warmup")->set(int64_t{-1}, options).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(FindTrainingOption("compression_warmup")->set(int64_t{50}, options).ok());
  EXPECT_EQ(options.compression_warmup, 50);
}

}  // namespace
}  // namespace ringside
