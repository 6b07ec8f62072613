// A parameter-server shard's state hand-over (Load) under arbitrary streams: PsStateSegment
// messages, either parsed from raw bytes or built to fit the shard with one field or another
// wrong (huge `workers`, wrong sizes, offsets, steps), fed to a StateLoad (server/ps/ps_service.h:
// what the Load reactor does, without gRPC) on a ParameterShardService, with the controller's new
// assignments (SetJob) arriving between segments as they may.
//
// Checks, besides the sanitizers (and libFuzzer's -malloc_limit_mb: a header must never size an
// allocation): every refusal is INVALID_ARGUMENT or FAILED_PRECONDITION; a load that succeeds
// serves exactly its header's generation, workers and step over the shard's current range, and
// never an older generation than the one served before.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/optimizer.h"
#include "proto/ps.pb.h"
#include "server/ps/ps_service.h"
#include "server/ps/shard_state.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

using server::ParameterShardService;
using server::ShardJob;
using server::StateLoad;

ShardJob Job(uint64_t begin, uint64_t size, uint8_t kind) {
  ShardJob job;
  job.shard = 0;
  job.range = {begin, begin + size};
  job.optimizer.kind = static_cast<OptimizerKind>(kind % 3);
  job.generation = 255;  // every fuzzed header's generation (one byte) is assigned
  return job;
}

uint64_t StateElements(const ShardJob& job) {
  return job.range.size() + Optimizer::StateSize(job.optimizer.kind, job.range.size());
}

// Element `i` of a state that restores: parameters 1, then the optimiser state of `step` steps
// with zero moments (Optimizer::ExportState's layout).
float ConsistentElement(uint64_t i, uint64_t range, uint64_t step) {
  if (i < range) return 1.0f;
  return i == range ? static_cast<float>(step) : 0.0f;
}

// A load that keeps the served state (PsStateSegment.keep_served_state) of a shard that holds
// none is NOT_FOUND, as ps.proto says.
void CheckRefusal(const absl::Status& status, const char* call) {
  FUZZ_CHECK(status.ok() || absl::IsInvalidArgument(status) || absl::IsFailedPrecondition(status) ||
                 absl::IsNotFound(status),
             "%s: %s", call, status.ToString().c_str());
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace op = ps_load_ops;
  FuzzReader in(data, size);
  const uint8_t flags = in.Byte();
  const uint64_t begin = in.Byte(), range = in.Byte() % 12;
  std::optional<ShardJob> job;
  if (flags & 1) job = Job(begin, range, in.Byte());

  ParameterShardService service(/*segment_bytes=*/64);
  if (job) service.SetJob(*job);
  uint64_t served_generation = 0;
  if (flags & 2) {  // a generation already served: a Load of an older one is refused
    served_generation = in.Byte() % 4;
    absl::StatusOr<std::unique_ptr<server::ShardState>> state = server::ShardState::Create(
        {served_generation, 1, 0}, std::vector<float>(range), OptimizerConfig{});
    FUZZ_CHECK(state.ok(), "%s", state.status().ToString().c_str());
    server::ShardGeneration generation;
    generation.shard = server::Shard::Synchronous(*std::move(state));
    service.Serve(std::move(generation));
  }

  auto load = std::make_unique<StateLoad>(service);
  std::optional<proto::PsStateSegment> first;  // of the load in progress, once accepted
  uint64_t received = 0;
  auto restart = [&] {  // the stream ended: the next segment opens a new load
    load = std::make_unique<StateLoad>(service);
    first.reset();
    received = 0;
  };
  auto add = [&](const proto::PsStateSegment& segment) {
    const absl::Status status = load->Add(segment);
    CheckRefusal(status, "Add");
    if (!status.ok()) {
      restart();  // the reactor finishes the stream with the refusal
      return;
    }
    if (!first) {
      first = segment;
      FUZZ_CHECK(job && segment.state_elements() == StateElements(*job) && segment.workers() >= 1 &&
                     segment.workers() <= server::kMaxLoadWorkers,
                 "a load of %lu elements for %u workers began", segment.state_elements(),
                 segment.workers());
    }
    received += segment.payload().size() / sizeof(float);
  };

  while (!in.empty()) {
    switch (in.Byte() % op::kCount) {
      case op::kRawSegment: {
        proto::PsStateSegment segment;
        if (segment.ParseFromString(in.Bytes(in.Uint(2) % 512))) add(segment);
        break;
      }
      case op::kHeaderSegment: {
        proto::PsStateSegment segment;
        if (first) {
          segment = *first;
          segment.clear_payload();
        } else {
          segment.set_generation(in.Byte());
          segment.set_workers(static_cast<uint32_t>(in.Uint(4)));
          segment.set_step(in.Byte() % 8);
          if (job) {
            segment.set_range_begin(job->range.begin);
            segment.set_range_elements(job->range.size());
            segment.set_state_elements(StateElements(*job));
          }
        }
        const uint8_t wrong = in.Byte();
        if (wrong & 1) segment.set_range_begin(segment.range_begin() + 1);
        if (wrong & 2) segment.set_range_elements(segment.range_elements() + 1);
        if (wrong & 4) segment.set_state_elements(segment.state_elements() + 1);
        segment.set_offset(received + ((wrong & 8) ? 1 : 0));
        const uint64_t elements = in.Byte() % 16;
        if (wrong & 16) {
          segment.set_payload(in.Bytes(elements * sizeof(float)));
        } else {
          std::string payload(elements * sizeof(float), '\0');
          for (uint64_t i = 0; i < elements; ++i) {
            const float value =
                ConsistentElement(received + i, segment.range_elements(), segment.step());
            std::memcpy(&payload[i * sizeof(float)], &value, sizeof(float));
          }
          segment.set_payload(payload);
        }
        add(segment);
        break;
      }
      case op::kFinish: {
        const absl::Status status = load->Finish();
        CheckRefusal(status, "Finish");
        if (status.ok()) {
          FUZZ_CHECK(first.has_value(), "a load with no segment succeeded");
          const auto current = service.current();
          FUZZ_CHECK(current != nullptr, "a load succeeded and nothing is served");
          server::ShardState& state = *current->shard->steps();
          FUZZ_CHECK(state.config().generation == first->generation() &&
                         state.config().workers == static_cast<int>(first->workers()) &&
                         state.current_step() == first->step(),
                     "serving generation %lu, %d workers, step %lu after a load of %lu, %u, %lu",
                     state.config().generation, state.config().workers, state.current_step(),
                     first->generation(), first->workers(), first->step());
          FUZZ_CHECK(job && state.range_elements() == job->range.size(),
                     "serving a range of %lu elements; the shard's job has %lu",
                     state.range_elements(), job ? job->range.size() : 0);
          FUZZ_CHECK(state.config().generation >= served_generation,
                     "generation %lu served after generation %lu", state.config().generation,
                     served_generation);
          served_generation = state.config().generation;
        }
        restart();
        break;
      }
      case op::kSetJob: {
        const uint64_t new_begin = in.Byte(), new_range = in.Byte() % 12;
        job = Job(new_begin, new_range, in.Byte());
        service.SetJob(*job);
        break;
      }
    }
  }
  return 0;
}
