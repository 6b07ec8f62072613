// How a process that streams tensor segments sets glibc's allocator, in one place: the worker
// daemon, the parameter-server shard and the benchmark's rank processes (which stand in for
// workers) must run the same way, or a benchmark measures an allocator setting, not the ring or
// the PS.
#ifndef RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
#define RINGSIDE_COMMON_ALLOCATOR_TUNING_H_

namespace ringside {

// Segments of up to a few MiB are allocated and freed continuously; glibc would otherwise serve
// them with mmap or hand freed heap back to the kernel, and every reuse would page-fault in fresh
// zeroed memory. Measured: without it the ring moves about a quarter to a third of the bytes
// (`ringside-bench ring`, N=2, 16 MiB: 0.21 against 0.81 GB/s busbw in one run). The price is
// memory kept after a peak (docs/benchmarks.md, "Memory"). Call first thing in main.
void TuneAllocatorForSegmentStreams();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_ALLOCATOR_TUNING_H_
