// How a process that streams tensor segments sets glibc's allocator, in one place: the worker
// daemon, the parameter-server shard and the benchmark's rank processes (which stand in for
// workers) must run the same way, or a benchmark measures an allocator setting, not the ring or
// the PS. The controller streams checkpoints, and sets it too.
#ifndef RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
#define RINGSIDE_COMMON_ALLOCATOR_TUNING_H_

namespace ringside {

// Segments of up to a few MiB are allocated and freed continuously; glibc would otherwise serve
// them with mmap or hand freed heap back to the kernel, and every reuse would page-fault in fresh
// zeroed memory. Measured: without it the ring moves about a quarter to a third of the bytes
// (`ringside-bench ring`, N=2, 16 MiB: 0.21 against 0.81 GB/s busbw in one run). The price is
// memory kept after a peak (docs/benchmarks.md, "Memory").
//
// One arena for every thread: gRPC's threads each got an arena of their own, and each kept its
// own peak (a received segment, a shard's share buffers), which no other thread could reuse --
// the sum of the threads' peaks stayed resident. With one arena what a regroup or a step frees
// serves the next allocation on any thread. Seen on the heavy compare job (4 workers, 2 shards,
// a loaded 2-core machine, MALLOC_ARENA_MAX=1 against the default): a worker's peak RSS about
// 93-116 MiB against 105-160, a shard's about 100 against 120-130. Allocations are per segment,
// a few thousand a second, so the shared lock costs little. Call first thing in main, before
// any thread starts.
void TuneAllocatorForSegmentStreams();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
