# Fails when project code reaches into gRPC's internals (grpc::internal, grpc_core, headers under
# grpcpp/impl/): those change between gRPC releases without notice. Generated code (proto/, built
# into the build tree) is gRPC's own and not checked. Usage: cmake -DSOURCE_DIR=<repo> -P
# check_grpc_api.cmake
cmake_minimum_required(VERSION 3.25)
set(folders common ring server worker launch cli bench tests)

set(violations "")
foreach(folder IN LISTS folders)
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
       ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cc ${SOURCE_DIR}/${folder}/*.cu
       ${SOURCE_DIR}/${folder}/*.in)
  foreach(source IN LISTS sources)
    file(STRINGS ${SOURCE_DIR}/${source} lines
         REGEX "grpc::internal::|grpc_core::|#include [\"<]grpcpp/impl/")
    foreach(line IN LISTS lines)
      string(STRIP "${line}" line)
      string(APPEND violations "  ${source}: ${line}\n")
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "gRPC internals used (only gRPC's public API is allowed):\n${violations}")
endif()

# Channels, servers and their credentials are made in one place, common/grpc_util.cc, so transport
# security (TLS) cannot be bypassed or built twice. Tests may build clients by hand (a client
# without a certificate, to see it refused).
set(factories "")
foreach(folder IN LISTS folders)
  if(folder STREQUAL "tests")
    continue()
  endif()
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
       ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cc)
  foreach(source IN LISTS sources)
    if(source STREQUAL "common/grpc_util.cc")
      continue()
    endif()
    file(STRINGS ${SOURCE_DIR}/${source} lines
         REGEX "Credentials\\(|CreateChannel|CreateCustomChannel|ServerBuilder|AddListeningPort")
    foreach(line IN LISTS lines)
      string(STRIP "${line}" line)
      string(APPEND factories "  ${source}: ${line}\n")
    endforeach()
  endforeach()
endforeach()
if(factories)
  message(FATAL_ERROR "gRPC channels, servers or credentials made outside common/grpc_util.cc "
                      "(use MakeChannel and StartServer with a TransportSecurity):\n${factories}")
endif()
message(STATUS "gRPC: public API only; channels, servers and credentials in common/grpc_util.cc")
