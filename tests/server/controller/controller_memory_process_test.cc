// Issue 51, point 1, with a real process: a burst of large checkpoint uploads from callers
// without a member's credential leaves ringside-controller's resident memory within 64 MiB of
// where it started, and nothing on disk: the controller refuses each upload when its call starts,
// from its metadata, and never reads (buffers) its message.
#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/await_file.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "proto/controller.grpc.pb.h"
#include "tests/support/resident_memory.h"
#include "tests/support/worker_processes.h"

namespace ringside::server {
namespace {

using testing::BinDir;
using testing::ResidentBytes;

// The checkpoint files in `dir` (none when it does not exist), sorted: every name but the
// membership record's, which the controller rewrites as members register.
std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("membership.json", 0) != 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ControllerMemoryProcessTest, RefusedLargeUploadsLeaveTheControllersMemoryAndDiskAsTheyWere) {
  auto dir = launch::TempDir::Create("ringside-controller-memory-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string token = dir->File("join-token");
  ASSERT_TRUE(WriteFileAtomically(token, "a-join-token-of-the-test-0123456789abcdef\n").ok());
  const std::string checkpoints = dir->File("checkpoints");
  launch::SpawnOptions options;
  options.argv = {BinDir() + "/ringside-controller",
                  "--workers=2",
                  "--join_token_file=" + token,
                  "--listen=127.0.0.1:0",
                  "--ready_file=" + dir->File("controller.ready.json"),
                  "--checkpoint_dir=" + checkpoints,
                  "--insecure"};
  options.log_path = dir->File("controller.log");
  auto controller = launch::Subprocess::Spawn(options);
  ASSERT_TRUE(controller.ok()) << controller.status();
  auto ready = launch::AwaitReadyFile(*controller, dir->File("controller.ready.json"), "controller",
                                      absl::Seconds(60));
  ASSERT_TRUE(ready.ok()) << ready.status();
  // One worker registers (the job waits for two, so there is no generation): its real credential
  // is a member's but not the uploader's the job designates.
  const std::string credential(40, 'c');
  auto stub = proto::Controller::NewStub(
      MakeChannel(absl::StrCat("127.0.0.1:", ready->port), TransportSecurity()));
  proto::RegisterReply registered;
  {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(30));
    proto::RegisterRequest request;
    request.set_join_token("a-join-token-of-the-test-0123456789abcdef");
    request.set_role(proto::ROLE_WORKER);
    request.set_address("127.0.0.1:1");
    request.set_member_credential(credential);
    const grpc::Status status = stub->Register(&context, request, &registered);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const int64_t before = ResidentBytes(controller->pid());
  ASSERT_GT(before, 0);
  const std::vector<std::string> files_before = FilesIn(checkpoints);

  // 4 callers at once, 8 uploads each, of one 48 MiB segment apiece: 1.5 GiB offered, 192 MiB
  // at any moment had the controller read them: a member that does not exist, the registered
  // member with a forged credential, and with its own (not the designated uploader).
  const std::string payload(48 << 20, '\x01');
  std::vector<std::thread> callers;
  std::vector<int> refused(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      const uint64_t member = c == 0 ? 999 : registered.member_id();
      const std::string presented = c == 3 ? credential : std::string(40, 'f');
      for (int i = 0; i < 8; ++i) {
        grpc::ClientContext context;
        SetDeadline(context, absl::Seconds(30));
        context.AddMetadata(kMemberIdMetadata, absl::StrCat(member));
        context.AddMetadata(kMemberCredentialMetadata, presented);
        proto::CheckpointReply reply;
        auto upload = stub->PutCheckpoint(&context, &reply);
        proto::CheckpointSegment segment;
        segment.set_member_id(member);
        segment.set_step(1);
        segment.set_parameters(payload.size() / sizeof(float));
        segment.set_state_elements(payload.size() / sizeof(float));
        segment.set_payload(payload);
        upload->Write(segment);
        upload->WritesDone();
        const grpc::Status status = upload->Finish();
        if (status.error_code() == grpc::StatusCode::NOT_FOUND ||
            status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
            status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
          ++refused[c];
        } else if (i == 0) {
          ADD_FAILURE() << "caller " << c << ": " << status.error_code() << " "
                        << status.error_message();
        }
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(refused[c], 8) << "caller " << c;

  ASSERT_TRUE(controller->running()) << launch::TailOfFile(options.log_path, 20);
  const int64_t after = ResidentBytes(controller->pid());
  EXPECT_LE(after, before + (int64_t{64} << 20))
      << "resident " << before / (1 << 20) << " MiB before the burst, " << after / (1 << 20)
      << " MiB after";
  EXPECT_EQ(FilesIn(checkpoints), files_before) << "a refused upload changed the checkpoints";
  EXPECT_TRUE(files_before.empty());
}

}  // namespace
}  // namespace ringside::server
