// Small Fashion-MNIST-style data sets for tests: IDX files written by the test itself (gzipped
// through zlib, or not), so no test needs the real 60,000 images, and broken ones on purpose.
#ifndef RINGSIDE_TESTS_SUPPORT_IDX_FILES_H_
#define RINGSIDE_TESTS_SUPPORT_IDX_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::testing {

// The bytes of an IDX images file (magic 0x00000803, count, rows, columns, pixels) and of a
// labels file (0x00000801, count, labels). `pixels` may be shorter or longer than the header
// says: broken files are made this way.
std::string IdxImagesBytes(uint32_t count, uint32_t rows, uint32_t columns,
                           const std::vector<uint8_t>& pixels);
std::string IdxLabelsBytes(const std::vector<uint8_t>& labels);
// `bytes` gzipped into `path` (zlib); false when it cannot be written.
bool WriteGzipFile(const std::string& path, const std::string& bytes);
bool WritePlainFile(const std::string& path, const std::string& bytes);

// A learnable 10-class set of `rows`x`columns` images in `dir` under Fashion-MNIST's four file
// names (gzipped): image i has label i % 10 and bright pixels in a band that depends on its
// label, with seeded noise. `train` and `test` images. True when every file was written.
bool WriteTinyFashionMnist(const std::string& dir, int train, int test, int rows = 4,
                           int columns = 5, uint64_t seed = 7);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_IDX_FILES_H_
