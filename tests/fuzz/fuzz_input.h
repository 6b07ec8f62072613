// The byte formats the fuzz targets read, shared by the targets and make_seeds.cc (which writes
// the checked-in corpus in tests/fuzz/corpus/). A target reads its input front to back as a few
// configuration bytes and then a sequence of operations, each an op byte followed by its
// arguments. Past the end every read yields zero, so every input means something and a mutation
// of one byte changes one operation, not the meaning of everything after it (libFuzzer's own
// FuzzedDataProvider reads integers from the back, which makes hand-written seeds unreadable).
#ifndef RINGSIDE_TESTS_FUZZ_FUZZ_INPUT_H_
#define RINGSIDE_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"

namespace ringside::fuzz {

class FuzzReader {
 public:
  FuzzReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return at_ >= size_; }
  uint8_t Byte() { return empty() ? 0 : data_[at_++]; }
  // `bytes` (at most 8) little-endian bytes.
  uint64_t Uint(int bytes) {
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= uint64_t{Byte()} << (8 * i);
    return value;
  }
  // Up to `count` bytes; fewer at the end of the input.
  std::string Bytes(size_t count) {
    const size_t n = count < size_ - at_ ? count : size_ - at_;  // at_ <= size_ always
    std::string bytes(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return bytes;
  }
  std::string Rest() { return Bytes(size_); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

// What FuzzReader reads, written: make_seeds.cc builds the corpus with it.
class FuzzWriter {
 public:
  FuzzWriter& Byte(uint8_t value) {
    data_.push_back(static_cast<char>(value));
    return *this;
  }
  FuzzWriter& Uint(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) Byte(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  FuzzWriter& Bytes(absl::string_view bytes) {
    data_.append(bytes.data(), bytes.size());
    return *this;
  }
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

// A broken invariant: says which and aborts, so libFuzzer records the input as a crash.
#define FUZZ_CHECK(condition, ...)                                                             \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n  ", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                                       \
      std::fprintf(stderr, "\n");                                                              \
      std::abort();                                                                            \
    }                                                                                          \
  } while (false)

// ring_segment_fuzzer: configuration bytes world, rank, total elements, queue limit; then ops.
namespace ring_ops {
enum Op : uint8_t {
  kRawMessage,        // u16 length, the message's bytes, two cut positions (slices)
  kNextSegment,       // elements, cut: the simulated left neighbour's next segment, encoded
  kMutatedSegment,    // elements, field, u64 value, cut: the same with a field (or payload) changed
  kNext,              // the local allreduce takes the next segment (never waits)
  kBeginCollective,   // collectives to move on by
  kSetTopology,       // generations to move on by, world, rank
  kSenderGeneration,  // the neighbour's generation relative to ours (-1..+2); restarts it
  kSenderSkip,        // collectives the neighbour abandons
  kSupersede,         // generations ahead
  kStream,            // odd: a new stream; even: the latest one ends
  kFail,              // the local side fails the collective
  kCount
};
}  // namespace ring_ops

// ps_push_fuzzer: configuration bytes workers, range elements, starting step; then ops.
namespace ps_push_ops {
enum Op : uint8_t {
  kBegin,    // worker, step delta, range selector, generation selector
  kAdd,      // worker, step delta, offset selector, payload length, payload bytes
  kFinish,   // worker, step delta
  kAbandon,  // worker, step delta
  kWait,     // waits for every completed step to be applied and checks the sums
  kClose,    // the shard moves to another generation
  kCount
};
}  // namespace ps_push_ops

// ps_compressed_push_fuzzer: configuration bytes workers, range elements, codec kind (even: top-k,
// odd: sign), fraction ((b % 255 + 1) / 255); then ops.
namespace ps_compressed_push_ops {
enum Op : uint8_t {
  kBegin,    // worker
  kAdd,      // worker, how (offset, payload kind, cut), count; values or bytes
  kFinish,   // worker
  kAbandon,  // worker
  kCount
};
}  // namespace ps_compressed_push_ops

// ps_load_fuzzer: configuration bytes flags, range begin and size, optimiser, served generation;
// then segments and what happens around them.
namespace ps_load_ops {
enum Op : uint8_t {
  kRawSegment,     // u16 length, a serialised PsStateSegment
  kHeaderSegment,  // generation, u32 workers, step, flags, elements (+ bytes): built to fit
  kFinish,         // the stream half-closes: FinishLoad if complete; a new load starts
  kSetJob,         // range begin, range size, optimiser: the controller's new assignment
  kCount
};
}  // namespace ps_load_ops

// membership_fuzzer: configuration bytes workers, shards, mode; then ops.
namespace membership_ops {
enum Op : uint8_t {
  kRegister,       // token selector, role, address selector (+ bytes), seconds later
  kHeartbeat,      // member selector, generation delta, seconds later
  kExpire,         // seconds later
  kSetMode,        // mode
  kRoundTrip,      // Record() through JSON and back into a restarted controller
  kRestoreEdited,  // what to change in Record(), a value; then Restore
  kRestoreJson,    // u16 length, JSON text; ParseMembershipRecord then Restore
  kReportFailure,  // member selector, generation delta (membership.h rule 9)
  kLeave,          // member selector
  kCount
};
}  // namespace membership_ops

// checkpoint_fuzzer: a flags byte, then the file's bytes.
namespace checkpoint_flags {
constexpr uint8_t kSeal = 1;           // the last 32 bytes become the SHA-256 of the others
constexpr uint8_t kNameByHeader = 2;   // named after its header's step (else after flags >> 4)
constexpr uint8_t kIntactOlder = 4;    // an intact checkpoint of step 0 sits beside it
constexpr uint8_t kDefaultLimits = 8;  // CheckpointLimits{} rather than small ones
}  // namespace checkpoint_flags

// gradient_codec_fuzzer: kind byte (0 top-k, 1 sign, 2 random-k, mod 3), fraction byte
// ((b % 255 + 1) / 255), u16 elements (mod 4097), u8 step, u16 offset; the rest is the payload.
namespace codec_kinds {
enum Kind : uint8_t { kTopK, kSign, kRandomK };
}  // namespace codec_kinds

}  // namespace ringside::fuzz

#endif  // RINGSIDE_TESTS_FUZZ_FUZZ_INPUT_H_
