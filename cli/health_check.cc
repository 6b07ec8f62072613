#include "cli/health_check.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_util.h"
#include "common/net.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace ringside::cli {
namespace {

constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// grpc.health.v1.HealthCheckResponse.ServingStatus
constexpr const char* kStatusNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
constexpr uint64_t kServing = 1;

// HealthCheckRequest { string service = 1; }: absent when empty (proto3).
std::string EncodeRequest(const std::string& service) {
  std::string bytes;
  if (service.empty()) return bytes;
  bytes.push_back(0x0A);  // field 1, length-delimited
  for (uint64_t n = service.size();; n >>= 7) {
    if (n < 0x80) {
      bytes.push_back(static_cast<char>(n));
      break;
    }
    bytes.push_back(static_cast<char>((n & 0x7F) | 0x80));
  }
  return bytes + service;
}

// HealthCheckResponse { ServingStatus status = 1; }: absent means UNKNOWN (0). Fields other
// than 1 are skipped, as protobuf parsers do.
absl::StatusOr<uint64_t> DecodeStatus(const std::string& bytes) {
  uint64_t status = 0;
  size_t i = 0;
  auto varint = [&](uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && i < bytes.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes[i++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  while (i < bytes.size()) {
    uint64_t key = 0;
    if (!varint(key)) return absl::InvalidArgumentError("health reply: truncated field key");
    const uint64_t wire_type = key & 7;
    uint64_t value = 0;
    if (wire_type == 0) {
      if (!varint(value)) return absl::InvalidArgumentError("health reply: truncated varint");
      if ((key >> 3) == 1) status = value;
    } else if (wire_type == 2) {
      if (!varint(value) || value > bytes.size() - i) {
        return absl::InvalidArgumentError("health reply: bad length");
      }
      i += value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("health reply: wire type ", wire_type));
    }
  }
  return status;
}

std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace

absl::Status CheckHealth(const std::string& address, absl::Duration timeout,
                         const TransportSecurity& security, const std::string& service) {
  if (absl::Status status = ParseHostPort(address).status(); !status.ok()) return status;
  grpc::GenericStub stub(MakeChannel(address, security));
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  const std::string request_bytes = EncodeRequest(service);
  grpc::Slice slice(request_bytes);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::Status rpc_status;
  absl::Notification done;
  stub.UnaryCall(&context, kCheckMethod, grpc::StubOptions(), &request, &reply,
                 [&](grpc::Status status) {
                   rpc_status = std::move(status);
                   done.Notify();
                 });
  done.WaitForNotification();  // bounded by the call's deadline
  if (!rpc_status.ok()) {
    const absl::Status status = FromGrpcStatus(rpc_status);
    return absl::Status(status.code(), absl::StrCat(address, ": ", status.message()));
  }
  absl::StatusOr<uint64_t> serving = DecodeStatus(ToString(reply));
  if (!serving.ok()) return serving.status();
  if (*serving != kServing) {
    const char* name = *serving < 4 ? kStatusNames[*serving] : "an unknown status";
    return absl::UnavailableError(absl::StrCat(address, ": health service reports ", name));
  }
  return absl::OkStatus();
}

}  // namespace ringside::cli
