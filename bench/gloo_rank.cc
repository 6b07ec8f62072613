#include "bench/gloo_rank.h"

#include <sys/socket.h>

#include <chrono>
#include <climits>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

#ifdef RINGSIDE_HAVE_GLOO
#include "gloo/allreduce.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/barrier.h"
#include "gloo/common/error.h"
#include "gloo/common/logging.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#endif

namespace ringside::bench {

absl::string_view GlooAlgorithmName(GlooAlgorithm algorithm) {
  switch (algorithm) {
    case GlooAlgorithm::kAllreduceRing:
      return "ring";
    case GlooAlgorithm::kRingChunked:
      return "ring_chunked";
  }
  return "unknown";
}

absl::StatusOr<GlooAlgorithm> ParseGlooAlgorithm(absl::string_view text) {
  for (GlooAlgorithm algorithm : {GlooAlgorithm::kAllreduceRing, GlooAlgorithm::kRingChunked}) {
    if (text == GlooAlgorithmName(algorithm)) return algorithm;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown Gloo algorithm '", text, "' (expected ring or ring_chunked)"));
}

absl::Status ValidateGlooRankOptions(const GlooRankOptions& options) {
  if (options.world < 1) return absl::InvalidArgumentError("world must be >= 1");
  if (options.rank < 0 || options.rank >= options.world) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", options.rank, " is outside [0, ", options.world, ")"));
  }
  if (options.store_dir.empty()) return absl::InvalidArgumentError("store_dir is empty");
  // AllreduceRingChunked counts elements in an int.
  if (options.elements < 1 || options.elements > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("elements must be in [1, ", INT_MAX, "], got ", options.elements));
  }
  if (options.iters < 1) return absl::InvalidArgumentError("iters must be >= 1");
  if (options.warmup < 0) return absl::InvalidArgumentError("warmup must be >= 0");
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout must be positive");
  }
  return absl::OkStatus();
}

#ifdef RINGSIDE_HAVE_GLOO

bool HaveGloo() { return true; }

namespace {

// Everything that may throw. Locals (context, device, algorithm buffers) are destroyed before
// the caller's catch handlers run, so exceptions from Gloo's destructors are caught too.
RankResult RunGlooRankOrThrow(const GlooRankOptions& options) {
  const auto timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout));

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback only: the benchmark never leaves this machine
  attr.ai_family = AF_INET;
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);

  gloo::rendezvous::FileStore store(options.store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world);
  context->setTimeout(timeout);  // before connecting: pairs take their timeout from the context
  context->connectFullMesh(store, device);

  std::vector<float> data(options.elements);
  std::function<void()> allreduce;
  std::unique_ptr<gloo::AllreduceRingChunked<float>> chunked;
  switch (options.algorithm) {
    case GlooAlgorithm::kAllreduceRing:
      // Built per call, as ProcessGroupGloo does for each allreduce.
      allreduce = [&] {
        gloo::AllreduceOptions opts(context);
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        opts.setOutput(data.data(), data.size());
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
        opts.setTag(0);
        opts.setTimeout(timeout);
        gloo::allreduce(opts);
      };
      break;
    case GlooAlgorithm::kRingChunked:
      // The algorithm object binds its buffers to `data` once and is rerun.
      chunked = std::make_unique<gloo::AllreduceRingChunked<float>>(
          context, std::vector<float*>{data.data()}, static_cast<int>(options.elements));
      allreduce = [&] { chunked->run(); };
      break;
  }
  const RankResult result = RunTimedIterations(options.rank, options.world, options.warmup,
                                               options.iters, absl::MakeSpan(data), allreduce);
  // No rank closes its connections while another may still be finishing its last operation
  // (seen: "Connection closed by peer" in the last AllreduceRingChunked of a 2-rank run).
  gloo::BarrierOptions barrier(context);
  barrier.setTimeout(timeout);
  gloo::barrier(barrier);
  return result;
}

}  // namespace

absl::StatusOr<RankResult> RunGlooRank(const GlooRankOptions& options) {
  if (absl::Status status = ValidateGlooRankOptions(options); !status.ok()) return status;
  const std::string where = absl::StrCat("gloo ", GlooAlgorithmName(options.algorithm), " rank ",
                                         options.rank, "/", options.world);
  try {
    return RunGlooRankOrThrow(options);
  } catch (const gloo::EnforceNotMet& e) {
    return absl::InternalError(absl::StrCat(where, ": Gloo check failed: ", e.what()));
  } catch (const gloo::Exception& e) {
    return absl::InternalError(absl::StrCat(where, ": Gloo error: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(where, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(where, ": unknown exception"));
  }
}

#else  // !RINGSIDE_HAVE_GLOO

bool HaveGloo() { return false; }

absl::StatusOr<RankResult> RunGlooRank(const GlooRankOptions& options) {
  return absl::UnimplementedError("this ringside-bench was built without Gloo (libgloo-dev)");
}

#endif  // RINGSIDE_HAVE_GLOO

}  // namespace ringside::bench
