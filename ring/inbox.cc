#include "ring/inbox.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ringside::ring {
namespace {

uint64_t QueuedCost(const Segment& segment) {
  return segment.payload.size() + kQueuedSegmentOverheadBytes;
}

}  // namespace

RingInbox::RingInbox(RingTopology topology, RingInboxOptions options, LinkReceiveMetrics metrics)
    : options_(options), topology_(topology), metrics_(metrics) {}

void RingInbox::SetTopology(RingTopology topology, LinkReceiveMetrics metrics) {
  absl::MutexLock lock(&mu_);
  topology_ = topology;
  metrics_ = metrics;
  expected_ = Position{};
  for (const Segment& segment : queue_) queued_bytes_ -= QueuedCost(segment);
  queue_.clear();
  std::deque<std::pair<Segment, uint64_t>> held;
  held.swap(held_);
  for (auto& [segment, stream_id] : held) {
    held_bytes_ -= QueuedCost(segment);
    if (segment.header.generation > topology_.generation) {
      held_bytes_ += QueuedCost(segment);
      held_.emplace_back(std::move(segment), stream_id);
    } else if (segment.header.generation == topology_.generation) {
      // A refusal now cannot reach the sender, whose stream was answered; its collective
      // fails by deadline, as it would have if the segment had been lost.
      AcceptCurrent(std::move(segment), stream_id).IgnoreError();
    }
  }
  error_ =
      absl::AbortedError(absl::StrCat("ring topology changed to generation ", topology.generation));
}

void RingInbox::Supersede(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  superseded_by_ = std::max(superseded_by_, generation);
}

uint64_t RingInbox::OpenStream() {
  absl::MutexLock lock(&mu_);
  return next_stream_id_++;
}

std::string RingInbox::LeftName() const { return WorkerName(topology_.left()); }

absl::Status RingInbox::Validate(const SegmentHeader& h, uint64_t payload_bytes) const {
  if (h.generation != topology_.generation) {
    return absl::FailedPreconditionError(absl::StrCat(
        "segment is for generation ", h.generation, " but this worker is in generation ",
        topology_.generation, "; the sender must fetch the current topology"));
  }
  if (h.sender_rank != topology_.left()) {
    return absl::InvalidArgumentError(absl::StrCat("segment from unknown sender rank ",
                                                   h.sender_rank, "; only the left neighbour ",
                                                   LeftName(), " sends to this worker"));
  }
  const size_t element_size = ElementSizeOfNumber(h.dtype);
  if (element_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat("segment has unknown dtype ", h.dtype));
  }
  if (h.total_elements > options_.max_total_elements) {
    return absl::InvalidArgumentError(absl::StrCat("segment announces a buffer of ",
                                                   h.total_elements, " elements, above the limit ",
                                                   options_.max_total_elements));
  }
  const RingSchedule schedule(topology_.world, h.sender_rank);
  if (h.step < 0 || h.step >= schedule.steps()) {
    return absl::InvalidArgumentError(absl::StrCat("segment step ", h.step, " is outside 0..",
                                                   schedule.steps() - 1, " for a ring of ",
                                                   topology_.world));
  }
  if (h.chunk != schedule.Step(h.step).send_chunk) {
    return absl::InvalidArgumentError(absl::StrCat("segment carries chunk ", h.chunk, " at step ",
                                                   h.step, "; the schedule says chunk ",
                                                   schedule.Step(h.step).send_chunk));
  }
  const uint64_t chunk_size = ChunkRanges(h.total_elements, topology_.world)[h.chunk].size();
  if (payload_bytes % element_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("segment payload of ", payload_bytes,
                                                   " bytes is not a whole number of ",
                                                   WireDtypeNumberName(h.dtype), " elements"));
  }
  const uint64_t elements = payload_bytes / element_size;
  if (h.offset > chunk_size || elements > chunk_size - h.offset ||
      (elements == 0 && chunk_size != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment of ", elements, " elements at offset ", h.offset, " does not fit chunk ", h.chunk,
        " of ", chunk_size, " elements (buffer of ", h.total_elements, ")"));
  }
  return ValidateSequence(h);
}

absl::Status RingInbox::ValidateSequence(const SegmentHeader& h) const {
  const bool starts_collective = h.step == 0 && h.offset == 0;
  if (h.collective < expected_.collective) {
    return absl::FailedPreconditionError(
        absl::StrCat("segment is for collective ", h.collective, ", already finished or abandoned;",
                     " this worker expects collective ", expected_.collective));
  }
  if (h.collective > expected_.collective || expected_.at_collective_start) {
    if (!starts_collective) {
      return absl::FailedPreconditionError(
          absl::StrCat("segment for collective ", h.collective, " step ", h.step, " offset ",
                       h.offset, " arrived before that collective's first segment"));
    }
    return absl::OkStatus();
  }
  if (h.step != expected_.step || h.offset != expected_.offset) {
    return absl::FailedPreconditionError(
        absl::StrCat("segment for step ", h.step, " offset ", h.offset, " arrived, but collective ",
                     h.collective, " is at step ", expected_.step, " offset ", expected_.offset));
  }
  if (h.total_elements != expected_.total_elements) {
    return absl::InvalidArgumentError(absl::StrCat("segment announces ", h.total_elements,
                                                   " elements, but collective ", h.collective,
                                                   " started with ", expected_.total_elements));
  }
  return absl::OkStatus();
}

void RingInbox::Advance(const SegmentHeader& h, uint64_t elements) {
  const uint64_t chunk_size = ChunkRanges(h.total_elements, topology_.world)[h.chunk].size();
  expected_.at_collective_start = false;
  expected_.collective = h.collective;
  expected_.total_elements = h.total_elements;
  expected_.step = h.step;
  expected_.offset = h.offset + elements;
  if (expected_.offset >= chunk_size) {
    expected_.step += 1;
    expected_.offset = 0;
    if (expected_.step == 2 * (topology_.world - 1)) {
      expected_ = Position{true, h.collective + 1, 0, 0, 0};
    }
  }
}

absl::Status RingInbox::Accept(Segment segment, uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  if (segment.header.generation > topology_.generation) {
    // Held apart from the current generation's queue, under a cap of its own: segments of a
    // generation this worker has not reached can never starve the one it is in.
    if (held_bytes_ + QueuedCost(segment) > options_.max_held_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "receiver holds ", held_bytes_, " bytes of generations it has not reached (limit ",
          options_.max_held_bytes, "); a segment of generation ", segment.header.generation,
          " is refused while it is in generation ", topology_.generation));
    }
    held_bytes_ += QueuedCost(segment);
    held_.emplace_back(std::move(segment), stream_id);
    return absl::OkStatus();
  }
  return AcceptCurrent(std::move(segment), stream_id);
}

absl::Status RingInbox::QueueFull() const {
  return absl::ResourceExhaustedError(
      absl::StrCat("receiver has ", queued_bytes_, " bytes queued; the sender ", LeftName(),
                   " is too far ahead (limit ", options_.max_queued_bytes, ")"));
}

absl::Status RingInbox::AcceptCurrent(Segment segment, uint64_t stream_id) {
  const SegmentHeader& h = segment.header;
  absl::Status status = Validate(h, segment.payload.size());
  if (status.ok() && queued_bytes_ + QueuedCost(segment) > options_.max_queued_bytes) {
    status = QueueFull();
  }
  if (!status.ok()) {
    // A left-over of an older generation (a former neighbour still flushing) is refused without
    // failing the current collective: it says nothing about the current left neighbour.
    if (h.generation >= topology_.generation) {
      error_ =
          absl::Status(status.code(), absl::StrCat("from ", LeftName(), ": ", status.message()));
    }
    return status;
  }
  latest_stream_ = stream_id;
  const uint64_t elements = segment.payload.size() / ElementSizeOfNumber(h.dtype);
  Advance(h, elements);
  if (metrics_.bytes != nullptr && !h.control) metrics_.bytes->Increment(segment.payload.size());
  queued_bytes_ += QueuedCost(segment);
  queue_.push_back(std::move(segment));
  return absl::OkStatus();
}

void RingInbox::StreamEnded(uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  if (stream_id != latest_stream_ || expected_.at_collective_start) return;
  error_ = absl::UnavailableError(absl::StrCat(
      "the stream from ", LeftName(), " ended midway through collective ", expected_.collective,
      " at step ", expected_.step, "; is that worker still running?"));
}

void RingInbox::BeginCollective(uint64_t collective) {
  absl::MutexLock lock(&mu_);
  error_ = absl::OkStatus();
  while (!queue_.empty() && queue_.front().header.collective < collective) {
    queued_bytes_ -= QueuedCost(queue_.front());
    queue_.pop_front();
  }
  if (expected_.collective < collective) expected_ = Position{true, collective, 0, 0, 0};
}

void RingInbox::Fail(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (error_.ok()) error_ = status;
}

absl::StatusOr<Segment> RingInbox::Next(uint64_t collective, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || !error_.ok() || superseded_by_ > topology_.generation;
  };
  while (true) {
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("no segment from ", LeftName(), " for collective ", collective,
                       " before the deadline; is that worker alive and in the same collective?"));
    }
    if (superseded_by_ > topology_.generation) {
      return absl::AbortedError(absl::StrCat("generation ", topology_.generation,
                                             " was superseded by generation ", superseded_by_,
                                             "; the collective is abandoned"));
    }
    if (queue_.empty()) return error_;
    const uint64_t front_collective = queue_.front().header.collective;
    if (front_collective > collective) {
      return absl::FailedPreconditionError(
          absl::StrCat(LeftName(), " has moved on to collective ", front_collective,
                       " while this worker is in collective ", collective));
    }
    Segment segment = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= QueuedCost(segment);
    if (front_collective < collective) continue;  // left over from an abandoned collective
    return segment;
  }
}

uint64_t RingInbox::queued_bytes() const {
  absl::MutexLock lock(&mu_);
  return queued_bytes_;
}

}  // namespace ringside::ring
