#include "server/ps/push_check.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/metrics.h"

namespace ringside::server {

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


}  // namespace ringside::server
