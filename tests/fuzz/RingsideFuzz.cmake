# The fuzz targets (tests/fuzz/CMakeLists.txt) as part of the main build, and one ctest each (label
# `fuzz`) that fuzzes the target for a few seconds from its checked-in corpus, tests/fuzz/corpus/NAME.
#
# The targets are a second CMake project, configured with clang into build/fuzz and built with
# everything else (ExternalProject): a CMake project has one C++ compiler, the main build's is
# GCC, and -fsanitize=fuzzer needs clang. When clang or its libFuzzer runtime is missing (Debian
# 12: packages clang and libclang-rt-14-dev, which scripts/setup-debian.sh installs), every fuzz
# test is still registered and fails saying so: a missing fuzzer never passes silently.
# -DRINGSIDE_FUZZ=OFF leaves the targets and their tests out on purpose.
option(RINGSIDE_FUZZ "Build the libFuzzer targets (tests/fuzz/) with clang and run them as tests" ON)
set(RINGSIDE_FUZZERS ring_segment ps_push ps_compressed_push ps_load membership membership_record
                     checkpoint gradient_codec)
if(NOT RINGSIDE_FUZZ)
  message(STATUS "Ringside: fuzz targets off (RINGSIDE_FUZZ=OFF)")
  return()
endif()

find_program(RINGSIDE_CLANG NAMES clang clang-14)
find_program(RINGSIDE_CLANGXX NAMES clang++ clang++-14)
# Whether clang links a fuzzer at all: without libclang-rt-14-dev it compiles but cannot link
# -fsanitize=fuzzer. Checked (a second or two) until it works with this clang, so installing the
# runtime later is seen.
set(fuzz_missing "")
if(NOT RINGSIDE_CLANG OR NOT RINGSIDE_CLANGXX)
  set(fuzz_missing "clang is not installed (Debian 12: apt-get install clang libclang-rt-14-dev)")
elseif(NOT RINGSIDE_FUZZ_LINKS STREQUAL RINGSIDE_CLANGXX)
  set(probe_dir ${CMAKE_BINARY_DIR}/fuzz-probe)
  file(WRITE ${probe_dir}/probe.cc
       "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(
    COMMAND ${RINGSIDE_CLANGXX} -fsanitize=fuzzer,address,undefined probe.cc -o probe
    WORKING_DIRECTORY ${probe_dir}
    RESULT_VARIABLE probe_result OUTPUT_VARIABLE probe_output ERROR_VARIABLE probe_output)
  if(probe_result EQUAL 0)
    set(RINGSIDE_FUZZ_LINKS ${RINGSIDE_CLANGXX} CACHE INTERNAL "the clang that links fuzzers")
  else()
    string(REGEX REPLACE "\n.*" "" probe_output "${probe_output}")  # the first line says why
    if(probe_output STREQUAL "")
      set(probe_output "${probe_result}")  # it did not run at all
    endif()
    string(CONCAT fuzz_missing "${RINGSIDE_CLANGXX} cannot link a fuzzer (${probe_output}); "
                               "Debian 12: apt-get install clang libclang-rt-14-dev")
  endif()
endif()

if(fuzz_missing)
  message(WARNING "Ringside: fuzz targets not built: ${fuzz_missing}. The fuzz tests will fail.")
  string(REPLACE "\"" "'" fuzz_missing "${fuzz_missing}")
  foreach(name ${RINGSIDE_FUZZERS})
    add_test(NAME fuzz_${name}
             COMMAND sh -c "echo \"FAIL: fuzz target ${name}_fuzzer not built: ${fuzz_missing}\"; exit 1")
    set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz)
  endforeach()
  return()
endif()
message(STATUS "Ringside: fuzz targets with ${RINGSIDE_CLANGXX} in ${CMAKE_BINARY_DIR}/fuzz")

include(ExternalProject)
ExternalProject_Add(ringside_fuzz
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz
  BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
  CMAKE_ARGS -DCMAKE_C_COMPILER=${RINGSIDE_CLANG} -DCMAKE_CXX_COMPILER=${RINGSIDE_CLANGXX}
             -DRINGSIDE_WERROR=${RINGSIDE_WERROR}
  # Its own build knows what changed; the main build cannot see into it, so it always asks.
  BUILD_ALWAYS ON
  INSTALL_COMMAND "")

foreach(name ${RINGSIDE_FUZZERS})
  add_test(NAME fuzz_${name}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/run_fuzzer.sh ${CMAKE_BINARY_DIR}/fuzz/${name}_fuzzer
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name} ${CMAKE_BINARY_DIR}/fuzz/runs/${name})
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz TIMEOUT 120)
endforeach()
