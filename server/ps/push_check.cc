#include "server/ps/push_check.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::server {
namespace {

size_t CountNonFiniteIn(WireDtype dtype, const std::vector<absl::string_view>& pieces,
                        uint64_t count) {
  WirePiecesReader reader(dtype, pieces);
  std::array<float, 1024> block;
  size_t non_finite = 0;
  for (uint64_t done = 0; done < count;) {
    const absl::Span<float> out =
        absl::MakeSpan(block).first(std::min<uint64_t>(block.size(), count - done));
    if (!reader.Read(out, /*add=*/false)) break;  // the caller checked the size
    non_finite += CountNonFinite(out);
    done += out.size();
  }
  return non_finite;
}

}  // namespace

absl::Status NonFiniteReport::Refuse(int shard, uint64_t generation, int worker, uint64_t step,
                                     size_t non_finite, size_t elements) const {
  const std::string what =
      absl::StrCat(WorkerName(worker), "'s push of step ", step, " (generation ", generation,
                   ") has ", non_finite, " of ", elements, " values NaN or infinite");
  if (refused != nullptr) refused->Increment();
  if (log) log(absl::StrCat(PsShardName(shard), ": refused ", what, "; nothing of it is kept"));
  return absl::InvalidArgumentError(
      absl::StrCat(what, "; ", PsShardName(shard), " refuses it and keeps nothing of it"));
}

absl::Status PushCheck::Header(uint64_t generation, int worker, uint64_t range_elements) const {
  RETURN_IF_ERROR(Generation(generation));
  RETURN_IF_ERROR(Worker(worker));
  return Range(worker, range_elements);
}

absl::Status PushCheck::Generation(uint64_t generation) const {
  if (generation != identity_.generation) {
    return absl::FailedPreconditionError(absl::StrCat("generation ", generation, " is not ",
                                                      PsShardName(identity_.shard), "'s current ",
                                                      identity_.generation));
  }
  return absl::OkStatus();
}

absl::Status PushCheck::Worker(int worker) const {
  if (worker < 0 || worker >= identity_.workers) {
    return absl::InvalidArgumentError(absl::StrCat("worker rank ", worker, " is not in generation ",
                                                   identity_.generation, " of ", identity_.workers,
                                                   " workers on ", PsShardName(identity_.shard)));
  }
  return absl::OkStatus();
}

absl::Status PushCheck::Range(int worker, uint64_t range_elements) const {
  if (range_elements != identity_.range_elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " pushes a range of ", range_elements, " elements but ",
                     PsShardName(identity_.shard), " owns ", identity_.range_elements,
                     "; do the worker and the shard use the same --model and --ps_shards?"));
  }
  return absl::OkStatus();
}

absl::Status PushCheck::Finite(int worker, uint64_t step, absl::Span<const float> values) const {
  const size_t non_finite = CountNonFinite(values);
  if (non_finite == 0) return absl::OkStatus();
  return nonfinite_.Refuse(identity_.shard, identity_.generation, worker, step, non_finite,
                           values.size());
}

absl::Status PushCheck::Finite(int worker, uint64_t step, WireDtype dtype,
                               const std::vector<absl::string_view>& pieces, uint64_t count) const {
  const size_t non_finite = CountNonFiniteIn(dtype, pieces, count);
  if (non_finite == 0) return absl::OkStatus();
  return nonfinite_.Refuse(identity_.shard, identity_.generation, worker, step, non_finite, count);
}

}  // namespace ringside::server
