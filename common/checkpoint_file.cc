#include "common/checkpoint_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/file_util.h"
#include "common/status_macros.h"

// The payload is the floats' in-memory bytes, written and read without conversion.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the checkpoint format is little-endian");
static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4,
              "the checkpoint format stores IEEE-754 float32");

namespace ringside {
namespace {

constexpr char kMagic[] = "RSCKPT01";
constexpr size_t kMagicBytes = 8;
constexpr size_t kVersionlessMagicBytes = 6;  // "RSCKPT": a checkpoint, maybe of another version
constexpr size_t kHeaderBytes = 36;
constexpr size_t kDigestBytes = 32;  // SHA-256
constexpr uint64_t kFixedBytes = kHeaderBytes + kDigestBytes;
// Reads go through the digest a chunk at a time, while the bytes are still in cache.
constexpr size_t kReadChunkBytes = size_t{1} << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) {
    ok_ = context_ != nullptr && EVP_DigestInit_ex(context_, EVP_sha256(), nullptr) == 1;
  }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  ~Sha256() { EVP_MD_CTX_free(context_); }

  void Update(const void* data, size_t size) {
    if (ok_ && size > 0) ok_ = EVP_DigestUpdate(context_, data, size) == 1;
  }
  absl::Status Finish(unsigned char (&digest)[kDigestBytes]) {
    unsigned int length = 0;
    if (ok_) ok_ = EVP_DigestFinal_ex(context_, digest, &length) == 1 && length == kDigestBytes;
    if (!ok_) return absl::InternalError("OpenSSL could not compute a SHA-256 (libcrypto failed)");
    return absl::OkStatus();
  }

 private:
  EVP_MD_CTX* context_;
  bool ok_ = false;
};

void StoreLe(uint64_t value, size_t bytes, unsigned char* out) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint64_t LoadLe(const unsigned char* in, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

// The number of bytes read (short only at end of file), or -1 with errno set.
ssize_t ReadAll(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

absl::Status Damaged(const std::string& path, absl::string_view why) {
  return absl::DataLossError(absl::StrCat(path, ": ", why));
}

absl::Status Shrank(const std::string& path) {
  return Damaged(path, "the file shrank while it was being read");
}

// After a failed read: errno is read first, before anything can allocate.
absl::Status ReadError(const std::string& path) {
  return ErrnoStatus(errno, "cannot read checkpoint", path);
}

// A header as read, its sizes not yet checked.
struct Header {
  unsigned char bytes[kHeaderBytes];
  uint64_t step = 0;
  uint64_t job_bytes = 0;
  uint64_t parameter_count = 0;
  uint64_t optimizer_count = 0;
};

// The magic and format version, and room for a header and a checksum in a file of `size`.
absl::Status CheckMagic(const std::string& path, const Header& header, uint64_t size) {
  if (size == 0) {
    return Damaged(path, "empty (0 bytes): its writer died or the disk lost its contents");
  }
  if (size < kMagicBytes) {
    return Damaged(path, absl::StrCat("truncated to ", size, " bytes, shorter than the ",
                                      kMagicBytes, "-byte magic"));
  }
  const absl::string_view magic(reinterpret_cast<const char*>(header.bytes), kMagicBytes);
  if (magic != absl::string_view(kMagic, kMagicBytes)) {
    if (magic.substr(0, kVersionlessMagicBytes) ==
        absl::string_view(kMagic, kVersionlessMagicBytes)) {
      return Damaged(path, absl::StrCat("format version \"",
                                        absl::CHexEscape(magic.substr(kVersionlessMagicBytes)),
                                        "\" is not one this build reads (", kMagic,
                                        "); load it with the release that wrote it"));
    }
    return Damaged(path, absl::StrCat("not a checkpoint: it does not start with ", kMagic));
  }
  if (size < kFixedBytes) {
    return Damaged(path,
                   absl::StrCat("truncated to ", size, " bytes, shorter than the ", kFixedBytes,
                                " bytes of header and checksum every checkpoint has"));
  }
  return absl::OkStatus();
}

// Every size is bounded before anything is allocated: first by the limits, then by the file.
absl::Status CheckSizes(const std::string& path, const Header& header, uint64_t size,
                        const CheckpointLimits& limits) {
  if (header.job_bytes > limits.max_job_bytes) {
    return Damaged(path, absl::StrCat("header says the job spec has ", header.job_bytes,
                                      " bytes, over the limit of ", limits.max_job_bytes,
                                      " (CheckpointLimits::max_job_bytes; raise it if the file "
                                      "is genuine)"));
  }
  if (header.parameter_count > limits.max_elements ||
      header.optimizer_count > limits.max_elements - header.parameter_count) {
    return Damaged(
        path, absl::StrCat("header says ", header.parameter_count, " parameters and ",
                           header.optimizer_count, " optimiser-state floats, over the limit of ",
                           limits.max_elements,
                           " in all (CheckpointLimits::max_elements; raise it if the "
                           "file is genuine)"));
  }
  const uint64_t elements = header.parameter_count + header.optimizer_count;
  const uint64_t room = std::numeric_limits<uint64_t>::max() - kFixedBytes - header.job_bytes;
  if (elements > room / sizeof(float)) {
    return Damaged(path, absl::StrCat("header sizes overflow: ", elements, " floats"));
  }
  const uint64_t expected = kFixedBytes + header.job_bytes + elements * sizeof(float);
  if (size < expected) {
    return Damaged(
        path, absl::StrCat("truncated: its header says ", expected, " bytes, the file has ", size));
  }
  if (size > expected) {
    return Damaged(path, absl::StrCat("has ", size, " bytes but its header says ", expected,
                                      ": the sizes do not match the file's length"));
  }
  return absl::OkStatus();
}

// The header of the file `fd` of `size` bytes, checked against the limits and the file's length.
absl::StatusOr<Header> ReadHeader(int fd, const std::string& path, uint64_t size,
                                  const CheckpointLimits& limits) {
  Header header;
  const size_t header_bytes = static_cast<size_t>(std::min<uint64_t>(size, kHeaderBytes));
  const ssize_t got = ReadAll(fd, header.bytes, header_bytes);
  if (got < 0) return ReadError(path);
  if (static_cast<size_t>(got) != header_bytes) return Shrank(path);
  RETURN_IF_ERROR(CheckMagic(path, header, size));
  header.step = LoadLe(header.bytes + 8, 8);
  header.job_bytes = LoadLe(header.bytes + 16, 4);
  header.parameter_count = LoadLe(header.bytes + 20, 8);
  header.optimizer_count = LoadLe(header.bytes + 28, 8);
  RETURN_IF_ERROR(CheckSizes(path, header, size, limits));
  return header;
}

// Reads the rest of a file through the SHA-256 of everything before its checksum, a chunk at a
// time while the bytes are still in cache.
class DigestingReader {
 public:
  DigestingReader(int fd, const std::string& path, const Header& header) : fd_(fd), path_(path) {
    digest_.Update(header.bytes, kHeaderBytes);
  }
  // Reads `bytes` into `out`.
  absl::Status Read(void* out, uint64_t bytes) {
    auto* at = static_cast<unsigned char*>(out);
    while (bytes > 0) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, kReadChunkBytes));
      const ssize_t n = ReadAll(fd_, at, chunk);
      if (n < 0) return ReadError(path_);
      if (static_cast<size_t>(n) != chunk) return Shrank(path_);
      digest_.Update(at, chunk);
      at += chunk;
      bytes -= chunk;
    }
    return absl::OkStatus();
  }
  // Reads the stored checksum and compares it with the digest of everything read.
  absl::Status Verify() {
    unsigned char computed[kDigestBytes];
    RETURN_IF_ERROR(digest_.Finish(computed));
    unsigned char stored[kDigestBytes];
    const ssize_t stored_bytes = ReadAll(fd_, stored, kDigestBytes);
    if (stored_bytes < 0) return ReadError(path_);
    if (static_cast<size_t>(stored_bytes) != kDigestBytes) return Shrank(path_);
    if (std::memcmp(computed, stored, kDigestBytes) != 0) {
      return Damaged(path_,
                     "SHA-256 checksum mismatch: the contents changed after they were written "
                     "(disk or copy corruption)");
    }
    return absl::OkStatus();
  }

 private:
  const int fd_;
  const std::string& path_;
  Sha256 digest_;
};

}  // namespace

// Reads and verifies one file. DATA_LOSS ("PATH: why") when it is not an intact checkpoint of
// `expected_step`; any other code is the system refusing to open or read it.
absl::StatusOr<Checkpoint> ReadCheckpointFile(const std::string& path, uint64_t expected_step,
                                              const CheckpointLimits& limits) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot open checkpoint", path);
  struct stat info;
  if (fstat(fd.get(), &info) != 0) {
    return ErrnoStatus(errno, "cannot inspect checkpoint", path);
  }
  ASSIGN_OR_RETURN(const Header header,
                   ReadHeader(fd.get(), path, static_cast<uint64_t>(info.st_size), limits));
  Checkpoint checkpoint;
  checkpoint.step = header.step;
  checkpoint.job.resize(header.job_bytes);
  checkpoint.parameters.resize(header.parameter_count);
  checkpoint.optimizer_state.resize(header.optimizer_count);
  DigestingReader reader(fd.get(), path, header);
  RETURN_IF_ERROR(reader.Read(checkpoint.job.data(), header.job_bytes));
  RETURN_IF_ERROR(
      reader.Read(checkpoint.parameters.data(), header.parameter_count * sizeof(float)));
  RETURN_IF_ERROR(
      reader.Read(checkpoint.optimizer_state.data(), header.optimizer_count * sizeof(float)));
  RETURN_IF_ERROR(reader.Verify());
  if (header.step != expected_step) {
    return Damaged(path,
                   absl::StrCat("its header says step ", header.step, " but its name says step ",
                                expected_step, " (renamed by hand?)"));
  }
  return checkpoint;
}

// What a writer refuses: a checkpoint over the limits, which no store could read back.
absl::Status CheckCheckpointWritable(const Checkpoint& checkpoint, const CheckpointLimits& limits) {
  const uint64_t job_bytes = checkpoint.job.size();
  const uint64_t parameter_count = checkpoint.parameters.size();
  const uint64_t optimizer_count = checkpoint.optimizer_state.size();
  if (job_bytes > limits.max_job_bytes || job_bytes > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint of step ", checkpoint.step, ": the job spec has ", job_bytes,
        " bytes, over the limit of ", limits.max_job_bytes, " (CheckpointLimits::max_job_bytes)"));
  }
  if (parameter_count > limits.max_elements ||
      optimizer_count > limits.max_elements - parameter_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint of step ", checkpoint.step, ": ", parameter_count, " parameters and ",
        optimizer_count, " optimiser-state floats, over the limit of ", limits.max_elements,
        " in all (CheckpointLimits::max_elements); this store could not read it back"));
  }
  return absl::OkStatus();
}

// The whole file into `temporary`, on disk before it is renamed to `path`: a crash leaves the
// old checkpoint or this one, whole. The system's errors end with `hint`.
absl::Status WriteCheckpointFile(const Checkpoint& checkpoint, const std::string& temporary,
                                 const std::string& path, absl::string_view hint) {
  absl::StatusOr<AtomicFileWriter> file = AtomicFileWriter::Create(temporary, 0644);
  if (!file.ok()) return WithHint(file.status(), hint);
  unsigned char header[kHeaderBytes];
  std::memcpy(header, kMagic, kMagicBytes);
  StoreLe(checkpoint.step, 8, header + 8);
  StoreLe(checkpoint.job.size(), 4, header + 16);
  StoreLe(checkpoint.parameters.size(), 8, header + 20);
  StoreLe(checkpoint.optimizer_state.size(), 8, header + 28);
  Sha256 digest;
  absl::Status written;
  const auto put = [&](const void* data, size_t bytes) {
    if (!written.ok()) return;
    digest.Update(data, bytes);
    written = file->Append(data, bytes);
  };
  put(header, kHeaderBytes);
  put(checkpoint.job.data(), checkpoint.job.size());
  put(checkpoint.parameters.data(), checkpoint.parameters.size() * sizeof(float));
  put(checkpoint.optimizer_state.data(), checkpoint.optimizer_state.size() * sizeof(float));
  if (!written.ok()) return WithHint(written, hint);
  unsigned char computed[kDigestBytes];
  RETURN_IF_ERROR(digest.Finish(computed));
  RETURN_IF_ERROR(WithHint(file->Append(computed, kDigestBytes), hint));
  return WithHint(file->Commit(path), hint);
}

uint64_t CheckpointFileBytes(const Checkpoint& checkpoint) {
  return kFixedBytes + checkpoint.job.size() +
         (checkpoint.parameters.size() + checkpoint.optimizer_state.size()) * sizeof(float);
}

}  // namespace ringside
