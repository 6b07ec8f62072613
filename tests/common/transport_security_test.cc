// Mutual TLS as common/grpc_util.cc builds it, against a real server on loopback: the server
// serves only a client whose certificate chains to its CA, and each way of not having one ends
// the call with UNAVAILABLE (the handshake fails, no service is reached); and the flag checks of
// common/flags/security_flags.h, each with a one-line error naming the flag (and the file).
#include "common/transport_security.h"

#include <sys/stat.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/file_util.h"
#include "common/flags/security_flags.h"
#include "common/grpc_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "launch/certificates.h"
#include "launch/temp_dir.h"
#include "proto/controller.grpc.pb.h"

namespace ringside {
namespace {

using launch::CertificateAuthority;

// grpc.health.v1.Health/Check with an empty request (the whole server): only the status matters.
grpc::StatusCode CheckOver(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(10));
  grpc::Slice empty{std::string()};  // HealthCheckRequest{}: zero bytes, but a message
  grpc::ByteBuffer request(&empty, 1), reply;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &reply,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  return status.error_code();
}

class TransportSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = launch::TempDir::Create("ringside-tls-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<launch::TempDir>(*std::move(dir));
    ASSERT_TRUE(MakeAuthority("ours", ours_));
    ASSERT_TRUE(MakeAuthority("theirs", theirs_));
    auto server = ours_->Issue("server");
    auto client = ours_->Issue("client");
    auto stranger = theirs_->Issue("stranger");
    ASSERT_TRUE(server.ok() && client.ok() && stranger.ok());
    server_files_ = *server;
    client_files_ = *client;
    stranger_files_ = *stranger;
    auto security = TransportSecurity::LoadMutualTls(server_files_);
    ASSERT_TRUE(security.ok()) << security.status();
    auto started = StartServer("127.0.0.1:0", {&unimplemented_}, *security);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    address_ = absl::StrCat("127.0.0.1:", server_.port);
  }

  bool MakeAuthority(const std::string& name, std::unique_ptr<CertificateAuthority>& out) {
    const std::string dir = dir_->File(name);
    if (mkdir(dir.c_str(), 0700) != 0) return false;
    auto authority = CertificateAuthority::Create(dir, name + " CA");
    EXPECT_TRUE(authority.ok()) << authority.status();
    if (!authority.ok()) return false;
    out = std::make_unique<CertificateAuthority>(*std::move(authority));
    return true;
  }

  // A TLS channel built by hand, for clients Ringside itself never builds.
  std::shared_ptr<grpc::Channel> HandMadeChannel(const std::string& key_file,
                                                 const std::string& cert_file) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFileToString(ours_->ca_file()).value_or("");
    if (!cert_file.empty()) {
      options.pem_private_key = ReadFileToString(key_file).value_or("");
      options.pem_cert_chain = ReadFileToString(cert_file).value_or("");
    }
    return grpc::CreateChannel(address_, grpc::SslCredentials(options));
  }

  std::unique_ptr<launch::TempDir> dir_;
  std::unique_ptr<CertificateAuthority> ours_, theirs_;
  TlsFiles server_files_, client_files_, stranger_files_;
  // gRPC adds its health service only to a server with a service of ours; it outlives server_.
  proto::Controller::Service unimplemented_;
  StartedServer server_;
  std::string address_;
};

TEST_F(TransportSecurityTest, ServesAClientWithACertificateFromItsCa) {
  auto client = TransportSecurity::LoadMutualTls(client_files_);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(CheckOver(MakeChannel(address_, *client)), grpc::StatusCode::OK);
  // The certificate names localhost too: the dialled host is what is checked.
  EXPECT_EQ(CheckOver(MakeChannel(absl::StrCat("localhost:", server_.port), *client)),
            grpc::StatusCode::OK);
}

TEST_F(TransportSecurityTest, RefusesAPlaintextClient) {
  EXPECT_EQ(CheckOver(MakeChannel(address_, TransportSecurity::Plaintext())),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TransportSecurityTest, RefusesAClientWithoutACertificate) {
  EXPECT_EQ(CheckOver(HandMadeChannel("", "")), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TransportSecurityTest, RefusesAClientWhoseCertificateAnotherCaSigned) {
  // It trusts our CA (so it accepts the server) but presents a certificate of theirs.
  EXPECT_EQ(CheckOver(HandMadeChannel(stranger_files_.key, stranger_files_.cert)),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TransportSecurityTest, ATlsClientRefusesAPlaintextServer) {
  proto::Controller::Service unimplemented;
  auto plaintext = StartServer("127.0.0.1:0", {&unimplemented}, TransportSecurity::Plaintext());
  ASSERT_TRUE(plaintext.ok()) << plaintext.status();
  auto client = TransportSecurity::LoadMutualTls(client_files_);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(CheckOver(MakeChannel(absl::StrCat("127.0.0.1:", plaintext->port), *client)),
            grpc::StatusCode::UNAVAILABLE);
}

// ---- the flags ----------------------------------------------------------------------------

void ExpectRefused(const SecurityFlags& flags, const std::string& named) {
  absl::StatusOr<TransportSecurity> security = ResolveSecurityFlags(flags);
  ASSERT_FALSE(security.ok());
  EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(security.status().message());
  EXPECT_NE(message.find(named), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

TEST_F(TransportSecurityTest, PlaintextMustBeAskedFor) {
  ExpectRefused({}, "--insecure");
  absl::StatusOr<TransportSecurity> plaintext = ResolveSecurityFlags({TlsFiles{}, true});
  ASSERT_TRUE(plaintext.ok());
  EXPECT_FALSE(plaintext->is_tls());
}

TEST_F(TransportSecurityTest, AllThreeFilesOrNone) {
  ExpectRefused({TlsFiles{client_files_.ca, client_files_.cert, ""}, false}, "--tls_key");
  ExpectRefused({TlsFiles{"", client_files_.cert, client_files_.key}, false}, "--tls_ca");
  ExpectRefused({client_files_, true}, "--insecure");
  absl::StatusOr<TransportSecurity> tls = ResolveSecurityFlags({client_files_, false});
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->is_tls());
}

TEST_F(TransportSecurityTest, BadFilesAreNamedWithTheirFlag) {
  const std::string garbage = dir_->File("garbage.pem");
  ASSERT_TRUE(WriteFileAtomically(garbage, "not a certificate\n").ok());
  const std::string missing = dir_->File("missing.pem");
  ExpectRefused({TlsFiles{missing, client_files_.cert, client_files_.key}, false},
                "--tls_ca: cannot open " + missing);
  ExpectRefused({TlsFiles{garbage, client_files_.cert, client_files_.key}, false},
                "--tls_ca: " + garbage + " holds no PEM certificate");
  ExpectRefused({TlsFiles{client_files_.ca, garbage, client_files_.key}, false},
                "--tls_cert: " + garbage);
  ExpectRefused({TlsFiles{client_files_.ca, client_files_.cert, garbage}, false},
                "--tls_key: " + garbage);
  // Another certificate's key, and a certificate another CA signed.
  ExpectRefused({TlsFiles{client_files_.ca, client_files_.cert, server_files_.key}, false},
                "is not the key of the certificate");
  ExpectRefused({TlsFiles{client_files_.ca, stranger_files_.cert, stranger_files_.key}, false},
                "does not verify against --tls_ca");
}

TEST_F(TransportSecurityTest, KeysAreWrittenForTheOwnerOnly) {
  struct stat info;
  ASSERT_EQ(stat(client_files_.key.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
}

}  // namespace
}  // namespace ringside
