// ringside: the user's command. Today it has `ringside ctl mode ring|ps --controller=HOST:PORT`
// (a live mode switch); `compare` and `up` come with issue 6.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/flags_usage.h"
#include "common/grpc_util.h"
#include "common/net.h"
#include "proto/controller.grpc.pb.h"

ABSL_FLAG(std::string, controller, "", "the controller's address HOST:PORT");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10), "deadline of the request");

namespace {

int Fail(const std::string& message) {
  std::cerr << "ringside: " << message << "\n";
  return 1;
}

int SetMode(const std::string& mode) {
  const std::string controller = absl::GetFlag(FLAGS_controller);
  if (absl::Status status = ringside::ParseHostPort(controller).status(); !status.ok()) {
    return Fail("--controller: " + std::string(status.message()));
  }
  auto stub = ringside::proto::Controller::NewStub(ringside::MakeChannel(controller));
  grpc::ClientContext context;
  ringside::SetDeadline(context, absl::GetFlag(FLAGS_timeout));
  ringside::proto::ModeRequest request;
  request.set_mode(mode);
  ringside::proto::ModeReply reply;
  const grpc::Status status = stub->SetMode(&context, request, &reply);
  if (!status.ok()) {
    return Fail("mode change refused by " + controller + ": " + status.error_message());
  }
  std::cout << "mode " << mode << " from generation " << reply.generation() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ringside::ConfigureFlagsUsage(
      "usage: ringside ctl mode ring|ps --controller=HOST:PORT\n"
      "  switches a running job's synchronisation mode at its next step boundary");
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() == 4 && std::strcmp(args[1], "ctl") == 0 && std::strcmp(args[2], "mode") == 0) {
    const std::string mode = args[3];
    if (mode != "ring" && mode != "ps") return Fail("mode must be ring or ps, not '" + mode + "'");
    return SetMode(mode);
  }
  return Fail("unknown command; see --help (today: ringside ctl mode ring|ps)");
}
