// The file of one training checkpoint (common/checkpoint_store.h keeps a directory of them):
// what it holds, and its writer and reader.
//
// File format (version 01; every integer little-endian, every float IEEE-754 float32):
//
//   offset  size       field
//   0       8          magic "RSCKPT01" (the last two characters are the format version)
//   8       8          step: u64, completed training steps the state includes
//   16      4          job length J: u32, bytes
//   20      8          parameter count P: u64, floats
//   28      8          optimiser-state count O: u64, floats
//   36      J          the job spec, opaque bytes
//   36+J    4P         the parameters
//   36+J+4P 4O         the optimiser state
//   end-32  32         SHA-256 of every byte before it
//
// so a file is exactly 68 + J + 4(P + O) bytes long. Names: `checkpoint-<step, 20 digits>.ckpt`
// (lexical order is step order). A writer's temporary is `.checkpoint-<step>.<pid>.<n>.tmp`:
// hidden, and never mistaken for a checkpoint.
//
// Reading checks, before allocating anything, every size in the header against
// CheckpointLimits and against the file's length: a damaged header claiming 2^60 floats is an
// error message, not an allocation.
//
// Thread-safe (the functions share nothing).
#ifndef RINGSIDE_COMMON_CHECKPOINT_FILE_H_
#define RINGSIDE_COMMON_CHECKPOINT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside {

struct Checkpoint {
  uint64_t step = 0;  // completed training steps the state includes
  std::string job;    // the job spec, opaque bytes (the controller's serialised JobSpec)
  std::vector<float> parameters;
  std::vector<float> optimizer_state;
};

// What a reader agrees to allocate for one file; a writer refuses a checkpoint over them, so a
// store never writes what it cannot read back. Raise them for models larger than 16 GiB.
struct CheckpointLimits {
  uint64_t max_job_bytes = 1 << 20;
  uint64_t max_elements = uint64_t{1} << 32;  // parameters + optimiser state, in floats
};

// The length of `checkpoint`'s file: 68 + J + 4(P + O) bytes.
uint64_t CheckpointFileBytes(const Checkpoint& checkpoint);

// What a writer refuses: INVALID_ARGUMENT for a checkpoint over `limits`, which no store could
// read back.
absl::Status CheckCheckpointWritable(const Checkpoint& checkpoint, const CheckpointLimits& limits);

// The whole file into a new file `temporary`, on disk before it is renamed to `path`
// (AtomicFileWriter, common/file_util.h): a crash leaves the old checkpoint or this one, whole.
// The system's errors (ErrnoStatus's codes, naming the file) end with "; `hint`".
absl::Status WriteCheckpointFile(const Checkpoint& checkpoint, const std::string& temporary,
                                 const std::string& path, absl::string_view hint);

// Reads and verifies one file: DATA_LOSS ("PATH: why") when it is not an intact checkpoint of
// `expected_step`; any other code is the system refusing to open or read it.
absl::StatusOr<Checkpoint> ReadCheckpointFile(const std::string& path, uint64_t expected_step,
                                              const CheckpointLimits& limits);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_CHECKPOINT_FILE_H_
