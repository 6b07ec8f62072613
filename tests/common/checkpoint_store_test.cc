#include "common/checkpoint_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

// Every allocation in this binary goes through here, so a test can assert that reading a
// header claiming 2^60 floats never asked for the memory (a lazy Linux malloc would let an
// eager resize() pass unnoticed otherwise).
namespace {
std::atomic<bool> tracking_allocations{false};
std::atomic<size_t> largest_allocation{0};
}  // namespace

void* operator new(size_t size) {
  if (tracking_allocations.load(std::memory_order_relaxed)) {
    size_t seen = largest_allocation.load();
    while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
// GCC 12 inlines these into callers and then mistakes them for the built-in pair.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }
#pragma GCC diagnostic pop

namespace ringside {
namespace {

constexpr uint64_t kHeaderBytes = 36;
constexpr uint64_t kFixedBytes = 36 + 32;  // header + SHA-256

// A fresh directory per test, removed with everything in it afterwards.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr && *base ? base : "/tmp", "/ckpt.XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(temp_.path().empty()) << "mkdtemp failed"; }
  std::string Dir(absl::string_view sub = "store") const {
    return absl::StrCat(temp_.path(), "/", sub);
  }
  TempDir temp_;
};

Checkpoint MakeCheckpoint(uint64_t step, size_t parameters, size_t optimizer_state,
                          std::string job = "job-spec") {
  Checkpoint checkpoint;
  checkpoint.step = step;
  checkpoint.job = std::move(job);
  checkpoint.parameters.resize(parameters);
  for (size_t i = 0; i < parameters; ++i) {
    checkpoint.parameters[i] = static_cast<float>(step) + 0.001f * static_cast<float>(i % 9973);
  }
  checkpoint.optimizer_state.resize(optimizer_state);
  for (size_t i = 0; i < optimizer_state; ++i) {
    checkpoint.optimizer_state[i] = -0.5f * static_cast<float>(i) - static_cast<float>(step);
  }
  return checkpoint;
}

std::string CheckpointPath(const std::string& dir, uint64_t step) {
  return absl::StrFormat("%s/checkpoint-%020u.ckpt", dir, step);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Bit for bit: NaN != NaN, and -0.0 == 0.0 would hide a sign lost on the way.
void ExpectSameBits(const std::vector<float>& expected, const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  EXPECT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0);
}

void ExpectSameCheckpoint(const Checkpoint& expected, const Checkpoint& actual) {
  EXPECT_EQ(expected.step, actual.step);
  EXPECT_EQ(expected.job, actual.job);
  ExpectSameBits(expected.parameters, actual.parameters);
  ExpectSameBits(expected.optimizer_state, actual.optimizer_state);
}

// A little-endian header as the format describes it, for files a writer would never produce.
std::string Header(uint64_t step, uint32_t job_bytes, uint64_t parameters, uint64_t optimizer,
                   absl::string_view magic = "RSCKPT01") {
  std::string header(magic);
  const auto put = [&header](uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) header.push_back(static_cast<char>(value >> (8 * i)));
  };
  put(step, 8);
  put(job_bytes, 4);
  put(parameters, 8);
  put(optimizer, 8);
  return header;
}

TEST_F(CheckpointStoreTest, RoundTripsOddSizesBitForBit) {
  auto store = CheckpointStore::Open(Dir(), /*keep=*/10);
  ASSERT_TRUE(store.ok()) << store.status();

  Checkpoint special = MakeCheckpoint(3, 6, 2, std::string("binary\0job\xff", 11));
  special.parameters = {-0.0f,
                        std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::max(),
                        1.5f};
  const std::vector<Checkpoint> checkpoints = {
      MakeCheckpoint(0, 1, 0, ""),             // one parameter, no optimiser state, no job
      special,                                 // floats that must keep every bit
      MakeCheckpoint(7, 1000003, 0),           // ~1e6 parameters, plain SGD
      MakeCheckpoint(9, 1000003, 2000006),     // Adam: two floats of state per parameter
      MakeCheckpoint(uint64_t{1} << 40, 0, 0)  // nothing but the step; a step past 2^32
  };
  for (const Checkpoint& checkpoint : checkpoints) {
    SCOPED_TRACE(absl::StrCat("step ", checkpoint.step));
    auto written = store->Write(checkpoint);
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_EQ(written->path, CheckpointPath(store->dir(), checkpoint.step));
    const uint64_t expected_bytes =
        kFixedBytes + checkpoint.job.size() +
        4 * (checkpoint.parameters.size() + checkpoint.optimizer_state.size());
    EXPECT_EQ(written->bytes, expected_bytes);
    EXPECT_EQ(std::filesystem::file_size(written->path), expected_bytes);
    EXPECT_TRUE(written->pruned.empty());

    auto loaded = store->LoadNewest();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->path, written->path);
    EXPECT_TRUE(loaded->skipped.empty());
    ExpectSameCheckpoint(checkpoint, loaded->checkpoint);
  }
  EXPECT_EQ(std::filesystem::path(CheckpointPath(store->dir(), 7)).filename(),
            "checkpoint-00000000000000000007.ckpt");
}

TEST_F(CheckpointStoreTest, SecondWriteOfAStepReplacesIt) {
  auto store = CheckpointStore::Open(Dir());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(store->Write(MakeCheckpoint(5, 10, 0, "first")).ok());
  const Checkpoint second = MakeCheckpoint(5, 20, 20, "second");
  ASSERT_TRUE(store->Write(second).ok());
  auto list = store->List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, std::vector<std::string>{CheckpointPath(store->dir(), 5)});
  auto loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSameCheckpoint(second, loaded->checkpoint);
}

TEST_F(CheckpointStoreTest, WritePrunesToTheNewestKeep) {
  auto store = CheckpointStore::Open(Dir(), /*keep=*/2);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string& dir = store->dir();
  for (uint64_t step : {10, 20}) {
    auto written = store->Write(MakeCheckpoint(step, 4, 4));
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_TRUE(written->pruned.empty());
  }
  auto written = store->Write(MakeCheckpoint(30, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->pruned, std::vector<std::string>{CheckpointPath(dir, 10)});
  // Steps above 99 would sort wrongly if the names were not zero-padded.
  written = store->Write(MakeCheckpoint(100, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->pruned, std::vector<std::string>{CheckpointPath(dir, 20)});
  auto list = store->List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, (std::vector<std::string>{CheckpointPath(dir, 100), CheckpointPath(dir, 30)}));
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(dir, 10)));

  auto keep_one = CheckpointStore::Open(dir, /*keep=*/1);
  ASSERT_TRUE(keep_one.ok()) << keep_one.status();
  written = keep_one->Write(MakeCheckpoint(101, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->pruned,
            (std::vector<std::string>{CheckpointPath(dir, 100), CheckpointPath(dir, 30)}));
  EXPECT_EQ(*keep_one->List(), std::vector<std::string>{CheckpointPath(dir, 101)});
}

// A job that resumed past damaged newer files must not have its fresh checkpoints pruned to
// make room for them: "keep the 2 highest steps" would delete 15 as soon as it is written.
TEST_F(CheckpointStoreTest, DamagedNewerFilesNeverCostTheCheckpointJustWritten) {
  const std::string dir = Dir();
  auto three = CheckpointStore::Open(dir, /*keep=*/3);
  ASSERT_TRUE(three.ok()) << three.status();
  for (uint64_t step : {10, 20, 30}) ASSERT_TRUE(three->Write(MakeCheckpoint(step, 4, 4)).ok());
  std::filesystem::resize_file(CheckpointPath(dir, 30), 5);
  std::filesystem::resize_file(CheckpointPath(dir, 20), 50);

  auto store = CheckpointStore::Open(dir, /*keep=*/2);
  ASSERT_TRUE(store.ok()) << store.status();
  auto loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 10u);
  EXPECT_EQ(loaded->skipped.size(), 2u);

  // Resumed from 10, writes 15: 20 and 30 are newer (damaged) and left; 10 is the older kept.
  auto written = store->Write(MakeCheckpoint(15, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(written->pruned.empty());
  EXPECT_EQ(*store->List(),
            (std::vector<std::string>{CheckpointPath(dir, 30), CheckpointPath(dir, 20),
                                      CheckpointPath(dir, 15), CheckpointPath(dir, 10)}));
  loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 15u);

  // Reaching steps 20 and 30 again replaces the damaged files; pruning catches up.
  written = store->Write(MakeCheckpoint(20, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->pruned, std::vector<std::string>{CheckpointPath(dir, 10)});
  written = store->Write(MakeCheckpoint(30, 4, 4));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->pruned, std::vector<std::string>{CheckpointPath(dir, 15)});
  loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 30u);
  EXPECT_TRUE(loaded->skipped.empty());
  EXPECT_EQ(*store->List(),
            (std::vector<std::string>{CheckpointPath(dir, 30), CheckpointPath(dir, 20)}));
}

TEST_F(CheckpointStoreTest, OpenRemovesDeadWritersTemporariesAndListIgnoresThem) {
  const std::string dir = Dir();
  auto store = CheckpointStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(store->Write(MakeCheckpoint(1, 3, 3)).ok());
  // What a writer killed mid-write leaves: a hidden, partial file of a newer step.
  const std::string temporary = dir + "/.checkpoint-00000000000000000002.4242.0.tmp";
  WriteBytes(temporary, Header(2, 0, 1000, 0) + "partial");
  // Not ours, whatever they look like: left alone, never listed.
  WriteBytes(dir + "/notes.txt", "hello");
  WriteBytes(dir + "/checkpoint-3.ckpt", "not zero-padded");
  WriteBytes(dir + "/checkpoint-0000000000000000000x.ckpt", "not a number");
  std::filesystem::create_directory(CheckpointPath(dir, 9));  // a directory, not a file

  auto list = store->List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, std::vector<std::string>{CheckpointPath(dir, 1)});
  auto loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 1u);
  EXPECT_TRUE(loaded->skipped.empty());

  auto reopened = CheckpointStore::Open(dir + "/");  // a trailing slash names the same store
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->dir(), dir);
  EXPECT_FALSE(std::filesystem::exists(temporary));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint-3.ckpt"));
  EXPECT_EQ(*reopened->List(), std::vector<std::string>{CheckpointPath(dir, 1)});
  // A successful write leaves no temporary behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(absl::EndsWith(entry.path().string(), ".tmp")) << entry.path();
  }
}

TEST_F(CheckpointStoreTest, TruncatedNewestFallsBackToThePreviousOne) {
  const Checkpoint previous = MakeCheckpoint(1, 1000, 500);
  const Checkpoint newest = MakeCheckpoint(2, 1000, 500, "a job spec of 25 bytes...");
  const uint64_t size = kFixedBytes + newest.job.size() + 4 * 1500;
  const uint64_t payload = kHeaderBytes + newest.job.size();
  for (uint64_t length : {uint64_t{0}, uint64_t{5}, uint64_t{20}, kHeaderBytes, payload - 3,
                          payload + 2001, size - 32, size - 1}) {
    SCOPED_TRACE(absl::StrCat("truncated to ", length, " bytes"));
    const std::string dir = Dir(absl::StrCat("truncated-", length));
    auto store = CheckpointStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(store->Write(previous).ok());
    auto written = store->Write(newest);
    ASSERT_TRUE(written.ok()) << written.status();
    ASSERT_EQ(written->bytes, size);
    std::filesystem::resize_file(written->path, length);

    auto loaded = store->LoadNewest();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->path, CheckpointPath(dir, 1));
    ExpectSameCheckpoint(previous, loaded->checkpoint);
    ASSERT_EQ(loaded->skipped.size(), 1u);
    EXPECT_TRUE(absl::StartsWith(loaded->skipped[0], written->path + ": ")) << loaded->skipped[0];
    EXPECT_TRUE(absl::StrContains(loaded->skipped[0], length == 0 ? "empty" : "truncated"))
        << loaded->skipped[0];
  }
}

TEST_F(CheckpointStoreTest, EveryFlippedByteIsDetected) {
  auto store = CheckpointStore::Open(Dir());
  ASSERT_TRUE(store.ok()) << store.status();
  const Checkpoint previous = MakeCheckpoint(1, 2, 1);
  ASSERT_TRUE(store->Write(previous).ok());
  auto written = store->Write(MakeCheckpoint(2, 3, 2, "jobby"));
  ASSERT_TRUE(written.ok()) << written.status();
  const std::string good = ReadBytes(written->path);
  ASSERT_EQ(good.size(), written->bytes);

  for (size_t offset = 0; offset < good.size(); ++offset) {
    SCOPED_TRACE(absl::StrCat("byte ", offset, " of ", good.size()));
    std::string bad = good;
    bad[offset] = static_cast<char>(bad[offset] ^ 0x10);
    WriteBytes(written->path, bad);
    auto loaded = store->LoadNewest();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ExpectSameCheckpoint(previous, loaded->checkpoint);
    ASSERT_EQ(loaded->skipped.size(), 1u);
    EXPECT_TRUE(absl::StartsWith(loaded->skipped[0], written->path + ": "));
    // Outside the magic and the sizes (checked first), only the checksum can tell.
    const bool sizes = offset < 8 || (offset >= 16 && offset < kHeaderBytes);
    if (!sizes) {
      EXPECT_TRUE(absl::StrContains(loaded->skipped[0], "checksum")) << loaded->skipped[0];
    }
  }

  // And in the middle of a large payload, where a sampled or partial check would miss it.
  auto large = store->Write(MakeCheckpoint(3, 1 << 20, 1 << 20));
  ASSERT_TRUE(large.ok()) << large.status();
  std::string bytes = ReadBytes(large->path);
  bytes[bytes.size() / 2 + 1] ^= 0x01;
  WriteBytes(large->path, bytes);
  auto loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 1u);  // 2 was left flipped by the loop above
  ASSERT_EQ(loaded->skipped.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(loaded->skipped[0], large->path + ": "));
  EXPECT_TRUE(absl::StrContains(loaded->skipped[0], "checksum")) << loaded->skipped[0];
}

TEST_F(CheckpointStoreTest, HugeHeaderCountsAreRejectedWithoutAllocating) {
  struct Case {
    std::string name;
    std::string header;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"2^60 parameters", Header(1, 0, uint64_t{1} << 60, 0), "over the limit"},
      {"overflowing sum", Header(1, 0, 1, ~uint64_t{0}), "over the limit"},
      {"a 4 GiB job", Header(1, 0xffffffffu, 0, 0), "over the limit"},
      // Within the limits, but not what the file holds.
      {"2^31 parameters", Header(1, 0, uint64_t{1} << 31, 0), "truncated"},
      {"2^30 optimiser floats", Header(1, 1000, 0, uint64_t{1} << 30), "truncated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = Dir(absl::StrCat("huge-", &c - cases.data()));
    auto store = CheckpointStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    const std::string path = CheckpointPath(dir, 1);
    WriteBytes(path, c.header + std::string(4096, '\0'));

    largest_allocation = 0;
    tracking_allocations = true;
    auto loaded = store->LoadNewest();
    tracking_allocations = false;
    EXPECT_LT(largest_allocation.load(), size_t{64} << 10) << "read allocated before checking";
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
    EXPECT_TRUE(absl::StrContains(loaded.status().message(), path)) << loaded.status();
    EXPECT_TRUE(absl::StrContains(loaded.status().message(), c.reason)) << loaded.status();
  }
}

TEST_F(CheckpointStoreTest, LimitsBindTheWriterAndTheReader) {
  const std::string dir = Dir();
  auto roomy = CheckpointStore::Open(dir);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  ASSERT_TRUE(roomy->Write(MakeCheckpoint(1, 60, 40)).ok());
  ASSERT_TRUE(roomy->Write(MakeCheckpoint(2, 60, 41)).ok());

  auto tight = CheckpointStore::Open(dir, 3,
                                     CheckpointLimits{/*max_job_bytes=*/8,
                                                      /*max_elements=*/100});
  ASSERT_TRUE(tight.ok()) << tight.status();
  auto loaded = tight->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 1u);
  ASSERT_EQ(loaded->skipped.size(), 1u);
  EXPECT_TRUE(absl::StrContains(loaded->skipped[0], "max_elements")) << loaded->skipped[0];

  // What it could not read back, it refuses to write.
  EXPECT_EQ(tight->Write(MakeCheckpoint(3, 101, 0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tight->Write(MakeCheckpoint(3, 1, 0, "nine byte")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tight->Write(MakeCheckpoint(3, 100, 0, "8 bytes!")).ok());
}

TEST_F(CheckpointStoreTest, OtherVersionsAndRenamedFilesAreNamedAsSuch) {
  const std::string dir = Dir();
  auto store = CheckpointStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto written = store->Write(MakeCheckpoint(1, 3, 0));
  ASSERT_TRUE(written.ok()) << written.status();
  std::string bytes = ReadBytes(written->path);
  WriteBytes(CheckpointPath(dir, 2), bytes);  // step 1's contents under step 2's name
  bytes[7] = '2';
  WriteBytes(CheckpointPath(dir, 3), bytes);  // a future format version
  WriteBytes(CheckpointPath(dir, 4), "PK\x03\x04 a zip file, not a checkpoint");

  auto loaded = store->LoadNewest();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->checkpoint.step, 1u);
  ASSERT_EQ(loaded->skipped.size(), 3u);
  EXPECT_TRUE(absl::StrContains(loaded->skipped[0], "not a checkpoint")) << loaded->skipped[0];
  EXPECT_TRUE(absl::StrContains(loaded->skipped[1], "format version \"02\"")) << loaded->skipped[1];
  EXPECT_TRUE(absl::StrContains(loaded->skipped[2], "says step 1 but its name says step 2"))
      << loaded->skipped[2];
}

TEST_F(CheckpointStoreTest, EmptyOrMissingDirectoryIsNotFound) {
  const std::string dir = Dir("a/b/c");  // parents created too
  auto store = CheckpointStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(store->LoadNewest().status().code(), absl::StatusCode::kNotFound);
  auto list = store->List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty());

  ASSERT_TRUE(std::filesystem::remove(dir));
  const absl::Status missing = store->LoadNewest().status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_TRUE(absl::StrContains(missing.message(), dir)) << missing;
  // Not an empty list: a directory that cannot be read is not "no checkpoints".
  EXPECT_EQ(store->List().status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CheckpointStoreTest, NoIntactCheckpointIsDataLossNamingEveryFile) {
  const std::string dir = Dir();
  auto store = CheckpointStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  for (uint64_t step : {1, 2, 3}) ASSERT_TRUE(store->Write(MakeCheckpoint(step, 8, 8)).ok());
  std::filesystem::resize_file(CheckpointPath(dir, 3), 0);
  std::string bytes = ReadBytes(CheckpointPath(dir, 2));
  bytes[kHeaderBytes + 3] ^= 0x40;
  WriteBytes(CheckpointPath(dir, 2), bytes);
  WriteBytes(CheckpointPath(dir, 1), "garbage!");

  const absl::Status status = store->LoadNewest().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  for (uint64_t step : {1, 2, 3}) {
    EXPECT_TRUE(absl::StrContains(status.message(), CheckpointPath(dir, step))) << status;
  }
  for (const char* reason : {"empty", "checksum", "not a checkpoint", "from a backup"}) {
    EXPECT_TRUE(absl::StrContains(status.message(), reason)) << reason << ": " << status;
  }
}

TEST_F(CheckpointStoreTest, OpenRefusesWhatCannotBeAStore) {
  const std::string file = Dir("plain-file");
  WriteBytes(file, "not a directory");
  for (const std::string& dir : {file, file + "/below"}) {
    const absl::Status status = CheckpointStore::Open(dir).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), file)) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "not a directory")) << status;
  }
  EXPECT_EQ(ReadBytes(file), "not a directory");
  EXPECT_EQ(CheckpointStore::Open("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointStore::Open(Dir(), 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// An unreadable file is an error to fix, not a reason to roll training back to an older one.
TEST_F(CheckpointStoreTest, AnUnreadableFileIsAnErrorNotASkip) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const std::string dir = Dir();
  auto store = CheckpointStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  for (uint64_t step : {1, 2}) ASSERT_TRUE(store->Write(MakeCheckpoint(step, 8, 8)).ok());
  ASSERT_EQ(chmod(CheckpointPath(dir, 2).c_str(), 0), 0);
  const absl::Status status = store->LoadNewest().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), CheckpointPath(dir, 2))) << status;
}

}  // namespace
}  // namespace ringside
