// Every binary that opens gRPC links refuses to start without an explicit transport-security
// choice, with half of the TLS files, with a file that is not PEM, or with both TLS and
// --insecure: exit code 1 and one line naming the flag (and the file).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/certificates.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using testing::BinDir;

struct Binary {
  std::string name;
  std::vector<std::string> argv;  // without the security flags
};

std::vector<Binary> Binaries() {
  return {
      {"ringside-controller", {BinDir() + "/ringside-controller"}},
      {"ringside-ps", {BinDir() + "/ringside-ps"}},
      {"ringside-worker", {BinDir() + "/ringside-worker"}},
      {"ringside ctl", {BinDir() + "/ringside", "ctl", "mode", "ps", "--controller=127.0.0.1:1"}},
      {"ringside health", {BinDir() + "/ringside", "health", "--address=127.0.0.1:1"}},
      {"ringside-bench ring-rank", {BinDir() + "/ringside-bench", "ring-rank"}}};
}

class SecurityFlagsProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = launch::TempDir::Create("ringside-security-flags-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<launch::TempDir>(*std::move(dir));
    auto authority = launch::CertificateAuthority::Create(dir_->path());
    ASSERT_TRUE(authority.ok()) << authority.status();
    auto files = authority->Issue("member");
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = *files;
    garbage_ = dir_->File("garbage.pem");
    ASSERT_TRUE(WriteFileAtomically(garbage_, "-----BEGIN CERTIFICATE-----\nnonsense\n").ok());
  }

  // Runs `binary` with `flags`; expects exit code 1 and one line holding `expected`.
  void ExpectRefused(const Binary& binary, const std::vector<std::string>& flags,
                     const std::string& expected) {
    launch::SpawnOptions spawn;
    spawn.argv = binary.argv;
    spawn.argv.insert(spawn.argv.end(), flags.begin(), flags.end());
    spawn.log_path = dir_->File("out.log");
    auto process = launch::Subprocess::Spawn(spawn);
    ASSERT_TRUE(process.ok()) << process.status();
    auto exit = process->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << binary.name << " did not stop";
    EXPECT_EQ(exit->exit_code, 1) << binary.name << ": " << exit->ToString();
    const std::string log = ReadFileToString(spawn.log_path).value_or("");
    const std::vector<std::string> lines = absl::StrSplit(log, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines.size(), 1u) << binary.name << " should say it in one line:\n" << log;
    EXPECT_NE(log.find(expected), std::string::npos)
        << binary.name << " should name " << expected << ":\n"
        << log;
  }

  std::unique_ptr<launch::TempDir> dir_;
  TlsFiles files_;
  std::string garbage_;
};

TEST_F(SecurityFlagsProcessTest, NeitherTlsNorInsecure) {
  for (const Binary& binary : Binaries()) {
    ExpectRefused(binary, {},
                  "pass --tls_ca=PEM --tls_cert=PEM --tls_key=PEM for mutual TLS, or "
                  "--insecure");
  }
}

TEST_F(SecurityFlagsProcessTest, HalfTheTlsFlags) {
  for (const Binary& binary : Binaries()) {
    ExpectRefused(binary, {"--tls_ca=" + files_.ca, "--tls_cert=" + files_.cert},
                  "missing --tls_key");
  }
}

TEST_F(SecurityFlagsProcessTest, AFileThatIsNotPem) {
  for (const Binary& binary : Binaries()) {
    ExpectRefused(binary,
                  {"--tls_ca=" + garbage_, "--tls_cert=" + files_.cert, "--tls_key=" + files_.key},
                  "--tls_ca: " + garbage_ + " holds no PEM certificate");
  }
}

TEST_F(SecurityFlagsProcessTest, TlsAndInsecureTogether) {
  for (const Binary& binary : Binaries()) {
    ExpectRefused(binary,
                  {"--insecure", "--tls_ca=" + files_.ca, "--tls_cert=" + files_.cert,
                   "--tls_key=" + files_.key},
                  "--insecure contradicts --tls_ca, --tls_cert, --tls_key");
  }
}

// `ringside up` and `compare` make their own certificates: files given to them are refused.
TEST_F(SecurityFlagsProcessTest, UpAndCompareTakeOnlyInsecure) {
  for (const std::string command : {"up", "compare"}) {
    ExpectRefused({"ringside " + command, {BinDir() + "/ringside", command}},
                  {"--tls_ca=" + files_.ca}, "make a throw-away CA");
  }
}

}  // namespace
}  // namespace ringside
