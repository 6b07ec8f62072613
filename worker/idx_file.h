// IDX files, the format MNIST and Fashion-MNIST are distributed in: a big-endian header -- the
// magic number 0x00000800 + dimensions (0x00000803 for images: count, rows, columns;
// 0x00000801 for labels: count), then one uint32 per dimension -- followed by exactly the
// product of the dimensions in unsigned bytes. The files are usually gzipped; they are read
// through zlib, which passes an uncompressed file through unchanged.
//
// Everything read is checked before it sizes anything: the magic number, every dimension >= 1,
// the payload no larger than the caller's limit (a corrupt header cannot allocate gigabytes),
// and the file holding exactly the header's count -- a file cut short, a gzip stream cut short
// or corrupt, and a file with bytes past the payload are all INVALID_ARGUMENT naming the file.
// A missing file is NOT_FOUND naming it. Never a crash, never a read past what was read.
// Thread-safe (no shared state).
#ifndef RINGSIDE_WORKER_IDX_FILE_H_
#define RINGSIDE_WORKER_IDX_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ringside::worker {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;

struct IdxImages {
  int64_t count = 0;
  int rows = 0, columns = 0;
  std::vector<uint8_t> pixels;  // count * rows * columns, image after image, row-major
  int64_t pixels_per_image() const { return int64_t{rows} * columns; }
};

// At most `max_pixels` pixel bytes in all.
absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path, uint64_t max_pixels);
// ReadIdxImages keeping the images numbered in `keep` alone (ascending, distinct, each below the
// file's count; else INVALID_ARGUMENT): `pixels` holds them in that order, `count` is the file's.
// The whole file is still read and checked, a block of images at a time, so the memory is the
// kept images' and one block's.
absl::StatusOr<IdxImages> ReadIdxImageRows(const std::string& path, uint64_t max_pixels,
                                           absl::Span<const int64_t> keep);
// An images file read front to back a few images at a time, checked as ReadIdxImages checks it:
// what an evaluation in pieces reads instead of holding a whole test set. Thread-compatible.
class IdxImageReader {
 public:
  // The file opened and its header read (at most `max_pixels` pixel bytes in all).
  static absl::StatusOr<IdxImageReader> Open(const std::string& path, uint64_t max_pixels);
  IdxImageReader(IdxImageReader&&) noexcept;
  IdxImageReader& operator=(IdxImageReader&&) noexcept;
  ~IdxImageReader();

  // count, rows and columns; no pixels.
  const IdxImages& header() const { return header_; }
  // The next `images` images into out[0, images * pixels_per_image()); INVALID_ARGUMENT past the
  // count, or naming the file when it ends early or is corrupt.
  absl::Status Next(int64_t images, uint8_t* out);
  // OK once every image was read and nothing follows them (the gzip checksum included).
  absl::Status Finish();

 private:
  struct File;
  IdxImageReader(std::unique_ptr<File> file, IdxImages header);
  std::unique_ptr<File> file_;
  IdxImages header_;
  int64_t read_ = 0;  // images read so far
};

// The header alone (count, rows, columns; no pixels): what a command checks before it starts
// processes that will read the whole file.
absl::StatusOr<IdxImages> ReadIdxImagesHeader(const std::string& path);
// At most `max_count` labels.
absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path, uint64_t max_count);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_IDX_FILE_H_
