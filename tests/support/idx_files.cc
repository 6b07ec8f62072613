#include "tests/support/idx_files.h"

#include <zlib.h>

#include <fstream>
#include <random>

namespace ringside::testing {
namespace {

void AppendBigEndian(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(value >> shift));
}

// One split of WriteTinyFashionMnist's data.
bool WriteSplit(const std::string& dir, const std::string& split, int count, int rows, int columns,
                std::mt19937& random) {
  std::vector<uint8_t> pixels, labels;
  std::uniform_int_distribution<int> noise(0, 60);
  const int pixels_per_image = rows * columns;
  for (int i = 0; i < count; ++i) {
    const int label = i % 10;
    labels.push_back(static_cast<uint8_t>(label));
    for (int p = 0; p < pixels_per_image; ++p) {
      // Each label lights its own pixels: p*10/pixels_per_image == label, plus noise everywhere.
      const bool lit = p * 10 / pixels_per_image == label;
      pixels.push_back(static_cast<uint8_t>((lit ? 180 : 0) + noise(random)));
    }
  }
  return WriteGzipFile(dir + "/" + split + "-images-idx3-ubyte.gz",
                       IdxImagesBytes(count, rows, columns, pixels)) &&
         WriteGzipFile(dir + "/" + split + "-labels-idx1-ubyte.gz", IdxLabelsBytes(labels));
}

}  // namespace

std::string IdxImagesBytes(uint32_t count, uint32_t rows, uint32_t columns,
                           const std::vector<uint8_t>& pixels) {
  std::string out;
  AppendBigEndian(out, 0x00000803);
  AppendBigEndian(out, count);
  AppendBigEndian(out, rows);
  AppendBigEndian(out, columns);
  out.append(pixels.begin(), pixels.end());
  return out;
}

std::string IdxLabelsBytes(const std::vector<uint8_t>& labels) {
  std::string out;
  AppendBigEndian(out, 0x00000801);
  AppendBigEndian(out, static_cast<uint32_t>(labels.size()));
  out.append(labels.begin(), labels.end());
  return out;
}

bool WriteGzipFile(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const bool written =
      bytes.empty() || gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                           static_cast<int>(bytes.size());
  return gzclose(file) == Z_OK && written;
}

bool WritePlainFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out.flush());
}

bool WriteTinyFashionMnist(const std::string& dir, int train, int test, int rows, int columns,
                           uint64_t seed) {
  std::mt19937 random(static_cast<uint32_t>(seed));
  return WriteSplit(dir, "train", train, rows, columns, random) &&
         WriteSplit(dir, "t10k", test, rows, columns, random);
}

}  // namespace ringside::testing
