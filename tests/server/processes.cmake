# Real ringside-worker processes on loopback.
ringside_test(worker_process_test
  SOURCES worker_process_test.cc
  LIBS ringside::train ringside::test_support
  LABELS multiprocess)
add_dependencies(worker_process_test ringside-worker)

# ringside-ps and ringside-worker processes on loopback: per-link bytes and parity with the ring.
ringside_test(ps_process_test
  SOURCES ps_process_test.cc
  LIBS ringside::train ringside::test_support
  LABELS multiprocess)
add_dependencies(ps_process_test ringside-ps ringside-worker)

# What the elastic multi-process tests share (tests/daemons/elastic_test_util.h).
add_library(ringside_elastic_test_util elastic_test_util.cc)
target_link_libraries(ringside_elastic_test_util PUBLIC ringside::cli ringside::test_support)
ringside_warnings(ringside_elastic_test_util)

# Elastic jobs: controller, shards and workers with no static flags; mode switches, a lost
# worker and a late one.
ringside_test(elastic_process_test
  SOURCES elastic_process_test.cc
  LIBS ringside_elastic_test_util ringside::train
  LABELS multiprocess)
add_dependencies(elastic_process_test ringside-ps ringside-worker ringside-controller)

# A worker lost at every named point of the elastic protocol, and a seeded chaos run.
ringside_test(elastic_fault_test
  SOURCES elastic_fault_test.cc
  LIBS ringside_elastic_test_util ringside::train
  LABELS multiprocess)
add_dependencies(elastic_fault_test ringside-ps ringside-worker ringside-controller)

# Durable state: a shard killed and replaced, or not; the controller killed and restarted; a
# whole cluster resumed from its checkpoint, also past a corrupt newest one.
ringside_test(durable_process_test
  SOURCES durable_process_test.cc
  LIBS ringside_elastic_test_util ringside::train
  LABELS multiprocess)
add_dependencies(durable_process_test ringside-ps ringside-worker ringside-controller)

# A stranger attacking a running cluster through every RPC: refused everywhere, training unharmed.
ringside_test(security_process_test
  SOURCES security_process_test.cc
  LIBS ringside_elastic_test_util ringside::train
  LABELS multiprocess)
add_dependencies(security_process_test ringside-ps ringside-worker ringside-controller)
# Every binary that opens gRPC links refuses a missing, partial, contradictory or unreadable
# transport-security choice, in one line naming the flag.
ringside_test(security_flags_process_test
  SOURCES security_flags_process_test.cc
  LIBS ringside::launch ringside::test_support
  LABELS multiprocess)
add_dependencies(security_flags_process_test ringside ringside-bench ringside-controller
                 ringside-ps ringside-worker)
