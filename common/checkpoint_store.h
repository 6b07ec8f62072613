// A directory of training checkpoints that survives crashes: a write is atomic and durable (a
// reader sees the old set of files or the new one, never half a file), every file carries a
// SHA-256 of its contents, and loading falls back past damaged files to the newest intact one,
// saying which files it passed over and why. No exceptions escape; every error is a status
// naming the file and what to do.
//
// The file format, and its reader and writer: common/checkpoint_file.h.
//
// Concurrency: one writing process per directory (Open deletes temporaries, so a second live
// writer would lose its file in flight). Methods are const and thread-safe; a reader beside the
// writer sees only complete, renamed files.
#ifndef RINGSIDE_COMMON_CHECKPOINT_STORE_H_
#define RINGSIDE_COMMON_CHECKPOINT_STORE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/checkpoint_file.h"

namespace ringside {

struct WrittenCheckpoint {
  std::string path;
  uint64_t bytes = 0;               // the file's length
  std::vector<std::string> pruned;  // older checkpoints deleted to keep `keep`
};

struct LoadedCheckpoint {
  Checkpoint checkpoint;
  std::string path;
  // "PATH: why" for each newer file that was not intact, newest first.
  std::vector<std::string> skipped;
};

class CheckpointStore {
 public:
  // Creates `dir` (and its parents) if missing and deletes temporaries a writer left when it
  // died mid-write. `keep` >= 1 checkpoints survive each Write. INVALID_ARGUMENT for a bad
  // `keep`, an empty `dir` or a `dir` that exists and is not a directory; another code naming
  // the system's reason when the directory cannot be created or read.
  static absl::StatusOr<CheckpointStore> Open(std::string dir, int keep = 3,
                                              CheckpointLimits limits = {});

  // Writes a temporary file in dir, fsyncs it, renames it to its final name and fsyncs the
  // directory: once this returns OK the checkpoint survives a crash or power loss. A second
  // write of the same step replaces the first atomically. Then prunes: of the checkpoints
  // older than this one, the newest keep - 1 stay and the rest are deleted. Newer ones are
  // left alone (they can only be files a resumed job fell back past, and a later write of
  // that step replaces them), so this file and its predecessors are never pruned for them.
  // INVALID_ARGUMENT when the checkpoint is over the limits; INTERNAL (or the errno's code)
  // naming the file when the disk refuses, in which case no new file is visible.
  absl::StatusOr<WrittenCheckpoint> Write(const Checkpoint& checkpoint) const;

  // The newest checkpoint that reads back intact. Each newer file that does not (truncated,
  // bad magic or version, sizes over the limits or not matching the file's length, checksum
  // mismatch, a step unlike its name's) is listed in `skipped` with its reason. NOT_FOUND when
  // the directory holds no checkpoint (or is gone): a job starting afresh. DATA_LOSS naming
  // every file and reason when there are checkpoints but none is intact. An I/O error (a file
  // that cannot be opened or read, e.g. for permissions) is returned as it is, not skipped:
  // falling back past a sound file would silently throw training away.
  absl::StatusOr<LoadedCheckpoint> LoadNewest() const;

  // Paths of the final checkpoint files (never temporaries), newest (highest step) first.
  // An error, not an empty list, when the directory cannot be read: "no checkpoints" would
  // start the job from step 0.
  absl::StatusOr<std::vector<std::string>> List() const;

  const std::string& dir() const { return dir_; }
  int keep() const { return keep_; }
  const CheckpointLimits& limits() const { return limits_; }

 private:
  CheckpointStore(std::string dir, int keep, CheckpointLimits limits)
      : dir_(std::move(dir)), keep_(keep), limits_(limits) {}

  std::string dir_;
  int keep_;
  CheckpointLimits limits_;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_CHECKPOINT_STORE_H_
