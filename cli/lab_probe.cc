#include "cli/lab_probe.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/cluster_probe_run.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/await_file.h"
#include "launch/certificates.h"
#include "launch/cluster_commands.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"

namespace ringside::cli {
namespace {

constexpr absl::Duration kMemberStartTimeout = absl::Seconds(30);
constexpr absl::Duration kLabRoundTripBudget = absl::Seconds(2);

// What every probe member is given: the secret's file and, under TLS, the CA that signs each
// member's certificate (for its lab address) and the prober's own.
struct ProbeSecrets {
  std::string token;
  std::string token_file;
  std::optional<launch::CertificateAuthority> ca;
  TransportSecurity security = TransportSecurity::Plaintext();
};

absl::StatusOr<ProbeSecrets> MakeProbeSecrets(const launch::TempDir& dir, bool tls) {
  ProbeSecrets made;
  ASSIGN_OR_RETURN(made.token, RandomSecret());
  made.token_file = dir.path() + "/probe-token";
  RETURN_IF_ERROR(WriteFileAtomically(made.token_file, made.token + "\n", 0600));
  if (!tls) return made;
  ASSIGN_OR_RETURN(made.ca, launch::CertificateAuthority::Create(dir.path()));
  ASSIGN_OR_RETURN(const TlsFiles mine, made.ca->Issue("prober"));
  ASSIGN_OR_RETURN(made.security, TransportSecurity::LoadMutualTls(mine));
  return made;
}

// Starts `host`'s probe member and returns its HOST:PORT once its ready file says it serves.
absl::StatusOr<std::string> StartMember(const launch::NetworkLab& lab, const launch::LabHost& host,
                                        const LabProbeOptions& options, const ProbeSecrets& secrets,
                                        const launch::TempDir& dir,
                                        std::vector<launch::Subprocess>& members) {
  const std::string ready = dir.path() + "/" + host.name + ".ready";
  launch::SpawnOptions spawn;
  spawn.argv = lab.ExecPrefix(host);
  spawn.argv.push_back(options.bin_dir + "/" + launch::kWorkerBinary);
  spawn.argv.push_back("--probe_token_file=" + secrets.token_file);
  spawn.argv.push_back(absl::StrCat("--listen=", host.address, ":0"));
  spawn.argv.push_back("--ready_file=" + ready);
  spawn.argv.push_back("--device=" + options.device);
  if (secrets.ca.has_value()) {
    ASSIGN_OR_RETURN(const TlsFiles files, secrets.ca->Issue(host.name, {}, {host.address}));
    for (std::string& flag : launch::CertificateAuthority::Flags(files)) {
      spawn.argv.push_back(std::move(flag));
    }
  } else {
    spawn.argv.push_back("--insecure");
  }
  spawn.log_path = dir.path() + "/" + host.name + ".log";
  ASSIGN_OR_RETURN(launch::Subprocess member, launch::Subprocess::Spawn(spawn));
  members.push_back(std::move(member));
  ASSIGN_OR_RETURN(
      const ReadyFile file,
      launch::AwaitReadyFile(members.back(), ready, absl::StrCat("probe member on ", host.name),
                             kMemberStartTimeout));
  return absl::StrCat(host.address, ":", file.port);
}

}  // namespace

absl::StatusOr<ClusterProbe> ProbeLabLinks(const launch::NetworkLab& lab,
                                           const LabProbeOptions& options) {
  if (options.hosts.empty()) return absl::InvalidArgumentError("the lab probe needs a host");
  ASSIGN_OR_RETURN(const launch::TempDir dir, launch::TempDir::Create("ringside-lab-probe"));
  ASSIGN_OR_RETURN(const ProbeSecrets secrets, MakeProbeSecrets(dir, options.tls));
  std::vector<launch::Subprocess> members;  // their destructors stop them, also on failure
  ProbeOptions probe;
  for (const std::string& name : options.hosts) {
    const launch::LabHost* host = lab.host(name);
    if (host == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("the lab has no host ", name));
    }
    ASSIGN_OR_RETURN(std::string address, StartMember(lab, *host, options, secrets, dir, members));
    probe.members.push_back(std::move(address));
  }
  probe.links.token = secrets.token;
  probe.links.security = secrets.security;
  probe.model = options.model;
  probe.activation = options.activation;
  // The lab's hosts are namespaces of this machine: one member's profile (on
  // --device, as each was started) is every member's.
  probe.profile_each_member = false;
  // Each member's link is its own (its shapers), and the management link is not shaped: all at
  // once, and no echo much over a few seconds, so eight 10mbit links take about half a minute.
  probe.concurrent_links = true;
  probe.links.round_trip_budget = kLabRoundTripBudget;
  // Past four bursts of the shaper, a message's time is its bytes at the rate.
  probe.links.fit_from_bytes = 4 * static_cast<uint64_t>(lab.burst_bytes());
  absl::StatusOr<ClusterProbe> probed = RunClusterProbe(probe);
  for (launch::Subprocess& member : members) member.Kill();
  return probed;
}

}  // namespace ringside::cli
