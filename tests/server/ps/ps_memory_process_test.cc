// Issue 51, point 1, with a real process: a burst of large pushes from a caller with no link key
// leaves an elastic ringside-ps's resident memory within 64 MiB of where it started, because the
// shard refuses each call when it starts and never reads (buffers) its message.
//
// The shard is elastic (it has made its credential and serves with it) but never registered:
// its controller address is a socket this test listens on and never answers, so the shard waits
// for its registration (up to its 60 s limit) while it serves, which is all this test needs.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "proto/ps.grpc.pb.h"
#include "tests/support/resident_memory.h"
#include "tests/support/worker_processes.h"

namespace ringside::server {
namespace {

using testing::BinDir;
using testing::ResidentBytes;

// A loopback TCP socket that listens and never accepts: a controller that never answers.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(PsMemoryProcessTest, RefusedLargePushesLeaveTheShardsMemoryWhereItWas) {
  auto dir = launch::TempDir::Create("ringside-ps-memory-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string token = dir->File("join-token");
  ASSERT_TRUE(WriteFileAtomically(token, "a-join-token-of-the-test-0123456789abcdef\n").ok());
  SilentListener controller;
  ASSERT_GT(controller.port(), 0);
  launch::SpawnOptions options;
  options.argv = {BinDir() + "/ringside-ps",
                  absl::StrCat("--controller=127.0.0.1:", controller.port()),
                  "--join_token_file=" + token, "--listen=127.0.0.1:0", "--insecure"};
  options.log_path = dir->File("ps.log");
  auto shard = launch::Subprocess::Spawn(options);
  ASSERT_TRUE(shard.ok()) << shard.status();

  // The shard says where it serves once its server (with its credential) is up.
  const std::string marker = "ps: ParameterShard on 127.0.0.1:";
  int port = 0;
  for (int i = 0; i < 1000 && port == 0 && shard->running(); ++i) {
    absl::StatusOr<std::string> log = ReadFileToString(options.log_path);
    const size_t at = log.ok() ? log->find(marker) : std::string::npos;
    if (at != std::string::npos) {
      const size_t begin = at + marker.size();
      const size_t end = log->find_first_not_of("0123456789", begin);
      if (!absl::SimpleAtoi(log->substr(begin, end - begin), &port)) port = 0;
    }
    if (port == 0) absl::SleepFor(absl::Milliseconds(20));  // polling a file: no event to wait on
    shard->Poll();
  }
  ASSERT_GT(port, 0) << launch::TailOfFile(options.log_path, 20);
  const int64_t before = ResidentBytes(shard->pid());
  ASSERT_GT(before, 0);

  // 4 callers at once, 8 pushes each, of one 48 MiB message apiece: 1.5 GiB offered in all, and
  // 192 MiB at any moment had the shard read them (its allocator keeps what it freed). Refused
  // unread, what remains is what gRPC's transport took in per call while the refusal went out:
  // 18 to 32 MiB more here (more callers or more calls take it closer to the bound).
  const std::string payload(48 << 20, '\x01');
  std::vector<std::thread> callers;
  std::vector<int> denied(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      auto stub = proto::ParameterShard::NewStub(
          MakeChannel(absl::StrCat("127.0.0.1:", port), TransportSecurity()));
      for (int i = 0; i < 8; ++i) {
        grpc::ClientContext context;
        SetDeadline(context, absl::Seconds(30));
        AddLinkClaim(context, LinkClaim{"", 1, c % 2, true});  // claims, but holds no key
        proto::PsPush push;
        push.set_generation(1);
        push.set_worker_rank(c % 2);
        push.set_range_elements(payload.size() / sizeof(float));
        push.set_payload(payload);
        auto stream = stub->Step(&context);
        stream->Write(push);
        stream->WritesDone();
        if (stream->Finish().error_code() == grpc::StatusCode::PERMISSION_DENIED) ++denied[c];
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(denied[c], 8) << "caller " << c;

  ASSERT_TRUE(shard->running()) << launch::TailOfFile(options.log_path, 20);
  const int64_t after = ResidentBytes(shard->pid());
  EXPECT_LE(after, before + (int64_t{64} << 20))
      << "resident " << before / (1 << 20) << " MiB before the burst, " << after / (1 << 20)
      << " MiB after";
}

}  // namespace
}  // namespace ringside::server
