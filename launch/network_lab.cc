#include "launch/network_lab.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "launch/subprocess.h"

namespace ringside::launch {
namespace {

constexpr char kPrefix[] = "rslab-";
constexpr char kDirPrefix[] = "ringside-lab-";  // a lab's directory of command logs
constexpr char kNetnsDir[] = "/run/netns";      // where `ip netns add` pins namespaces
constexpr char kSwitch[] = "sw";

// iproute2's and iptables' binaries; Debian installs them in /usr/sbin (and /sbin is a link to it).
std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

absl::Status Uninstalled(const std::string& tool) {
  const std::string package = tool == "iptables" ? "iptables" : "iproute2";
  return absl::FailedPreconditionError(absl::StrCat("ringside lab needs ", package, "'s `", tool,
                                                    "`, which is not installed (apt-get install ",
                                                    package, ")"));
}

// Runs one ip/tc/iptables command to its end, its output in `log`.
absl::Status RunTool(std::vector<std::string> argv, const std::string& log,
                     const std::string& what) {
  const std::string tool = Tool(argv[0]);
  if (tool.empty()) return Uninstalled(argv[0]);
  argv[0] = tool;
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.log_path = log;
  ASSIGN_OR_RETURN(Subprocess process, Subprocess::Spawn(spawn));
  ASSIGN_OR_RETURN(const ExitStatus ended, process.Wait(absl::Seconds(30)));
  if (ended.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": `", absl::StrJoin(argv, " "), "` ",
                                          ended.ToString(), ": ", TailOfFile(log, 5)));
}

bool ProcessAlive(int pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// The pid in `name` = <prefix><pid>-<at least parts − 1 more '-'-separated parts>; 0 when it is
// not such a name.
int OwnerAfter(absl::string_view prefix, const std::string& name, size_t parts) {
  if (!absl::StartsWith(name, prefix)) return 0;
  const std::vector<std::string> split = absl::StrSplit(name.substr(prefix.size()), '-');
  int pid = 0;
  if (split.size() < parts || !absl::SimpleAtoi(split[0], &pid) || pid <= 0) return 0;
  return pid;
}

// The owning pid of a lab namespace rslab-<pid>-<hex>-<host>; 0 when not one.
int OwnerOf(const std::string& netns) { return OwnerAfter(kPrefix, netns, 3); }

// The owning pid of a lab's directory ringside-lab-<pid>-<anything>; 0 when not one.
int DirectoryOwnerOf(const std::string& name) { return OwnerAfter(kDirPrefix, name, 2); }

// The management device of the lab tagged rslab-<pid>-<hex>: rsl<pid mod 100000><hex> (at most
// 12 characters, under IFNAMSIZ), so a stale lab's can be found from its namespaces' names.
std::string ManagementDeviceOf(int pid, const std::string& hex) {
  return absl::StrCat("rsl", pid % 100000, hex);
}

std::vector<std::string> LabNamespaces() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsDir, error)) {
    const std::string name = entry.path().filename().string();
    if (OwnerOf(name) != 0) names.push_back(name);
  }
  return names;
}

// tbf's bucket: 1 ms at the rate, but at least ~10 full-size frames, so the shaper itself is
// not what holds a link below its rate; small next to a step's payload (the test accounts for
// it). Its queue: 200 ms at the rate (at least 256 KiB), so the N senders converging on one
// receiver's port queue rather than lose packets.
int64_t BurstBytes(const LinkRate& rate) {
  return std::max<int64_t>(16 * 1024, std::llround(rate.bytes_per_second() / 1000));
}
int64_t LimitBytes(const LinkRate& rate) {
  return std::max<int64_t>(256 * 1024, std::llround(rate.bytes_per_second() / 5));
}
// The same queue in full-size frames: the length of the pfifo_fast under each tbf, which counts
// packets (tbf hands it nothing larger than its burst: it splits bigger GSO packets).
int64_t LimitPackets(const LinkRate& rate) { return LimitBytes(rate) / 1514; }

// Pure TCP acknowledgements (and other segments of at most 128 bytes) get priority 6, which
// pfifo_fast's default priomap puts in its first band: they go ahead of bulk data queued on the
// same link. The skb's priority travels with it across the veth and the bridge, so both shapers
// of a path honour it.
const std::vector<std::string>& AckPriorityRule() {
  static const auto* const rule = new std::vector<std::string>{
      "iptables",    "-w",       "-t",          "mangle",      "-A",
      "POSTROUTING", "-p",       "tcp",         "--tcp-flags", "SYN,RST,FIN,ACK",
      "ACK",         "-m",       "length",      "--length",    "0:128",
      "-j",          "CLASSIFY", "--set-class", "0:6"};
  return *rule;
}

// A failed first command says which kernel feature or privilege is missing, not just "exit 2".
absl::Status Missing(const absl::Status& status, const std::string& feature) {
  if (status.ok() || status.code() == absl::StatusCode::kFailedPrecondition) return status;
  return absl::FailedPreconditionError(
      absl::StrCat("ringside lab cannot ", feature, " here: ", status.message()));
}

}  // namespace

absl::Status NetworkLab::CheckPrerequisites() {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "ringside lab must run as root: it creates network namespaces, veth links and tbf "
        "qdiscs (run it with sudo)");
  }
  for (const char* tool : {"ip", "tc", "iptables"}) {
    if (Tool(tool).empty()) return Uninstalled(tool);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NetworkLab>> NetworkLab::Create(const NetworkLabOptions& options) {
  RETURN_IF_ERROR(CheckPrerequisites());
  if (options.hosts.empty() || options.hosts.size() > 200) {
    return absl::InvalidArgumentError(
        absl::StrCat("a lab has 1 to 200 hosts, not ", options.hosts.size()));
  }
  std::set<std::string> seen;
  for (const std::string& name : options.hosts) {
    const bool plain =
        !name.empty() && name != kSwitch && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
        });
    if (!plain || !seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("lab host name '", name, "' is empty, repeated or not [a-z0-9-]"));
    }
  }
  if (options.rate.bits_per_second <= 0) {
    return absl::InvalidArgumentError("the lab needs a positive link rate");
  }
  for (const auto& [name, rate] : options.host_rates) {
    if (!seen.count(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a link rate is given for '", name, "', which is not a host of the lab"));
    }
    if (rate.bits_per_second <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, "'s link needs a positive rate"));
    }
  }
  std::unique_ptr<NetworkLab> lab(new NetworkLab());
  ASSIGN_OR_RETURN(TempDir dir, TempDir::Create(absl::StrCat(kDirPrefix, getpid(), "-")));
  lab->dir_.emplace(std::move(dir));
  // On failure the destructor removes whatever was made.
  RETURN_IF_ERROR(lab->Build(options));
  return lab;
}

absl::Status NetworkLab::Run(const std::vector<std::string>& argv, const std::string& what) {
  return RunTool(argv, dir_->File(absl::StrCat("command-", ++commands_, ".log")), what);
}

absl::Status NetworkLab::PickSubnet() {
  // The /24s the root namespace already routes (another lab's, or the machine's own).
  const std::string routes_log = dir_->File("routes.log");
  RETURN_IF_ERROR(RunTool({"ip", "-4", "-o", "addr", "show"}, routes_log, "listing addresses"));
  const std::string routes = TailOfFile(routes_log, 10000);
  std::random_device device;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const unsigned index = device() % 512;
    const std::string subnet = absl::StrCat("198.", 18 + index / 256, ".", index % 256);
    if (routes.find(subnet + ".") == std::string::npos) {
      subnet_ = subnet;
      return absl::OkStatus();
    }
  }
  return absl::ResourceExhaustedError(
      "no free /24 left in 198.18.0.0/15 for the lab (remove stale labs: ringside lab --cleanup)");
}

absl::Status NetworkLab::Build(const NetworkLabOptions& options) {
  std::random_device device;
  const unsigned suffix = device() & 0xffff;
  const std::string hex = absl::StrFormat("%04x", suffix);
  tag_ = absl::StrCat(kPrefix, getpid(), "-", hex);
  management_device_ = ManagementDeviceOf(getpid(), hex);
  rate_ = options.rate;
  host_rates_ = options.host_rates;
  burst_bytes_ = BurstBytes(rate_);
  RETURN_IF_ERROR(PickSubnet());

  const std::string sw = tag_ + "-" + kSwitch;
  RETURN_IF_ERROR(Missing(Run({"ip", "netns", "add", sw}, "creating the switch namespace"),
                          "create network namespaces (`ip netns add`)"));
  namespaces_.push_back(sw);
  RETURN_IF_ERROR(Run({"ip", "-n", sw, "link", "set", "lo", "up"}, "bringing lo up"));
  RETURN_IF_ERROR(Missing(
      Run({"ip", "-n", sw, "link", "add", "br0", "type", "bridge"}, "creating the lab's bridge"),
      "create a Linux bridge (CONFIG_BRIDGE)"));
  RETURN_IF_ERROR(Run({"ip", "-n", sw, "link", "set", "br0", "up"}, "bringing the bridge up"));
  RETURN_IF_ERROR(Missing(Run({"ip", "link", "add", management_device_, "type", "veth", "peer",
                               "name", "mgmt", "netns", sw},
                              "creating the management link"),
                          "create veth pairs (CONFIG_VETH)"));
  RETURN_IF_ERROR(Run({"ip", "-n", sw, "link", "set", "mgmt", "master", "br0", "up"},
                      "attaching the management link to the bridge"));
  RETURN_IF_ERROR(Run({"ip", "addr", "add", subnet_ + ".1/24", "dev", management_device_},
                      "addressing the management link"));
  RETURN_IF_ERROR(
      Run({"ip", "link", "set", management_device_, "up"}, "bringing the management link up"));
  for (size_t j = 0; j < options.hosts.size(); ++j) {
    LabHost host{options.hosts[j], tag_ + "-" + options.hosts[j],
                 absl::StrCat(subnet_, ".", 10 + j)};
    RETURN_IF_ERROR(AddHost(host, static_cast<int>(j)));
    hosts_.push_back(std::move(host));
  }
  return absl::OkStatus();
}

absl::Status NetworkLab::AddHost(const LabHost& host, int index) {
  const std::string sw = tag_ + "-" + kSwitch;
  const std::string port = absl::StrCat("h", index);
  RETURN_IF_ERROR(
      Run({"ip", "netns", "add", host.netns}, "creating " + host.name + "'s namespace"));
  namespaces_.push_back(host.netns);
  RETURN_IF_ERROR(Run({"ip", "-n", host.netns, "link", "set", "lo", "up"}, "bringing lo up"));
  RETURN_IF_ERROR(Run({"ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                       "netns", host.netns},
                      "creating " + host.name + "'s link"));
  RETURN_IF_ERROR(Run({"ip", "-n", sw, "link", "set", port, "master", "br0", "up"},
                      "attaching " + host.name + "'s link to the bridge"));
  RETURN_IF_ERROR(Run({"ip", "-n", host.netns, "addr", "add", host.address + "/24", "dev", "eth0"},
                      "addressing " + host.name));
  RETURN_IF_ERROR(
      Run({"ip", "-n", host.netns, "link", "set", "eth0", "up"}, "bringing " + host.name + " up"));
  const std::vector<std::pair<std::string, std::string>> ends = {{host.netns, "eth0"}, {sw, port}};
  for (const auto& [netns, device] : ends) RETURN_IF_ERROR(Shape(host, netns, device));
  std::vector<std::string> argv = {"ip", "netns", "exec", host.netns};
  argv.insert(argv.end(), AckPriorityRule().begin(), AckPriorityRule().end());
  return Missing(Run(argv, "putting " + host.name + "'s acknowledgements first"),
                 "mark acknowledgements (iptables' mangle table and CLASSIFY target)");
}

// Egress on the host's end (eth0), ingress on the switch's end (h<j>) of the same veth: a tbf at
// the rate over a pfifo_fast, whose first band takes what AckPriorityRule marks. Without it a
// host's acknowledgements of what it receives wait behind up to LimitBytes of its own data (200
// ms), and the sender they clock slows: the ring's sync at 20mbit measured 1.17-1.22x its bound
// with one FIFO, 1.06x with acknowledgements first. A real host's fq/fq_codel keeps them apart.
absl::Status NetworkLab::Shape(const LabHost& host, const std::string& netns,
                               const std::string& device) {
  const LinkRate& rate = rate_of(host.name);
  const std::string what = "shaping " + host.name + "'s link";
  RETURN_IF_ERROR(Run({"ip", "-n", netns, "link", "set", "dev", device, "txqueuelen",
                       absl::StrCat(LimitPackets(rate))},
                      what));
  RETURN_IF_ERROR(
      Missing(Run({"tc", "-n", netns, "qdisc", "add", "dev", device, "root", "handle", "1:", "tbf",
                   "rate", rate.text, "burst", absl::StrCat(BurstBytes(rate)), "limit",
                   absl::StrCat(LimitBytes(rate))},
                  what),
              "shape links with the tbf qdisc (CONFIG_NET_SCH_TBF)"));
  return Run({"tc", "-n", netns, "qdisc", "add", "dev", device, "parent", "1:1", "pfifo_fast"},
             what);
}

const LabHost* NetworkLab::host(const std::string& name) const {
  for (const LabHost& host : hosts_) {
    if (host.name == name) return &host;
  }
  return nullptr;
}

const LinkRate& NetworkLab::rate_of(const std::string& host) const {
  const auto own = host_rates_.find(host);
  return own == host_rates_.end() ? rate_ : own->second;
}

std::vector<std::string> NetworkLab::ExecPrefix(const LabHost& host) const {
  return {Tool("ip"), "netns", "exec", host.netns};
}

absl::Status NetworkLab::Destroy() {
  absl::Status first;
  // The management link first, explicitly: a deleted namespace's devices go away only when the
  // kernel gets round to destroying it (asynchronously), and this one is in the root namespace,
  // visible to everyone until then. Deleting one end of a veth removes both at once.
  if (!namespaces_.empty() && access(("/sys/class/net/" + management_device_).c_str(), F_OK) == 0) {
    first = Run({"ip", "link", "del", management_device_}, "removing " + management_device_);
  }
  // Then the hosts, and the switch last.
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    absl::Status status = Run({"ip", "netns", "del", *it}, "removing namespace " + *it);
    if (first.ok() && !status.ok()) first = status;
  }
  namespaces_.clear();
  hosts_.clear();
  return first;
}

NetworkLab::~NetworkLab() {
  if (dir_.has_value()) Destroy().IgnoreError();
}

absl::StatusOr<std::vector<std::string>> NetworkLab::RemoveStaleLabs() {
  std::vector<std::string> removed;
  absl::Status first;
  ASSIGN_OR_RETURN(TempDir dir, TempDir::Create(absl::StrCat(kDirPrefix, getpid(), "-cleanup-")));
  for (const std::string& name : LabNamespaces()) {
    const int owner = OwnerOf(name);
    if (ProcessAlive(owner)) continue;
    // rslab-<pid>-<hex>-sw holds the peer of the lab's management device: remove that first
    // (see Destroy).
    const std::string switch_suffix = absl::StrCat("-", kSwitch);
    if (name.size() > switch_suffix.size() &&
        name.compare(name.size() - switch_suffix.size(), switch_suffix.size(), switch_suffix) ==
            0) {
      const std::vector<std::string> parts = absl::StrSplit(name, '-');  // rslab pid hex sw
      const std::string device = ManagementDeviceOf(owner, parts[2]);
      if (access(("/sys/class/net/" + device).c_str(), F_OK) == 0) {
        absl::Status status =
            RunTool({"ip", "link", "del", device}, dir.File("del.log"), "removing stale " + device);
        if (!status.ok() && first.ok()) first = status;
      }
    }
    absl::Status status =
        RunTool({"ip", "netns", "del", name}, dir.File("del.log"), "removing stale " + name);
    if (status.ok()) {
      removed.push_back(name);
    } else if (first.ok()) {
      first = status;
    }
  }
  if (!first.ok()) return first;
  for (std::string& path : RemoveStaleDirectories(TempDir::Base())) {
    removed.push_back(std::move(path));
  }
  return removed;
}

std::vector<std::string> NetworkLab::RemoveStaleDirectories(const std::string& base) {
  std::vector<std::string> removed;
  // Every step with an error code: a range-for's increment would throw on a read error.
  std::error_code error;
  std::filesystem::directory_iterator entry(base, error);
  for (; !error && entry != std::filesystem::directory_iterator(); entry.increment(error)) {
    const int owner = DirectoryOwnerOf(entry->path().filename().string());
    std::error_code is_directory_error, remove_error;
    if (owner == 0 || ProcessAlive(owner) || !entry->is_directory(is_directory_error)) continue;
    std::filesystem::remove_all(entry->path(), remove_error);
    if (!remove_error) removed.push_back(entry->path().string());
  }
  return removed;
}

std::vector<std::string> NetworkLab::NamespacesOf(int pid) {
  std::vector<std::string> names;
  for (const std::string& name : LabNamespaces()) {
    if (OwnerOf(name) == pid) names.push_back(name);
  }
  return names;
}

}  // namespace ringside::launch
