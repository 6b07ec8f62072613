#include "tests/cli/png_image.h"

#include <zlib.h>

#include <cstdlib>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace ringside::cli::testing {
namespace {

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  return (uint32_t{static_cast<uint8_t>(bytes[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 8) |
         uint32_t{static_cast<uint8_t>(bytes[at + 3])};
}

uint8_t Paeth(int left, int up, int up_left) {
  const int estimate = left + up - up_left;
  const int to_left = std::abs(estimate - left), to_up = std::abs(estimate - up),
            to_up_left = std::abs(estimate - up_left);
  if (to_left <= to_up && to_left <= to_up_left) return left;
  return to_up <= to_up_left ? up : up_left;
}

// Undoes the per-row filters of the PNG spec (section 9) in place; `bpp` bytes per pixel.
absl::Status Unfilter(std::vector<uint8_t>& data, int width, int height, int bpp) {
  const size_t stride = static_cast<size_t>(width) * bpp;
  for (int row = 0; row < height; ++row) {
    uint8_t* line = &data[row * (stride + 1)];
    const uint8_t filter = line[0];
    uint8_t* pixels = line + 1;
    const uint8_t* above = row > 0 ? pixels - (stride + 1) : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int left = i >= static_cast<size_t>(bpp) ? pixels[i - bpp] : 0;
      const int up = above ? above[i] : 0;
      const int up_left = above && i >= static_cast<size_t>(bpp) ? above[i - bpp] : 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          pixels[i] += left;
          break;
        case 2:
          pixels[i] += up;
          break;
        case 3:
          pixels[i] += (left + up) / 2;
          break;
        case 4:
          pixels[i] += Paeth(left, up, up_left);
          break;
        default:
          return absl::InvalidArgumentError(absl::StrCat("PNG row ", row, ": filter ", filter));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RgbImage> DecodePng(const std::string& bytes) {
  if (bytes.size() < 33 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    return absl::InvalidArgumentError("not a PNG file");
  }
  RgbImage image;
  int bpp = 0;
  std::string compressed;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = BigEndian32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + length > bytes.size()) return absl::InvalidArgumentError("truncated PNG chunk");
    const size_t data = at + 8;
    if (type == "IHDR") {
      image.width = static_cast<int>(BigEndian32(bytes, data));
      image.height = static_cast<int>(BigEndian32(bytes, data + 4));
      const int depth = bytes[data + 8], color = bytes[data + 9], interlace = bytes[data + 12];
      if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unsupported PNG: depth ", depth, ", colour type ", color, ", interlace ", interlace));
      }
      bpp = color == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      compressed.append(bytes, data, length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (bpp == 0 || image.width <= 0 || image.height <= 0) {
    return absl::InvalidArgumentError("PNG without a usable IHDR");
  }
  std::vector<uint8_t> raw((static_cast<size_t>(image.width) * bpp + 1) * image.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      raw_size != raw.size()) {
    return absl::InvalidArgumentError("PNG image data does not inflate to its size");
  }
  if (absl::Status status = Unfilter(raw, image.width, image.height, bpp); !status.ok()) {
    return status;
  }
  image.rgb.reserve(static_cast<size_t>(image.width) * image.height * 3);
  for (int row = 0; row < image.height; ++row) {
    const uint8_t* pixels = &raw[row * (static_cast<size_t>(image.width) * bpp + 1) + 1];
    for (int x = 0; x < image.width; ++x) {
      image.rgb.insert(image.rgb.end(), pixels + x * bpp, pixels + x * bpp + 3);
    }
  }
  return image;
}

int64_t CountPixelsNear(const RgbImage& image, uint32_t rgb, int tolerance) {
  const int want[3] = {static_cast<int>(rgb >> 16 & 0xff), static_cast<int>(rgb >> 8 & 0xff),
                       static_cast<int>(rgb & 0xff)};
  int64_t count = 0;
  for (size_t i = 0; i + 2 < image.rgb.size(); i += 3) {
    bool near = true;
    for (int c = 0; c < 3; ++c) near = near && std::abs(image.rgb[i + c] - want[c]) <= tolerance;
    count += near;
  }
  return count;
}

size_t DistinctColors(const RgbImage& image) {
  std::unordered_set<uint32_t> colors;
  for (size_t i = 0; i + 2 < image.rgb.size(); i += 3) {
    colors.insert(uint32_t{image.rgb[i]} << 16 | uint32_t{image.rgb[i + 1]} << 8 |
                  image.rgb[i + 2]);
  }
  return colors.size();
}

}  // namespace ringside::cli::testing
