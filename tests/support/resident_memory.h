// A process's resident memory, for the tests that bound what a burst of refused calls leaves
// behind (issue 51): read from /proc, so only on Linux.
#ifndef RINGSIDE_TESTS_SUPPORT_RESIDENT_MEMORY_H_
#define RINGSIDE_TESTS_SUPPORT_RESIDENT_MEMORY_H_

#include <sys/types.h>

#include <cstdint>

namespace ringside::testing {

// VmRSS of `pid` in bytes; -1 when unreadable.
int64_t ResidentBytes(pid_t pid);

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_RESIDENT_MEMORY_H_
