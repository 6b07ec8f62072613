// The analytic communication cost model that `ringside_link_expected_bytes_total` follows
// (../shared/CONTRACT.md, "Analytic cost model"). Pure functions; thread-safe.
//
// Ring (scatter-reduce then allgather over chunks c_0..c_{N-1} of K elements): at scatter-reduce
// step s rank r sends chunk (r - s) mod N, at allgather step s it sends chunk (r + 1 - s) mod N.
// So rank r sends every chunk but (r + 1) in the first phase and every chunk but (r + 2) in the
// second: 2K - |c_{r+1}| - |c_{r+2}| elements, which is 2(N-1)K/N when N divides K.
//
// Parameter server (S shards over contiguous ranges): worker -> shard s carries |range s|
// elements of gradient, shard s -> worker the same number of parameters.
#ifndef RINGSIDE_COMMON_COST_MODEL_H_
#define RINGSIDE_COMMON_COST_MODEL_H_

#include <cstdint>

namespace ringside {

// Elements rank `rank` of `world` sends to its right neighbour in one ring allreduce of
// `elements` elements. 0 when world == 1.
uint64_t RingElementsSentByRank(uint64_t elements, int world, int rank);

// Elements worker -> shard `shard` (and back) carry per step with `shards` shards.
uint64_t PsElementsPerShardLink(uint64_t elements, int shards, int shard);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_COST_MODEL_H_
