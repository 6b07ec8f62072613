#include "worker/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace ringside::worker {
namespace {

// One open file read through zlib; closed on destruction.
class GzipInput {
 public:
  static absl::StatusOr<GzipInput> Open(const std::string& path) {
    errno = 0;
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) {
      const int error = errno;
      const std::string why = error != 0 ? std::strerror(error) : "zlib could not open it";
      if (error == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": ", why));
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
    }
    return GzipInput(path, file);
  }
  GzipInput(GzipInput&& other) noexcept
      : path_(std::move(other.path_)), file_(std::exchange(other.file_, nullptr)) {}
  GzipInput& operator=(GzipInput&&) = delete;
  ~GzipInput() {
    if (file_ != nullptr) gzclose(file_);
  }

  // Exactly `bytes` bytes into `out`; `what` names them in the error ("the header").
  absl::Status ReadExactly(uint8_t* out, uint64_t bytes, absl::string_view what) {
    uint64_t done = 0;
    while (done < bytes) {
      const unsigned chunk =
          static_cast<unsigned>(std::min<uint64_t>(bytes - done, uint64_t{1} << 30));
      const int got = gzread(file_, out + done, chunk);
      if (got < 0) return Corrupt();
      if (got == 0) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": truncated: ", what, " needs ",
                                                       bytes, " bytes, the file ends after ", done,
                                                       ZlibNote()));
      }
      done += static_cast<uint64_t>(got);
    }
    return absl::OkStatus();
  }

  // OK when nothing follows what was read (the gzip trailer's checksum included).
  absl::Status ExpectEnd(uint64_t read_so_far) {
    uint8_t extra[1];
    const int got = gzread(file_, extra, 1);
    if (got < 0) return Corrupt();
    if (got > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": wrong size: the header accounts for ", read_so_far,
                       " bytes but the file holds more"));
    }
    int code = Z_OK;
    gzerror(file_, &code);
    if (code != Z_OK) return Corrupt();
    return absl::OkStatus();
  }

 private:
  GzipInput(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}

  std::string ZlibNote() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code == Z_OK || message == nullptr) return "";
    return absl::StrCat(" (zlib: ", message, ")");
  }
  absl::Status Corrupt() {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": not a readable IDX file or gzip stream", ZlibNote()));
  }

  std::string path_;
  gzFile file_;
};

uint32_t BigEndian32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

// The header of an IDX file of `dimensions` dimensions with `magic`: the dimensions, each >= 1.
absl::StatusOr<std::vector<uint32_t>> ReadHeader(GzipInput& input, const std::string& path,
                                                 uint32_t magic, int dimensions) {
  // The magic number first: a file of the other kind is named as such, not as cut short.
  uint8_t word[4];
  RETURN_IF_ERROR(input.ReadExactly(word, 4, "the IDX magic number"));
  const uint32_t found = BigEndian32(word);
  if (found != magic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: wrong magic number 0x%08x: an IDX %s file starts with 0x%08x", path,
                        found, magic == kIdxImagesMagic ? "images" : "labels", magic));
  }
  std::vector<uint32_t> sizes;
  for (int d = 0; d < dimensions; ++d) {
    RETURN_IF_ERROR(input.ReadExactly(word, 4, "the IDX header"));
    sizes.push_back(BigEndian32(word));
    if (sizes.back() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": dimension ", d, " of the IDX header is 0"));
    }
  }
  return sizes;
}

// The payload size the dimensions give, refused above `limit` (checked without overflow).
absl::StatusOr<uint64_t> PayloadBytes(const std::string& path, const std::vector<uint32_t>& sizes,
                                      uint64_t limit) {
  uint64_t product = 1;
  for (uint32_t size : sizes) {
    if (product > limit / size) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the IDX header announces more than ",
                                                     limit, " values, which is refused"));
    }
    product *= size;
  }
  return product;
}

constexpr uint64_t kImagesHeaderBytes = 16;          // magic, count, rows, columns
constexpr uint64_t kBlockBytes = uint64_t{1} << 20;  // ReadIdxImageRows reads this much at once

uint64_t PayloadOf(const IdxImages& images) {
  return static_cast<uint64_t>(images.count) * static_cast<uint64_t>(images.pixels_per_image());
}

// An images file's header, its payload no larger than `max_pixels`; no pixels yet.
absl::StatusOr<IdxImages> ReadImagesHeader(GzipInput& input, const std::string& path,
                                           uint64_t max_pixels) {
  ASSIGN_OR_RETURN(const std::vector<uint32_t> sizes, ReadHeader(input, path, kIdxImagesMagic, 3));
  RETURN_IF_ERROR(PayloadBytes(path, sizes, max_pixels).status());
  if (sizes[1] > static_cast<uint32_t>(std::numeric_limits<int>::max()) ||
      sizes[2] > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": image size out of range"));
  }
  IdxImages images;
  images.count = sizes[0];
  images.rows = static_cast<int>(sizes[1]);
  images.columns = static_cast<int>(sizes[2]);
  return images;
}

// OK when `keep` is ascending, distinct and below `count`.
absl::Status CheckKept(const std::string& path, absl::Span<const int64_t> keep, int64_t count) {
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] < 0 || keep[i] >= count || (i > 0 && keep[i] <= keep[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": image ", keep[i], " (entry ", i, " of the images asked for) is ",
                       keep[i] < 0 || keep[i] >= count ? absl::StrCat("not below ", count)
                                                       : "not above the entry before it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path, uint64_t max_pixels) {
  ASSIGN_OR_RETURN(GzipInput input, GzipInput::Open(path));
  ASSIGN_OR_RETURN(IdxImages images, ReadImagesHeader(input, path, max_pixels));
  const uint64_t bytes = PayloadOf(images);
  images.pixels.resize(bytes);
  RETURN_IF_ERROR(input.ReadExactly(
      images.pixels.data(), bytes,
      absl::StrCat(images.count, " images of ", images.rows, "x", images.columns, " pixels")));
  RETURN_IF_ERROR(input.ExpectEnd(kImagesHeaderBytes + bytes));
  return images;
}

absl::StatusOr<IdxImages> ReadIdxImageRows(const std::string& path, uint64_t max_pixels,
                                           absl::Span<const int64_t> keep) {
  ASSIGN_OR_RETURN(GzipInput input, GzipInput::Open(path));
  ASSIGN_OR_RETURN(IdxImages images, ReadImagesHeader(input, path, max_pixels));
  RETURN_IF_ERROR(CheckKept(path, keep, images.count));
  const uint64_t image_bytes = static_cast<uint64_t>(images.pixels_per_image());
  images.pixels.resize(keep.size() * image_bytes);
  const int64_t block_images =
      std::max<int64_t>(1, std::min<int64_t>(images.count, kBlockBytes / image_bytes));
  std::vector<uint8_t> block(static_cast<size_t>(block_images * image_bytes));
  size_t next = 0;  // the next entry of `keep`
  for (int64_t first = 0; first < images.count; first += block_images) {
    const int64_t n = std::min(block_images, images.count - first);
    RETURN_IF_ERROR(input.ReadExactly(
        block.data(), n * image_bytes,
        absl::StrCat("images ", first, " to ", first + n - 1, " of ", images.count, " (",
                     images.rows, "x", images.columns, " pixels)")));
    for (; next < keep.size() && keep[next] < first + n; ++next) {
      std::copy_n(block.data() + (keep[next] - first) * image_bytes, image_bytes,
                  images.pixels.data() + next * image_bytes);
    }
  }
  RETURN_IF_ERROR(input.ExpectEnd(kImagesHeaderBytes + PayloadOf(images)));
  return images;
}

struct IdxImageReader::File {
  std::string path;
  GzipInput input;
};

absl::StatusOr<IdxImageReader> IdxImageReader::Open(const std::string& path, uint64_t max_pixels) {
  ASSIGN_OR_RETURN(GzipInput input, GzipInput::Open(path));
  ASSIGN_OR_RETURN(IdxImages header, ReadImagesHeader(input, path, max_pixels));
  return IdxImageReader(std::make_unique<File>(File{path, std::move(input)}), std::move(header));
}

IdxImageReader::IdxImageReader(std::unique_ptr<File> file, IdxImages header)
    : file_(std::move(file)), header_(std::move(header)) {}
IdxImageReader::IdxImageReader(IdxImageReader&&) noexcept = default;
IdxImageReader& IdxImageReader::operator=(IdxImageReader&&) noexcept = default;
IdxImageReader::~IdxImageReader() = default;

absl::Status IdxImageReader::Next(int64_t images, uint8_t* out) {
  if (images < 0 || images > header_.count - read_) {
    return absl::InvalidArgumentError(absl::StrCat(file_->path, ": ", images, " images asked for, ",
                                                   header_.count - read_, " left"));
  }
  const uint64_t bytes = static_cast<uint64_t>(images * header_.pixels_per_image());
  RETURN_IF_ERROR(file_->input.ReadExactly(
      out, bytes,
      absl::StrCat("images ", read_, " to ", read_ + images - 1, " of ", header_.count, " (",
                   header_.rows, "x", header_.columns, " pixels)")));
  read_ += images;
  return absl::OkStatus();
}

absl::Status IdxImageReader::Finish() {
  if (read_ != header_.count) {
    return absl::FailedPreconditionError(
        absl::StrCat(file_->path, ": ", read_, " of ", header_.count, " images read"));
  }
  return file_->input.ExpectEnd(kImagesHeaderBytes + PayloadOf(header_));
}

absl::StatusOr<IdxImages> ReadIdxImagesHeader(const std::string& path) {
  ASSIGN_OR_RETURN(GzipInput input, GzipInput::Open(path));
  ASSIGN_OR_RETURN(const std::vector<uint32_t> sizes, ReadHeader(input, path, kIdxImagesMagic, 3));
  IdxImages images;
  images.count = sizes[0];
  images.rows = static_cast<int>(std::min<uint32_t>(sizes[1], std::numeric_limits<int>::max()));
  images.columns = static_cast<int>(std::min<uint32_t>(sizes[2], std::numeric_limits<int>::max()));
  return images;
}

absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path, uint64_t max_count) {
  ASSIGN_OR_RETURN(GzipInput input, GzipInput::Open(path));
  ASSIGN_OR_RETURN(const std::vector<uint32_t> sizes, ReadHeader(input, path, kIdxLabelsMagic, 1));
  ASSIGN_OR_RETURN(const uint64_t count, PayloadBytes(path, sizes, max_count));
  std::vector<uint8_t> labels(count);
  RETURN_IF_ERROR(input.ReadExactly(labels.data(), count, absl::StrCat(count, " labels")));
  RETURN_IF_ERROR(input.ExpectEnd(8 + count));
  return labels;
}

}  // namespace ringside::worker
