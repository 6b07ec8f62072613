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
set(allowed_worker            "common;proto;ring;server/controller;server/ps")
set(allowed_launch            "common")
set(allowed_cli               "common;proto;ring;server/controller;server/ps;worker;launch")
set(allowed_bench             "common;proto;ring;server/controller;server/ps;worker;launch")
set(nodes common ring server/controller server/ps worker launch cli bench)
set(project_nodes ${nodes} proto tests)  # tests/ (fuzz targets too) may include anything
# The worker reaches the servers through their clients only: these headers, and no others.
set(server_client_headers
    server/controller/controller_client.h server/controller/job_spec.h
    server/ps/ps_client.h server/ps/shard_transfer.h)

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
    file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
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
  message(FATAL_ERROR "Layering broken: these includes point up or sideways "
                      "(see docs/architecture.md, \"Folders and layers\"):\n${violations}")
endif()
message(STATUS "Layering: every include points down")
