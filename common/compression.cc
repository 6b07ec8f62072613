#include "common/compression.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/randomk_codec.h"
#include "common/sign_codec.h"
#include "common/topk_codec.h"

namespace ringside {
namespace {

absl::Status BadCompression(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat("compression \"", text.substr(0, 32),
                                                 "\" is not none, topk:F, sign, randomk:F (F a "
                                                 "fraction in (0, 1], e.g. 0.01) or powersgd:R (R ",
                                                 "an integer from 1 to ", kMaxPowerSgdRank, ")"));
}

std::string FractionText(float fraction) {
  for (int digits = 1; digits < 9; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, fraction);
    float back = 0;
    if (absl::SimpleAtof(text, &back) && back == fraction) return text;
  }
  return absl::StrFormat("%.9g", fraction);
}

}  // namespace

absl::StatusOr<Compression> ParseCompression(absl::string_view text) {
  if (text == "none") return Compression{};
  if (text == "sign") return Compression{CompressionKind::kSign, 1};
  Compression compression;
  absl::string_view fraction_text = text;
  if (absl::ConsumePrefix(&fraction_text, "powersgd:")) {
    compression.kind = CompressionKind::kPowerSgd;
    if (!absl::SimpleAtoi(fraction_text, &compression.rank) || compression.rank < 1 ||
        compression.rank > kMaxPowerSgdRank) {
      return BadCompression(text);
    }
    return compression;
  }
  if (absl::ConsumePrefix(&fraction_text, "topk:")) {
    compression.kind = CompressionKind::kTopK;
  } else if (absl::ConsumePrefix(&fraction_text, "randomk:")) {
    compression.kind = CompressionKind::kRandomK;
  } else {
    return BadCompression(text);
  }
  if (!absl::SimpleAtof(fraction_text, &compression.fraction) ||
      !(compression.fraction > 0 && compression.fraction <= 1)) {
    return BadCompression(text);
  }
  return compression;
}

std::string CompressionText(const Compression& compression) {
  switch (compression.kind) {
    case CompressionKind::kTopK:
      return "topk:" + FractionText(compression.fraction);
    case CompressionKind::kSign:
      return "sign";
    case CompressionKind::kRandomK:
      return "randomk:" + FractionText(compression.fraction);
    case CompressionKind::kPowerSgd:
      return absl::StrCat("powersgd:", compression.rank);
    case CompressionKind::kNone:
      break;
  }
  return "none";
}

bool SummableInRing(CompressionKind kind) {
  return kind == CompressionKind::kNone || kind == CompressionKind::kRandomK ||
         kind == CompressionKind::kPowerSgd;
}

absl::Status CheckCompressionFitsMode(const Compression& compression, SyncMode mode) {
  if (mode == SyncMode::kRing && !SummableInRing(compression.kind)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--compression=", CompressionText(compression),
        " does not fit ring mode: each worker's indices or scales are its own, so a ring hop "
        "cannot add two payloads; ring mode takes none, randomk:F or powersgd:R"));
  }
  if (mode == SyncMode::kPs && (compression.kind == CompressionKind::kRandomK ||
                                compression.kind == CompressionKind::kPowerSgd)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--compression=", CompressionText(compression),
        " does not fit ps mode: it is the ring's (its payloads add hop by hop); ps mode takes "
        "none, topk:F or sign"));
  }
  return absl::OkStatus();
}

std::unique_ptr<GradientCodec> MakeGradientCodec(const Compression& compression) {
  switch (compression.kind) {
    case CompressionKind::kTopK:
      return MakeTopKCodec(compression.fraction);
    case CompressionKind::kSign:
      return MakeSignCodec();
    case CompressionKind::kRandomK:
      return MakeRandomKCodec(compression.fraction);
    case CompressionKind::kPowerSgd:
    case CompressionKind::kNone:
      break;
  }
  return nullptr;
}

}  // namespace ringside
