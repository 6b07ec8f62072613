// The checkpoint store's reader (common/checkpoint_store.h) on arbitrary files: the input is
// written as a checkpoint file into a temporary directory and CheckpointStore::LoadNewest reads
// it, as a controller does on start with whatever its --checkpoint_dir holds. A SHA-256 stops a
// random mutation at the checksum, so a flag lets the target seal the file with a correct one
// and reach everything after it; another puts an intact older checkpoint beside it.
//
// Checks, besides the sanitizers (and libFuzzer's -malloc_limit_mb): the answer is a checkpoint
// or DATA_LOSS, never another error; a checkpoint read is within the store's limits and is
// exactly the file (written again, it gives the same bytes); a damaged file falls back to the
// intact older one beside it.
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "common/checkpoint_store.h"
#include "common/file_util.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

constexpr size_t kDigestBytes = 32;

CheckpointLimits SmallLimits() {
  CheckpointLimits limits;
  limits.max_job_bytes = 4096;
  limits.max_elements = 1 << 16;
  return limits;
}

// The directories the target writes into, made once per process and removed at its exit.
struct Directories {
  std::string files;    // the checkpoints LoadNewest reads
  std::string written;  // where a checkpoint read is written again
  std::string older;    // an intact checkpoint of step 0, as CheckpointStore::Write made it
};

// In $TMPDIR, else in /dev/shm where there is one: the store fsyncs every checkpoint it writes,
// which costs nothing on tmpfs and milliseconds per run on a disk.
std::string MakeTemporaryDirectory() {
  const char* tmp = getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  if ((tmp == nullptr || *tmp == '\0') && access("/dev/shm", W_OK) == 0) base = "/dev/shm";
  std::string pattern = base + "/ringside-checkpoint-fuzz-XXXXXX";
  FUZZ_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot make a directory like %s",
             pattern.c_str());
  return pattern;
}

void RemoveFile(const std::string& path) { unlink(path.c_str()); }

const Directories& Dirs() {
  static const Directories* dirs = [] {
    auto* made = new Directories{MakeTemporaryDirectory(), MakeTemporaryDirectory(), ""};
    Checkpoint older;
    older.job = "older job";
    older.parameters = {1.0f, 2.0f};
    older.optimizer_state = {0.0f};
    absl::StatusOr<CheckpointStore> store = CheckpointStore::Open(made->written);
    FUZZ_CHECK(store.ok(), "%s", store.status().ToString().c_str());
    absl::StatusOr<WrittenCheckpoint> written = store->Write(older);
    FUZZ_CHECK(written.ok(), "%s", written.status().ToString().c_str());
    absl::StatusOr<std::string> bytes = ReadFileToString(written->path);
    FUZZ_CHECK(bytes.ok(), "%s", bytes.status().ToString().c_str());
    made->older = *bytes;
    RemoveFile(written->path);
    std::atexit([] {
      rmdir(Dirs().files.c_str());
      rmdir(Dirs().written.c_str());
    });
    return made;
  }();
  return *dirs;
}

std::string CheckpointPath(const std::string& dir, uint64_t step) {
  return absl::StrFormat("%s/checkpoint-%020u.ckpt", dir, step);
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  FILE* file = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(file != nullptr, "cannot write %s", path.c_str());
  FUZZ_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size(), "cannot write %s",
             path.c_str());
  std::fclose(file);
}

// The last 32 bytes become the SHA-256 of everything before them, as a writer makes them.
void Seal(std::string& bytes) {
  if (bytes.size() < kDigestBytes) return;
  unsigned char digest[kDigestBytes];
  unsigned int length = 0;
  FUZZ_CHECK(EVP_Digest(bytes.data(), bytes.size() - kDigestBytes, digest, &length, EVP_sha256(),
                        nullptr) == 1 &&
                 length == kDigestBytes,
             "libcrypto could not compute a SHA-256");
  bytes.replace(bytes.size() - kDigestBytes, kDigestBytes, reinterpret_cast<char*>(digest),
                kDigestBytes);
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace flag = checkpoint_flags;
  const Directories& dirs = Dirs();
  FuzzReader in(data, size);
  const uint8_t flags = in.Byte();
  std::string file = in.Rest();
  if (flags & flag::kSeal) Seal(file);
  uint64_t step = flags >> 4;
  if ((flags & flag::kNameByHeader) && file.size() >= 16) {
    step = 0;
    for (int i = 0; i < 8; ++i) step |= uint64_t{static_cast<uint8_t>(file[8 + i])} << (8 * i);
  }
  const std::string path = CheckpointPath(dirs.files, step);
  WriteBytes(path, file);
  const bool older = (flags & flag::kIntactOlder) && step > 0;
  const std::string older_path = CheckpointPath(dirs.files, 0);
  if (older) WriteBytes(older_path, dirs.older);

  const CheckpointLimits limits =
      (flags & flag::kDefaultLimits) ? CheckpointLimits{} : SmallLimits();
  absl::StatusOr<CheckpointStore> store = CheckpointStore::Open(dirs.files, 3, limits);
  FUZZ_CHECK(store.ok(), "%s", store.status().ToString().c_str());
  absl::StatusOr<LoadedCheckpoint> loaded = store->LoadNewest();
  FUZZ_CHECK(loaded.ok() || absl::IsDataLoss(loaded.status()), "LoadNewest: %s",
             loaded.status().ToString().c_str());
  FUZZ_CHECK(loaded.ok() || !older, "a damaged file hid the intact one beside it: %s",
             loaded.status().ToString().c_str());
  if (loaded.ok()) {
    const Checkpoint& checkpoint = loaded->checkpoint;
    FUZZ_CHECK(
        checkpoint.job.size() <= limits.max_job_bytes &&
            checkpoint.parameters.size() + checkpoint.optimizer_state.size() <= limits.max_elements,
        "read %zu job bytes and %zu + %zu floats past the limits", checkpoint.job.size(),
        checkpoint.parameters.size(), checkpoint.optimizer_state.size());
    const bool newest = loaded->path == path;
    FUZZ_CHECK(newest || (older && loaded->path == older_path && loaded->skipped.size() == 1),
               "read %s, skipping %zu", loaded->path.c_str(), loaded->skipped.size());
    // What was read, written again by the store, is the very file it came from.
    absl::StatusOr<CheckpointStore> again = CheckpointStore::Open(dirs.written, 3, limits);
    FUZZ_CHECK(again.ok(), "%s", again.status().ToString().c_str());
    absl::StatusOr<WrittenCheckpoint> written = again->Write(checkpoint);
    FUZZ_CHECK(written.ok(), "Write: %s", written.status().ToString().c_str());
    absl::StatusOr<std::string> bytes = ReadFileToString(written->path);
    FUZZ_CHECK(bytes.ok() && *bytes == (newest ? file : dirs.older),
               "a checkpoint read and written again differs from its file");
    RemoveFile(written->path);
  }
  RemoveFile(path);
  if (older) RemoveFile(older_path);
  return 0;
}
