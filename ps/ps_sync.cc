#include "ps/ps_sync.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"

namespace ringside::worker {

absl::StatusOr<std::unique_ptr<PsSync>> PsSync::Create(const PsSyncOptions& options,
                                                       uint64_t parameters, Metrics* metrics) {
  if (options.shards.empty()) {
    return absl::InvalidArgumentError("--ps: give every shard's address, in shard order");
  }
  std::unique_ptr<PsSync> sync(new PsSync(options));
  const std::vector<ElementRange> ranges =
      EvenRanges(parameters, static_cast<int>(options.shards.size()));
  for (size_t s = 0; s < options.shards.size(); ++s) {
    ShardLink link;
    link.address = options.shards[s];
    link.range = ranges[s];
    link.stub = proto::ParameterShard::NewStub(MakeChannel(link.address));
    if (metrics != nullptr) {
      const std::string me = WorkerName(options.rank), shard = PsShardName(static_cast<int>(s));
      link.send = metrics->LinkSend(me, shard, SyncMode::kPs);
      link.receive = metrics->LinkReceive(shard, me, SyncMode::kPs);
    }
    sync->links_.push_back(std::move(link));
  }
  return sync;
}

PsSync::InFlight::InFlight(PsSync& sync, grpc::ClientContext& context)
    : sync_(sync), context_(context) {
  absl::MutexLock lock(&sync_.mu_);
  sync_.in_flight_.insert(&context_);
  if (sync_.cancelled_) context_.TryCancel();
}

PsSync::InFlight::~InFlight() {
  absl::MutexLock lock(&sync_.mu_);
  sync_.in_flight_.erase(&context_);
}

void PsSync::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (grpc::ClientContext* context : in_flight_) context->TryCancel();
}

absl::StatusOr<SyncTiming> PsSync::Step(int64_t step, absl::Span<float> gradient,
                                        absl::Span<float> params) {
  const absl::Time start = absl::Now();
  std::vector<absl::Status> statuses(links_.size());
  std::vector<std::thread> threads;
  absl::Notification first_pushed, others_may_push;
  const bool ordered = options_.pushed_to_first_shard != nullptr;
  for (size_t s = 1; s < links_.size(); ++s) {
    threads.emplace_back([&, s] {
      if (ordered) others_may_push.WaitForNotification();
      statuses[s] = PushPull(links_[s], static_cast<int>(s), static_cast<uint64_t>(step), gradient,
                             params, nullptr);
    });
  }
  if (ordered) {
    std::thread hook([&] {
      first_pushed.WaitForNotification();
      options_.pushed_to_first_shard(step);
      others_may_push.Notify();
    });
    statuses[0] =
        PushPull(links_[0], 0, static_cast<uint64_t>(step), gradient, params, &first_pushed);
    if (!first_pushed.HasBeenNotified()) first_pushed.Notify();
    hook.join();
  } else {
    statuses[0] = PushPull(links_[0], 0, static_cast<uint64_t>(step), gradient, params, nullptr);
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) RETURN_IF_ERROR(status);
  return SyncTiming{absl::Now() - start, absl::ZeroDuration()};
}

absl::Status PsSync::PushPull(ShardLink& link, int shard, uint64_t step,
                              absl::Span<const float> gradient, absl::Span<float> params,
                              absl::Notification* pushed) {
  const std::string where = absl::StrCat(PsShardName(shard), " (", link.address, ") step ", step);
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  context.set_wait_for_ready(true);  // a shard still starting up is waited for
  InFlight in_flight(*this, context);
  auto stream = link.stub->Step(&context);
  const uint64_t segment = std::max<uint64_t>(1, options_.segment_bytes / sizeof(float));
  const uint64_t size = link.range.size();
  if (link.send.expected_bytes != nullptr) {
    link.send.expected_bytes->Increment(static_cast<double>(size * sizeof(float)));
  }
  proto::PsPush push;
  push.set_generation(options_.generation);
  push.set_worker_rank(static_cast<uint32_t>(options_.rank));
  push.set_step(step);
  push.set_range_elements(size);
  uint64_t offset = 0;
  bool writing = true;
  do {  // an empty range still sends one (empty) segment
    const uint64_t count = std::min(segment, size - offset);
    push.set_offset(offset);
    push.set_payload(reinterpret_cast<const char*>(gradient.data() + link.range.begin + offset),
                     count * sizeof(float));
    if (!stream->Write(push)) {
      writing = false;  // the shard ended the stream: its status says why
      break;
    }
    if (link.send.bytes != nullptr) link.send.bytes->Increment(static_cast<double>(count * 4));
    if (link.send.messages != nullptr) link.send.messages->Increment();
    offset += count;
  } while (offset < size);
  if (writing) stream->WritesDone();
  if (pushed != nullptr && writing) pushed->Notify();

  proto::PsParameters reply;
  uint64_t received = 0;
  absl::Status reply_error;
  while (stream->Read(&reply)) {
    const uint64_t count = reply.payload().size() / sizeof(float);
    if (reply.step() != step + 1 || reply.range_elements() != size || reply.offset() != received ||
        reply.payload().size() % sizeof(float) != 0 || count > size - received) {
      reply_error = absl::InternalError(absl::StrCat(
          "reply segment (step ", reply.step(), ", offset ", reply.offset(), ", ",
          reply.payload().size(), " bytes) does not continue the range at ", received));
      context.TryCancel();
      break;
    }
    std::memcpy(params.data() + link.range.begin + received, reply.payload().data(),
                reply.payload().size());
    received += count;
    if (link.receive.bytes != nullptr) {
      link.receive.bytes->Increment(static_cast<double>(reply.payload().size()));
    }
  }
  const grpc::Status status = stream->Finish();
  if (!reply_error.ok()) return Annotate(reply_error, where);
  if (!status.ok()) return Annotate(FromGrpcStatus(status), where);
  if (received != size) {
    return absl::InternalError(
        absl::StrCat(where, ": the shard returned ", received, " of ", size, " parameters"));
  }
  return absl::OkStatus();
}

}  // namespace ringside::worker
