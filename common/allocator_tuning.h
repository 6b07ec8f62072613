// How a process that streams tensor segments sets glibc's allocator, in one place: the worker
// daemon, the parameter-server shard and the benchmark's rank processes (which stand in for
// workers) must run the same way, or a benchmark measures an allocator setting, not the ring or
// the PS. The controller streams checkpoints, and sets it too.
#ifndef RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
#define RINGSIDE_COMMON_ALLOCATOR_TUNING_H_

namespace ringside {

// Segments of up to a few MiB are allocated and freed continuously; glibc would otherwise serve
// them with mmap or hand freed heap back to the kernel, and every reuse would page-fault in fresh
// zeroed memory, which costs the ring most of its throughput. The price is memory kept after a
// peak (docs/benchmarks.md, "Memory"; the measurements are in docs/benchmark-history.md).
//
// One arena for every thread: gRPC's threads each got an arena of their own, and each kept its
// own peak (a received segment, a shard's held pushes), which no other thread could reuse: the
// sum of the threads' peaks stayed resident. With one arena what a regroup or a step frees
// serves the next allocation on any thread. Allocations are per segment, a few thousand a second,
// so the shared lock costs little. Call first thing in main, before any thread starts.
void TuneAllocatorForSegmentStreams();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
