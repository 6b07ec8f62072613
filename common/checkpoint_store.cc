#include "common/checkpoint_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ringside {
namespace {

constexpr absl::string_view kNamePrefix = "checkpoint-";
constexpr absl::string_view kNameSuffix = ".ckpt";
constexpr size_t kStepDigits = 20;  // all of uint64_t, so names sort as steps do
constexpr absl::string_view kTempPrefix = ".checkpoint-";
constexpr absl::string_view kTempSuffix = ".tmp";
std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// mkdir -p, flushing each new directory's entry into its parent: a checkpoint fsynced into a
// directory whose own entry was lost would be lost with it.
absl::Status MakeDirectories(const std::string& dir) {
  size_t end = 0;
  while (end != std::string::npos) {
    end = dir.find('/', end + 1);
    const std::string prefix = dir.substr(0, end);
    struct stat info;
    if (stat(prefix.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode)) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint directory ", dir, ": ", prefix,
                         " exists and is not a directory; pass a directory path"));
      }
      continue;
    }
    if (errno != ENOENT) return ErrnoStatus(errno, "cannot inspect", prefix);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "cannot create checkpoint directory", prefix);
    }
    RETURN_IF_ERROR(FsyncDirectory(Parent(prefix)));
  }
  return absl::OkStatus();
}

std::string CheckpointName(uint64_t step) {
  return absl::StrCat(kNamePrefix, absl::StrFormat("%020u", step), kNameSuffix);
}

std::optional<uint64_t> StepOfName(absl::string_view name) {
  if (name.size() != kNamePrefix.size() + kStepDigits + kNameSuffix.size() ||
      !absl::StartsWith(name, kNamePrefix) || !absl::EndsWith(name, kNameSuffix)) {
    return std::nullopt;
  }
  const absl::string_view digits = name.substr(kNamePrefix.size(), kStepDigits);
  uint64_t step = 0;
  // SimpleAtoi alone would also take a sign or spaces; it refuses values past 2^64 - 1.
  if (!std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(digits, &step)) {
    return std::nullopt;
  }
  return step;
}

bool IsTemporaryName(absl::string_view name) {
  return absl::StartsWith(name, kTempPrefix) && absl::EndsWith(name, kTempSuffix);
}

// Every regular file in `dir` whose name `keep` accepts, with what `keep` made of it.
template <typename T, typename Keep>
absl::StatusOr<std::vector<std::pair<T, std::string>>> ScanDirectory(const std::string& dir,
                                                                     Keep keep) {
  DIR* stream = opendir(dir.c_str());
  if (stream == nullptr) {
    return ErrnoStatus(errno, "cannot read checkpoint directory", dir);
  }
  std::vector<std::pair<T, std::string>> found;
  int error = 0;
  while (true) {
    errno = 0;
    const dirent* entry = readdir(stream);
    if (entry == nullptr) {
      error = errno;
      break;
    }
    std::optional<T> value = keep(absl::string_view(entry->d_name));
    if (!value) continue;
    struct stat info;
    // Follows links; a name like ours on a directory or a device is not ours.
    if (fstatat(dirfd(stream), entry->d_name, &info, 0) != 0 || !S_ISREG(info.st_mode)) continue;
    found.emplace_back(*value, absl::StrCat(dir, "/", entry->d_name));
  }
  closedir(stream);
  if (error != 0) {
    return ErrnoStatus(error, "cannot read checkpoint directory", dir);
  }
  return found;
}

// (step, path), newest first.
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> ListCheckpoints(
    const std::string& dir) {
  ASSIGN_OR_RETURN(auto found, ScanDirectory<uint64_t>(dir, StepOfName));
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  return found;
}

// Of the checkpoints older than `step`, the newest keep - 1 stay and the rest are deleted (and
// added to `pruned`). Newer ones are left alone (CheckpointStore::Write says why).
absl::Status PruneOlder(const std::string& dir, uint64_t step, int keep,
                        std::vector<std::string>& pruned) {
  ASSIGN_OR_RETURN(const auto existing, ListCheckpoints(dir));
  int older_kept = 0;
  for (const auto& [old_step, old_path] : existing) {
    if (old_step >= step) continue;
    if (++older_kept < keep) continue;
    if (unlink(old_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, "cannot delete", old_path);
    }
    pruned.push_back(old_path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckpointStore> CheckpointStore::Open(std::string dir, int keep,
                                                      CheckpointLimits limits) {
  if (dir.empty()) return absl::InvalidArgumentError("checkpoint directory: empty path");
  if (keep < 1) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint directory ", dir, ": keep is ", keep,
                                                   "; keep at least 1 checkpoint"));
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  RETURN_IF_ERROR(MakeDirectories(dir));
  // Left by a writer that died before its rename: never a checkpoint, only wasted space.
  ASSIGN_OR_RETURN(const auto temporaries,
                   ScanDirectory<bool>(dir, [](absl::string_view name) -> std::optional<bool> {
                     if (IsTemporaryName(name)) return true;
                     return std::nullopt;
                   }));
  for (const auto& [unused, path] : temporaries) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, "cannot delete a dead writer's temporary", path);
    }
  }
  return CheckpointStore(std::move(dir), keep, limits);
}

absl::StatusOr<WrittenCheckpoint> CheckpointStore::Write(const Checkpoint& checkpoint) const {
  RETURN_IF_ERROR(CheckCheckpointWritable(checkpoint, limits_));
  static std::atomic<uint64_t> next_temporary{0};
  const std::string path = absl::StrCat(dir_, "/", CheckpointName(checkpoint.step));
  const std::string temporary =
      absl::StrCat(dir_, "/", kTempPrefix, absl::StrFormat("%020u", checkpoint.step), ".", getpid(),
                   ".", next_temporary.fetch_add(1), kTempSuffix);
  RETURN_IF_ERROR(WriteCheckpointFile(
      checkpoint, temporary, path,
      absl::StrCat("no checkpoint of step ", checkpoint.step,
                   " was written; check the free space and permissions of ", dir_)));
  // The rename itself must survive a power loss before this returns OK.
  RETURN_IF_ERROR(
      Annotate(FsyncDirectory(dir_),
               absl::StrCat("checkpoint ", path, " is in place but may not survive a power loss")));

  WrittenCheckpoint written;
  written.path = path;
  written.bytes = CheckpointFileBytes(checkpoint);
  // A failure from here on leaves the new checkpoint durable: the message says so, and writing
  // the same step again is harmless.
  RETURN_IF_ERROR(Annotate(PruneOlder(dir_, checkpoint.step, keep_, written.pruned),
                           absl::StrCat("checkpoint ", path, " is written, but pruning failed")));
  return written;
}

absl::StatusOr<LoadedCheckpoint> CheckpointStore::LoadNewest() const {
  ASSIGN_OR_RETURN(const auto checkpoints, ListCheckpoints(dir_));
  LoadedCheckpoint loaded;
  for (const auto& [step, path] : checkpoints) {
    absl::StatusOr<Checkpoint> checkpoint = ReadCheckpointFile(path, step, limits_);
    if (checkpoint.ok()) {
      loaded.checkpoint = *std::move(checkpoint);
      loaded.path = path;
      return loaded;
    }
    // Pruned by a concurrent Write after it was listed: it was older than what is left.
    if (absl::IsNotFound(checkpoint.status())) continue;
    if (!absl::IsDataLoss(checkpoint.status())) return checkpoint.status();
    loaded.skipped.emplace_back(checkpoint.status().message());
  }
  if (loaded.skipped.empty()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in ", dir_, " (files named ",
                                            kNamePrefix, "<step>", kNameSuffix,
                                            "): the job starts from step 0"));
  }
  const std::string which = loaded.skipped.size() == 1
                                ? absl::StrCat("the only checkpoint in ", dir_, " is not intact: ")
                                : absl::StrCat("none of the ", loaded.skipped.size(),
                                               " checkpoints in ", dir_, " is intact: ");
  return absl::DataLossError(absl::StrCat(
      which, absl::StrJoin(loaded.skipped, "; "),
      ". Restore one from a backup, or move the directory aside to start the job from step 0"));
}

absl::StatusOr<std::vector<std::string>> CheckpointStore::List() const {
  ASSIGN_OR_RETURN(const auto checkpoints, ListCheckpoints(dir_));
  std::vector<std::string> paths;
  paths.reserve(checkpoints.size());
  for (const auto& [step, path] : checkpoints) paths.push_back(path);
  return paths;
}

}  // namespace ringside
