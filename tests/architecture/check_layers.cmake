# Fails when a folder includes a folder it must not: dependencies point one way, from the tools
# and the worker down to the servers, the ring and common/. Run on every build (target
# check_layers) and as a test. Usage: cmake -DSOURCE_DIR=<repo> -P check_layers.cmake
#
# A node is a top-level folder, or a subfolder of server/ (each server is a protocol with its
# daemon). Each node lists the nodes it may include besides itself; `proto` is generated code.
cmake_minimum_required(VERSION 3.25)
set(allowed_common            "")
set(allowed_ring              "common;proto")
set(allowed_server/controller "common;proto")
set(allowed_server/ps         "common;proto;server/controller")
set(allowed_server/probe      "common;proto")
set(allowed_worker            "common;proto;ring;server/controller;server/ps;server/probe")
set(allowed_launch            "common")
set(allowed_cli               "common;proto;ring;server/controller;server/ps;server/probe;worker;launch")
set(allowed_bench             "common;proto;ring;server/controller;server/ps;server/probe;worker;launch")
set(nodes common ring server/controller server/ps server/probe worker launch cli bench)
set(project_nodes ${nodes} proto tests)  # tests/ (fuzz targets too) may include anything
# The worker reaches the servers through their clients only: these headers, and no others.
set(server_client_headers
    server/controller/controller_client.h server/controller/job_spec.h
    server/ps/ps_client.h server/ps/shard_group.h server/ps/shard_transfer.h
    server/ps/push_pull_client.h server/probe/link_probe.h)

# Flags live in binaries: common/flags/ (the flags several binaries share) is included, and
# ABSL_FLAG used, only by a binary's own code: a *_main.cc, the `ringside` and `ringside-bench`
# command code (cli/, bench/), common/flags/ itself (and tests/, which is not checked here).
# Libraries take option structs.
function(may_hold_flags source out)
  if(source MATCHES "(^|/)[a-z_]+_main\\.cc$" OR source MATCHES "^(cli|bench|common/flags)/")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The node an include path or a source path belongs to.
function(node_of path out)
  if(path MATCHES "^server/([a-z_]+)/")
    set(${out} "server/${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(path MATCHES "^([a-z_]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(violations "")
foreach(node IN LISTS nodes)
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
       ${SOURCE_DIR}/${node}/*.h ${SOURCE_DIR}/${node}/*.cc ${SOURCE_DIR}/${node}/*.cu
       ${SOURCE_DIR}/${node}/*.in)
  foreach(source IN LISTS sources)
    may_hold_flags("${source}" flags_allowed)
    if(NOT flags_allowed)
      file(STRINGS ${SOURCE_DIR}/${source} definitions REGEX "^ABSL_FLAG\\(")
      foreach(line IN LISTS definitions)
        string(APPEND violations "  ${source}: ${line} (flags live in binaries: define flags in a "
                                 "*_main.cc or common/flags/, pass the library an options struct)\n")
      endforeach()
    endif()
    file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      if(included MATCHES "^common/flags/" AND NOT flags_allowed)
        string(APPEND violations "  ${source}: ${line} (flags live in binaries: only a *_main.cc, "
                                 "cli/, bench/ and tests/ include common/flags/)\n")
        continue()
      endif()
      node_of("${included}" target)
      if(target STREQUAL node OR NOT target IN_LIST project_nodes)
        continue()
      endif()
      if(NOT target IN_LIST allowed_${node})
        string(APPEND violations "  ${source}: ${line} (${node}/ may include: ${allowed_${node}})\n")
      elseif(node STREQUAL "worker" AND target MATCHES "^server/" AND
             NOT included IN_LIST server_client_headers)
        string(APPEND violations "  ${source}: ${line} (the worker includes only the servers' "
                                 "client headers: ${server_client_headers})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Layering broken: these includes point up or sideways, or flags are "
                      "defined outside a binary (see docs/architecture.md, \"Folders and "
                      "layers\"):\n${violations}")
endif()
message(STATUS "Layering: every include points down; flags live in binaries")
