# Fails when a folder includes a folder it must not: dependencies point one way, from the daemons
# and commands down to the protocols and common/. Run on every build (target check_layers) and as
# a test. Usage: cmake -DSOURCE_DIR=<repo> -P check_layers.cmake
#
# Each folder lists the folders it may include besides itself. `proto` is generated code.
cmake_minimum_required(VERSION 3.25)
set(allowed_common  "")
set(allowed_model   "common")
set(allowed_ring    "common;proto")
set(allowed_ps      "common;proto")
set(allowed_control "common;proto;model")
set(allowed_train   "common;proto;model;ring;ps;control")
set(allowed_launch  "common;model")
set(allowed_daemons "common;proto;model;ring;ps;control;train")
set(allowed_cli     "common;proto;model;ring;ps;control;train;launch")
set(allowed_bench   "common;proto;model;ring;ps;control;train;launch")
set(folders common model ring ps control train launch daemons cli bench)
set(project_folders ${folders} proto tests fuzz)  # tests/ and fuzz/ may include anything

set(violations "")
foreach(folder IN LISTS folders)
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
       ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cc ${SOURCE_DIR}/${folder}/*.cu
       ${SOURCE_DIR}/${folder}/*.in)
  foreach(source IN LISTS sources)
    file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" target "${line}")
      if(target STREQUAL folder OR NOT target IN_LIST project_folders)
        continue()
      endif()
      if(NOT target IN_LIST allowed_${folder})
        string(APPEND violations "  ${source}: ${line} (${folder}/ may include: ${allowed_${folder}})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Layering broken: these includes point up or sideways "
                      "(see docs/architecture.md, \"Folders and layers\"):\n${violations}")
endif()
message(STATUS "Layering: every include points down")
