// gRPC ByteBuffers as the codec tests need them: bytes in slices cut where a test says (as gRPC
// may deliver a message), and a buffer's bytes back in one string. Header-only.
#ifndef RINGSIDE_TESTS_SUPPORT_BYTE_BUFFERS_H_
#define RINGSIDE_TESTS_SUPPORT_BYTE_BUFFERS_H_

#include <string>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace ringside::testing {

// `bytes` in slices cut at `cuts` (byte positions, ascending).
inline grpc::ByteBuffer SlicedBuffer(const std::string& bytes, const std::vector<size_t>& cuts) {
  std::vector<grpc::Slice> slices;
  size_t begin = 0;
  for (size_t cut : cuts) {
    slices.emplace_back(bytes.data() + begin, cut - begin);
    begin = cut;
  }
  slices.emplace_back(bytes.data() + begin, bytes.size() - begin);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Every byte of `buffer`, in order; empty when it cannot be read.
inline std::string Flatten(grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return "";
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_BYTE_BUFFERS_H_
