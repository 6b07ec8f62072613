// Test support: decoding a screenshot PNG into RGB pixels (8-bit RGB or RGBA, non-interlaced:
// what Chromium writes), so a test can check what a browser actually painted.
// Errors: INVALID_ARGUMENT for anything that is not such a PNG.
#ifndef RINGSIDE_TESTS_CLI_PNG_IMAGE_H_
#define RINGSIDE_TESTS_CLI_PNG_IMAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringside::cli::testing {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel (alpha dropped)
};

absl::StatusOr<RgbImage> DecodePng(const std::string& bytes);

// Pixels within `tolerance` of 0xRRGGBB on every channel.
int64_t CountPixelsNear(const RgbImage& image, uint32_t rgb, int tolerance);
// Distinct colours in the image.
size_t DistinctColors(const RgbImage& image);

}  // namespace ringside::cli::testing

#endif  // RINGSIDE_TESTS_CLI_PNG_IMAGE_H_
