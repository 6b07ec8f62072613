#include "bench/codec_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/compression.h"
#include "common/cost_model.h"
#include "common/counter_rng.h"
#include "common/error_feedback.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "ring/powersgd_sum.h"

namespace ringside::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `round` (one pass over the whole gradient) until `min_seconds` have passed, at least once.
template <typename Round>
CodecBenchRecord Time(const std::string& name, uint64_t elements, double min_seconds, Round round) {
  CodecBenchRecord record;
  record.codec = name;
  const Clock::time_point start = Clock::now();
  do {
    round();
    ++record.rounds;
    record.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (record.seconds < min_seconds);
  record.nanoseconds_per_element =
      1e9 * record.seconds / (static_cast<double>(record.rounds) * static_cast<double>(elements));
  return record;
}

// PowerSGD, which is no segment codec: one rank's step (both factors, the residual and the sum
// rebuilt; the allreduces of one worker leave the buffers as they are) on one matrix of 1024
// columns and about `elements` elements, so per element it is comparable with the codecs'.
absl::StatusOr<CodecBenchRecord> TimePowerSgd(const std::string& text, int rank,
                                              const CodecBenchOptions& options) {
  const int rows = static_cast<int>(std::max<uint64_t>(1, options.elements / 1024));
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Create({rows, 1024}, Activation::kRelu));
  std::vector<float> share(spec.parameter_count()), gradient(spec.parameter_count());
  for (size_t i = 0; i < share.size(); ++i) {
    share[i] = static_cast<float>(CounterNormal(options.seed, RngStream::kParameters, i));
  }
  ring::PowerSgdRingSum power(rank, /*warmup_steps=*/0, options.seed, spec);
  int64_t step = 0;
  absl::Status summed = absl::OkStatus();
  CodecBenchRecord record = Time(text, spec.parameter_count(), options.min_seconds, [&] {
    std::copy(share.begin(), share.end(), gradient.begin());
    const absl::Status status = power.Sum(step++, absl::MakeSpan(gradient),
                                          [](int, absl::Span<float>) { return absl::OkStatus(); });
    if (!status.ok()) summed = status;
  });
  RETURN_IF_ERROR(summed);
  const ring::PowerSgdLayout& layout = power.layout();
  record.bytes_per_element = 4.0 *
                             static_cast<double>(layout.first_elements + layout.second_elements) /
                             static_cast<double>(spec.parameter_count());
  return record;
}

}  // namespace

absl::Status ValidateCodecBenchOptions(const CodecBenchOptions& options) {
  if (options.elements == 0 || options.segment_elements == 0 ||
      options.segment_elements > (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        "--elements must be positive and --segment_elements in [1, 2^31]");
  }
  if (!(options.min_seconds >= 0)) {
    return absl::InvalidArgumentError("--codec_seconds must be 0 (one round) or more");
  }
  for (const std::string& codec : options.codecs) {
    ASSIGN_OR_RETURN(const Compression compression, ParseCompression(codec));
    if (compression.kind == CompressionKind::kNone) {
      return absl::InvalidArgumentError("--codecs: none is the copy, always measured");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CodecBenchRecord>> MeasureCodecs(const CodecBenchOptions& options) {
  RETURN_IF_ERROR(ValidateCodecBenchOptions(options));
  std::vector<float> gradient(options.elements);
  for (size_t i = 0; i < gradient.size(); ++i) {
    gradient[i] = static_cast<float>(CounterNormal(options.seed, RngStream::kParameters, i));
  }
  std::vector<CodecBenchRecord> records;
  std::vector<float> copy(options.elements);
  records.push_back(Time("copy", options.elements, options.min_seconds, [&] {
    std::memcpy(copy.data(), gradient.data(), gradient.size() * sizeof(float));
  }));
  records.back().bytes_per_element = 4;
  const std::vector<uint64_t> segments = SegmentLengths(options.elements, options.segment_elements);
  // Error feedback's add alone, segment by segment as every codec below makes it: their floor.
  ErrorFeedback added(options.elements);
  records.push_back(Time("ef-add", options.elements, options.min_seconds, [&] {
    uint64_t at = 0;
    for (const uint64_t n : segments) {
      added.Add(at, absl::MakeConstSpan(gradient).subspan(at, n));
      at += n;
    }
  }));  // sends nothing: no bytes per element
  for (const std::string& text : options.codecs) {
    const Compression compression = *ParseCompression(text);
    if (compression.kind == CompressionKind::kPowerSgd) {
      ASSIGN_OR_RETURN(CodecBenchRecord record, TimePowerSgd(text, compression.rank, options));
      records.push_back(record);
      continue;
    }
    const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(compression);
    ErrorFeedback feedback(options.elements);
    std::string wire(codec->EncodedBytes(options.segment_elements), '\0');
    std::vector<float> sum(options.elements, 0.0f);
    int64_t step = 0;
    absl::Status decoded = absl::OkStatus();
    CodecBenchRecord record = Time(text, options.elements, options.min_seconds, [&] {
      uint64_t at = 0;
      for (const uint64_t n : segments) {
        const SegmentKey key{options.seed, step, at};
        const auto share = absl::MakeConstSpan(gradient).subspan(at, n);
        feedback.Encode(*codec, key, at, share, wire.data());
        const absl::Status status =
            codec->DecodeAdd(key, absl::string_view(wire.data(), codec->EncodedBytes(n)),
                             absl::MakeSpan(sum).subspan(at, n));
        if (!status.ok()) decoded = status;
        at += n;
      }
      ++step;
    });
    RETURN_IF_ERROR(decoded);  // a codec refusing its own payload is a bug, said so
    record.bytes_per_element = static_cast<double>(CompressedLinkBytes(*codec, segments)) /
                               static_cast<double>(options.elements);
    records.push_back(record);
  }
  for (CodecBenchRecord& record : records) {
    record.times_copy = record.nanoseconds_per_element / records.front().nanoseconds_per_element;
  }
  return records;
}

absl::Status RunCodecBench(const CodecBenchOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::vector<CodecBenchRecord> records, MeasureCodecs(options));
  out << absl::StrFormat("%llu elements in segments of %llu; encode + error update + decode:\n",
                         static_cast<unsigned long long>(options.elements),
                         static_cast<unsigned long long>(options.segment_elements));
  out << absl::StrFormat("%-14s %8s %12s %10s %12s\n", "codec", "rounds", "ns/element", "x copy",
                         "bytes/elem");
  for (const CodecBenchRecord& record : records) {
    out << absl::StrFormat("%-14s %8d %12.3f %10.2f %12.4f\n", record.codec, record.rounds,
                           record.nanoseconds_per_element, record.times_copy,
                           record.bytes_per_element);
  }
  return absl::OkStatus();
}

}  // namespace ringside::bench
