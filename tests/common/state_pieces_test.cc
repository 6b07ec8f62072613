// Pieces of [parameters..., optimiser state...] (common/state_pieces.h): read and written at
// every offset and length, including pieces that straddle the two parts, against the state laid
// out in one vector.
#include "common/state_pieces.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ringside {
namespace {

constexpr uint64_t kParameters = 5;
constexpr uint64_t kState = 7;

std::vector<float> Whole() {
  std::vector<float> whole(kParameters + kState);
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = 1.5f + static_cast<float>(i);
  return whole;
}

TEST(StatePiecesTest, SplitPlacesEveryPieceInItsParts) {
  EXPECT_EQ(SplitStatePiece(1, 3, kParameters).in_parameters, 3u);
  EXPECT_EQ(SplitStatePiece(1, 3, kParameters).in_state, 0u);
  const StatePieceSplit straddling = SplitStatePiece(3, 4, kParameters);
  EXPECT_EQ(straddling.in_parameters, 2u);
  EXPECT_EQ(straddling.in_state, 2u);
  EXPECT_EQ(straddling.state_offset, 0u);
  const StatePieceSplit past = SplitStatePiece(8, 3, kParameters);
  EXPECT_EQ(past.in_parameters, 0u);
  EXPECT_EQ(past.in_state, 3u);
  EXPECT_EQ(past.state_offset, 3u);
}

TEST(StatePiecesTest, EveryPieceReadsAndWritesWhatTheWholeStateHolds) {
  const std::vector<float> whole = Whole();
  const absl::Span<const float> parameters = absl::MakeConstSpan(whole).first(kParameters);
  const absl::Span<const float> state = absl::MakeConstSpan(whole).subspan(kParameters);
  const StatePieceReader read = StatePiecesOf(parameters, state);
  for (uint64_t offset = 0; offset < whole.size(); ++offset) {
    for (uint64_t count = 1; offset + count <= whole.size(); ++count) {
      std::vector<float> piece(count, -1.0f);
      read(offset, absl::MakeSpan(piece));
      EXPECT_EQ(piece, std::vector<float>(whole.begin() + offset, whole.begin() + offset + count))
          << "read at " << offset << " of " << count;

      std::vector<float> to_parameters(kParameters, 0.0f), to_state(kState, 0.0f);
      WriteStatePiece(offset, reinterpret_cast<const char*>(piece.data()), count,
                      absl::MakeSpan(to_parameters), absl::MakeSpan(to_state));
      for (uint64_t i = 0; i < whole.size(); ++i) {
        const float written = i < kParameters ? to_parameters[i] : to_state[i - kParameters];
        const bool in_piece = i >= offset && i < offset + count;
        EXPECT_EQ(written, in_piece ? whole[i] : 0.0f)
            << "element " << i << " after a write at " << offset << " of " << count;
      }
    }
  }
}

}  // namespace
}  // namespace ringside
