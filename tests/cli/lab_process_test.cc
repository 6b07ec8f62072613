// `ringside lab` end to end, as root: the real binary builds its namespaces and shaped links,
// runs both modes, and its JSON must agree with the cost model (bytes exactly, the bound's
// formula) and with physics (no step syncs faster than its bytes can cross a shaped link). The
// lab must be gone after a normal exit and after SIGTERM mid-run; after SIGKILL,
// `ringside lab --cleanup` removes it. Fails (never skips) where the lab cannot be built,
// with the command's own message saying what is missing.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/network_lab.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"
#include "server/ps/ps_client.h"
#include "tests/support/poll.h"
#include "tests/support/worker_processes.h"

namespace ringside {
namespace {

using launch::NetworkLab;

constexpr double kRateBitsPerSecond = 20e6;  // --link_rate=20mbit
constexpr double kRate = kRateBitsPerSecond / 8;
constexpr int kSteps = 6;

// A small model whose sync is measurable at 20mbit: K = 50,890 parameters (203,560 B), so a
// ring step of 2 workers moves ~204 KB each way (~81 ms) and a PS step with one shard ~407 KB
// into the shard (~163 ms), against a tbf burst of 16 KiB.
std::vector<std::string> LabCommand(const launch::TempDir& dir, int steps) {
  return {testing::BinDir() + "/ringside",
          "lab",
          "--link_rate=20mbit",
          "--workers=2",
          "--ps_shards=1",
          "--model=784,64,10",
          "--data=synthetic:256",
          "--batch_size=32",
          absl::StrCat("--steps=", steps),
          "--json=" + dir.File("lab.json"),
          "--report=" + dir.File("lab.html")};
}

absl::StatusOr<launch::Subprocess> StartLab(const launch::TempDir& dir, int steps) {
  launch::SpawnOptions spawn;
  spawn.argv = LabCommand(dir, steps);
  spawn.log_path = dir.File("lab.log");
  spawn.term_grace = absl::Seconds(30);  // its own clean-up must have time to run
  // Its cluster directories under the test's own: a run killed mid-way leaves them there, and
  // the test's directory takes them away.
  spawn.extra_env = {"TMPDIR=" + dir.path()};
  return launch::Subprocess::Spawn(spawn);
}

// The management device `ringside lab` printed ("... through rslNNNN: ...").
std::string ManagementDevice(const std::string& log) {
  const std::string marker = " through ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return log.substr(start, log.find(':', start) - start);
}

bool DeviceExists(const std::string& name) {
  return !name.empty() && access(("/sys/class/net/" + name).c_str(), F_OK) == 0;
}

TEST(LabCommandTest, SyncRespectsTheLinkAndBytesMatchTheModel) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  auto lab = StartLab(*dir, kSteps);
  ASSERT_TRUE(lab.ok()) << lab.status();
  const int pid = lab->pid();
  auto exit = lab->Wait(absl::Seconds(300));
  const std::string log = ReadFileToString(dir->File("lab.log")).value_or("");
  ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << log;
  ASSERT_TRUE(exit->ok()) << exit->ToString() << " (the lab needs root, iproute2 and tbf)\n" << log;

  // Gone after a normal exit: namespaces (and with them every veth and qdisc) and the
  // management link in this namespace.
  EXPECT_TRUE(NetworkLab::NamespacesOf(pid).empty());
  const std::string device = ManagementDevice(log);
  ASSERT_FALSE(device.empty()) << "no management device printed:\n" << log;
  EXPECT_FALSE(DeviceExists(device)) << device << " outlived the lab";

  const nlohmann::json json =
      nlohmann::json::parse(ReadFileToString(dir->File("lab.json")).value());
  const nlohmann::json& config = json["config"];
  EXPECT_EQ(config["link_rate"], "20mbit");
  EXPECT_NE(log.find("The bound at 20mbit"), std::string::npos)
      << "the report does not say what its bound is:\n"
      << log;
  const double elements = config["parameters"].get<double>();
  ASSERT_EQ(elements, static_cast<double>(784 * 64 + 64 + 64 * 10 + 10));
  const double burst = config["link_burst_bytes"].get<double>();
  ASSERT_GT(burst, 0);
  ASSERT_LT(burst, 0.2 * elements * 4) << "a burst this large would hide the shaping";
  // The shaped links' push window, not the loopback default the workers have without the flag.
  EXPECT_EQ(config["ps_window_bytes"].get<uint64_t>(), server::kLabPsWindowBytes);
  EXPECT_NE(server::kLabPsWindowBytes, server::kDefaultPsWindowBytes);

  struct Expected {
    const char* mode;
    double bound_bytes;  // the busiest direction of the busiest node per step (cost model)
    // What must cross worker-0's ingress after its sync starts, each step: what the shards or
    // its left neighbour send back depends on its own data. Ring: the N-1 reduced chunks of
    // the allgather ((N-1)K/N); PS: its K parameters' worth of summed gradient.
    double after_own_start_bytes;
    // What crosses worker-0's ingress per step at all, and how much of step 1's could have
    // arrived before worker-0 began (ring: the left neighbour's first N-1 chunks).
    double ingress_bytes, early_bytes;
  };
  const double k_bytes = elements * 4;
  for (const Expected& e : {Expected{"ring", k_bytes, k_bytes / 2, k_bytes, k_bytes / 2},
                            Expected{"ps", 2 * k_bytes, k_bytes, k_bytes, 0}}) {
    SCOPED_TRACE(e.mode);
    const nlohmann::json& m = json["modes"][e.mode];
    ASSERT_TRUE(m["completed"].get<bool>()) << m["failure"];
    ASSERT_EQ(m["steps"], kSteps);
    // The link counters still follow the cost model exactly, namespaces or not.
    EXPECT_EQ(m["bytes_per_worker_per_step"]["measured"],
              m["bytes_per_worker_per_step"]["expected"]);
    ASSERT_FALSE(m["links"].empty());
    for (const nlohmann::json& link : m["links"]) {
      EXPECT_EQ(link["bytes_per_step"], link["expected_bytes_per_step"])
          << link["src"] << " -> " << link["dst"];
    }
    // The bound is the cost model's formula at the rate.
    const double bound = m["bound_seconds_per_step"].get<double>();
    EXPECT_NEAR(bound, e.bound_bytes / kRate, 1e-9);
    EXPECT_NEAR(m["sync_over_bound"].get<double>(), m["sync_seconds"]["p50"].get<double>() / bound,
                1e-9);
    // Every step: what must cross worker-0's shaped ingress after its sync began takes at
    // least its bytes ÷ rate, less one tbf burst (the two shapers of a path are in series, so
    // one burst is all a path can borrow).
    const double min_sync = m["sync_seconds"]["min"].get<double>();
    EXPECT_GE(min_sync, (e.after_own_start_bytes - burst) / kRate)
        << "a step synced faster than its payload can cross a " << config["link_rate"]
        << " link: is the shaping in effect?";
    // The whole run: every step's payload into worker-0 crossed its ingress between the start
    // of step 1 (less what may have arrived before it) and the end of the last step.
    const double run_seconds =
        kSteps * config["batch_size"].get<double>() / m["samples_per_second"].get<double>();
    EXPECT_GE(run_seconds, (kSteps * e.ingress_bytes - e.early_bytes - burst) / kRate);
  }
  // The report shows the bound beside the measurement.
  const std::string html = ReadFileToString(dir->File("lab.html")).value_or("");
  EXPECT_NE(html.find("bound at 20mbit"), std::string::npos);
  EXPECT_NE(html.find("measured/bound"), std::string::npos);
}

// `ip`/`tc` run to their end; their output. Empty when they fail.
std::string ToolOutput(const launch::TempDir& dir, const std::vector<std::string>& argv) {
  launch::SpawnOptions spawn;
  spawn.argv = argv;
  spawn.log_path = dir.File("tool.log");
  auto process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return "";
  auto exit = process->Wait(absl::Seconds(30));
  if (!exit.ok() || !exit->ok()) return "";
  return ReadFileToString(spawn.log_path).value_or("");
}

// The pid `ringside` printed for `name` on its "<phase>: started ... name (pid N)" line.
int StartedPid(const std::string& log, const std::string& phase, const std::string& name) {
  const size_t line = log.find(phase + ": started");
  if (line == std::string::npos) return 0;
  const std::string marker = " " + name + " (pid ";
  const size_t at = log.find(marker, line);
  if (at == std::string::npos || at > log.find('\n', line)) return 0;
  return std::atoi(log.c_str() + at + marker.size());
}

// --slow_link and --colocate: worker-1's link is shaped to its own rate on both ends, each
// colocated shard runs in its worker's namespace, and every mode's bound and bottleneck name
// worker-1 at its rate, with the link counters still the cost model's exactly.
TEST(LabCommandTest, ASlowLinkIsWhatEveryModeWaitsForAndColocatedShardsShareTheirHost) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = LabCommand(*dir, 12);
  spawn.argv.insert(spawn.argv.end(), {"--slow_link=worker-1:5mbit", "--colocate"});
  spawn.log_path = dir->File("lab.log");
  spawn.term_grace = absl::Seconds(30);
  auto lab = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(lab.ok()) << lab.status();
  // While the colocated cluster trains (12 steps of at least K·4/2 B at 5mbit each, seconds):
  const std::string phase = "784,64,10 ps colocated";
  const absl::Status started = testing::PollUntil(
      [&] { return StartedPid(ReadFileToString(spawn.log_path).value_or(""), phase, "ps-1") > 0; },
      absl::Seconds(240),
      [&]() -> std::optional<std::string> {
        if (!lab->Poll().has_value()) return std::nullopt;
        return "ringside lab ended early: " + launch::TailOfFile(spawn.log_path, 20);
      });
  ASSERT_TRUE(started.ok()) << started << "\n" << launch::TailOfFile(spawn.log_path, 20);
  const std::string log = ReadFileToString(spawn.log_path).value_or("");
  for (int i : {0, 1}) {
    const int shard = StartedPid(log, phase, absl::StrCat("ps-", i));
    const std::string netns =
        ToolOutput(*dir, {"/usr/sbin/ip", "netns", "identify", std::to_string(shard)});
    EXPECT_NE(netns.find(absl::StrCat("-worker-", i, "\n")), std::string::npos)
        << "ps-" << i << " (pid " << shard << ") runs in '" << netns << "'";
  }
  const std::string netns_1 = ToolOutput(
      *dir,
      {"/usr/sbin/ip", "netns", "identify", std::to_string(StartedPid(log, phase, "worker-1"))});
  ASSERT_NE(netns_1.find("-worker-1"), std::string::npos) << netns_1;
  const std::string tag = netns_1.substr(0, netns_1.find("-worker-1"));
  EXPECT_NE(
      ToolOutput(*dir, {"/usr/sbin/tc", "-n", tag + "-worker-1", "qdisc", "show", "dev", "eth0"})
          .find("rate 5Mbit"),
      std::string::npos);
  EXPECT_NE(
      ToolOutput(*dir, {"/usr/sbin/tc", "-n", tag + "-worker-0", "qdisc", "show", "dev", "eth0"})
          .find("rate 20Mbit"),
      std::string::npos);
  // Worker-1's ingress: the switch's end of its link (the only 5mbit one there).
  EXPECT_NE(
      ToolOutput(*dir, {"/usr/sbin/tc", "-n", tag + "-sw", "qdisc", "show"}).find("rate 5Mbit"),
      std::string::npos);

  auto exit = lab->Wait(absl::Seconds(300));
  ASSERT_TRUE(exit.ok() && exit->ok()) << launch::TailOfFile(spawn.log_path, 30);
  const nlohmann::json json =
      nlohmann::json::parse(ReadFileToString(dir->File("lab.json")).value());
  EXPECT_EQ(json["config"]["slow_links"]["worker-1"], "5mbit");
  const double k_bytes = json["config"]["parameters"].get<double>() * 4;
  const double burst = json["config"]["link_burst_bytes"].get<double>();
  constexpr double kSlowRate = 5e6 / 8;
  for (const char* mode : {"ring", "ps", "ps_colocated"}) {
    SCOPED_TRACE(mode);
    const nlohmann::json& m = json["modes"][mode];
    ASSERT_TRUE(m["completed"].get<bool>()) << m["failure"];
    for (const nlohmann::json& link : m["links"]) {
      EXPECT_EQ(link["bytes_per_step"], link["expected_bytes_per_step"])
          << link["src"] << " -> " << link["dst"];
    }
    // N = 2: the ring's 2(N-1)/N·K, a PS worker's K and a colocated host's 2(N-1)K/N are all K;
    // at 5mbit that outlasts the shard's N·K/S = 2K at 20mbit.
    EXPECT_EQ(m["bottleneck_node"], "worker-1");
    EXPECT_NEAR(m["bound_seconds_per_step"].get<double>(), k_bytes / kSlowRate, 1e-9);
    EXPECT_NE(m["bottleneck"].get<std::string>().find("waits for worker-1's link"),
              std::string::npos)
        << m["bottleneck"];
  }
  EXPECT_EQ(json["modes"]["ps_colocated"]["links"].size(), 8u);  // 2 workers × 2 shards, each way
  // Physics: what crosses worker-1's 5mbit egress after worker-0's sync began (the ring's
  // allgather chunk, ps-1's reply to worker-0: K/2 each) takes at least its bytes ÷ that rate.
  for (const char* mode : {"ring", "ps_colocated"}) {
    EXPECT_GE(json["modes"][mode]["sync_seconds"]["min"].get<double>(),
              (k_bytes / 2 - burst) / kSlowRate)
        << mode << ": is worker-1's link shaped to 5mbit?";
  }
  EXPECT_NE(log.find(", worker-1's to 5mbit"), std::string::npos) << log;
}

// --probe_out: a probe member in each worker host's namespace, probed under the lab's mutual TLS
// through its shapers, the first profiling itself; every run predicted from the probe's links. The
// physical check: no probed link is much faster than its shaper lets it be (the fit starts past the
// shaper's burst; an unshaped veth's would be a hundred times that).
TEST(LabCommandTest, ItsProbeMeasuresTheShapedLinksAndPredictsEveryRunFromThem) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = LabCommand(*dir, 3);
  spawn.argv.push_back("--probe_out=" + dir->File("probe.json"));
  spawn.log_path = dir->File("lab.log");
  spawn.extra_env = {"TMPDIR=" + dir->path()};
  auto lab = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(lab.ok()) << lab.status();
  const int pid = lab->pid();
  auto exit = lab->Wait(absl::Seconds(300));
  const std::string log = ReadFileToString(dir->File("lab.log")).value_or("");
  ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << log;
  ASSERT_TRUE(exit->ok()) << exit->ToString() << "\n" << log;
  EXPECT_TRUE(NetworkLab::NamespacesOf(pid).empty());
  EXPECT_NE(log.find("lab: probe written to"), std::string::npos) << log;

  const nlohmann::json probe =
      nlohmann::json::parse(ReadFileToString(dir->File("probe.json")).value());
  ASSERT_EQ(probe["links"].size(), 2u) << probe.dump();  // worker-0's and worker-1's
  for (const nlohmann::json& link : probe["links"]) {
    const double rate = link["bytes_per_second"].get<double>();
    EXPECT_GT(rate, 0) << link.dump();
    EXPECT_LT(rate, 1.5 * kRate) << link.dump()
                                 << ": is the probe's path shaped, its burst left out?";
  }
  // The hosts share this machine: the first member profiled itself, on the lab's device, for
  // all of them.
  EXPECT_EQ(probe["links"][0].value("device", ""), "cpu") << probe.dump();
  EXPECT_EQ(probe["links"][0].value("compute_seconds_per_sample", 0.0),
            probe["compute_seconds_per_sample"].get<double>())
      << probe.dump();
  EXPECT_FALSE(probe["links"][1].contains("device")) << probe.dump();
  const nlohmann::json json =
      nlohmann::json::parse(ReadFileToString(dir->File("lab.json")).value());
  for (const char* mode : {"ring", "ps"}) {
    const nlohmann::json& predicted = json["modes"][mode]["predicted"];
    ASSERT_TRUE(predicted.is_object()) << mode << ": " << json["modes"][mode].dump();
    EXPECT_GT(predicted["step_seconds"].get<double>(), 0) << mode;
  }
}

TEST(LabCommandTest, SigtermMidRunRemovesTheLab) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  auto lab = StartLab(*dir, 100000);  // runs until stopped
  ASSERT_TRUE(lab.ok()) << lab.status();
  const int pid = lab->pid();
  const std::string log_path = dir->File("lab.log");
  // Mid-run: the lab is built and the first cluster's processes (the ring's: runs go ring first)
  // are running in it.
  const absl::Status started = testing::PollUntil(
      [&] {
        return ReadFileToString(log_path).value_or("").find(" ring: started") != std::string::npos;
      },
      absl::Seconds(120),
      [&]() -> std::optional<std::string> {
        if (!lab->Poll().has_value()) return std::nullopt;
        return "ringside lab ended early: " + launch::TailOfFile(log_path, 20);
      });
  ASSERT_TRUE(started.ok()) << started << "\n" << launch::TailOfFile(log_path, 20);
  const std::string device = ManagementDevice(ReadFileToString(log_path).value_or(""));
  ASSERT_FALSE(NetworkLab::NamespacesOf(pid).empty());
  ASSERT_TRUE(DeviceExists(device)) << device;

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  auto exit = lab->Wait(absl::Seconds(60));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->ok()) << "a stopped run is not a success";
  EXPECT_EQ(exit->signal, 0) << "it must exit by itself, not die of the signal";
  EXPECT_TRUE(NetworkLab::NamespacesOf(pid).empty()) << launch::TailOfFile(log_path, 20);
  EXPECT_FALSE(DeviceExists(device)) << device << " outlived the lab";
}

TEST(LabCommandTest, CleanupRemovesWhatAKilledRunLeft) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  auto lab = StartLab(*dir, 100000);
  ASSERT_TRUE(lab.ok()) << lab.status();
  const int pid = lab->pid();
  const std::string log_path = dir->File("lab.log");
  const absl::Status built = testing::PollUntil(
      [&] { return !ManagementDevice(ReadFileToString(log_path).value_or("")).empty(); },
      absl::Seconds(120),
      [&]() -> std::optional<std::string> {
        if (!lab->Poll().has_value()) return std::nullopt;
        return "ringside lab ended early: " + launch::TailOfFile(log_path, 20);
      });
  ASSERT_TRUE(built.ok()) << built << "\n" << launch::TailOfFile(log_path, 20);
  const std::string device = ManagementDevice(ReadFileToString(log_path).value_or(""));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_TRUE(lab->Wait(absl::Seconds(30)).ok());
  // SIGKILL leaves the namespaces behind (nothing in the process could run).
  ASSERT_FALSE(NetworkLab::NamespacesOf(pid).empty());

  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside", "lab", "--cleanup"};
  spawn.log_path = dir->File("cleanup.log");
  auto cleanup = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(cleanup.ok()) << cleanup.status();
  auto exit = cleanup->Wait(absl::Seconds(60));
  ASSERT_TRUE(exit.ok() && exit->ok()) << launch::TailOfFile(spawn.log_path, 20);
  EXPECT_TRUE(NetworkLab::NamespacesOf(pid).empty()) << launch::TailOfFile(spawn.log_path, 20);
  EXPECT_FALSE(DeviceExists(device)) << device << " outlived the cleanup";
  EXPECT_NE(ReadFileToString(spawn.log_path).value_or("").find(absl::StrCat("rslab-", pid)),
            std::string::npos)
      << "the cleanup names what it removed";
}

// What `argv` (run to its end, successfully) printed.
std::string OutputOf(const launch::TempDir& dir, std::vector<std::string> argv) {
  launch::SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.log_path = dir.File("command.log");
  auto process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status().ToString();
  auto exit = process->Wait(absl::Seconds(30));
  EXPECT_TRUE(exit.ok() && exit->ok()) << absl::StrJoin(spawn.argv, " ");
  return ReadFileToString(spawn.log_path).value_or("");
}

// Both ends of a host's link: a tbf at the rate over a pfifo_fast whose first band takes the
// TCP acknowledgements the host's namespace marks, so they do not wait behind queued data.
TEST(NetworkLabTest, EachLinkIsShapedOverABandForAcknowledgements) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  launch::NetworkLabOptions options;
  options.hosts = {"worker-0", "ps-0"};
  options.rate = *ParseLinkRate("20mbit");
  auto lab = NetworkLab::Create(options);
  ASSERT_TRUE(lab.ok()) << lab.status();
  const std::string tc = "/usr/sbin/tc";
  for (size_t j = 0; j < (*lab)->hosts().size(); ++j) {
    const launch::LabHost& host = (*lab)->hosts()[j];
    SCOPED_TRACE(host.name);
    const std::string sw = (*lab)->tag() + "-sw";
    for (const auto& [netns, device] : std::vector<std::pair<std::string, std::string>>{
             {host.netns, "eth0"}, {sw, absl::StrCat("h", j)}}) {
      const std::string qdiscs = OutputOf(*dir, {tc, "-n", netns, "qdisc", "show", "dev", device});
      EXPECT_NE(qdiscs.find("qdisc tbf 1: root"), std::string::npos) << qdiscs;
      EXPECT_NE(qdiscs.find("rate 20Mbit"), std::string::npos) << qdiscs;
      EXPECT_NE(qdiscs.find("qdisc pfifo_fast"), std::string::npos) << qdiscs;
      EXPECT_NE(qdiscs.find("parent 1:1"), std::string::npos) << qdiscs;
    }
    const std::string rules =
        OutputOf(*dir, {"/usr/sbin/ip", "netns", "exec", host.netns, "/usr/sbin/iptables", "-t",
                        "mangle", "-S", "POSTROUTING"});
    EXPECT_NE(rules.find("--tcp-flags FIN,SYN,RST,ACK ACK"), std::string::npos) << rules;
    EXPECT_NE(rules.find("CLASSIFY --set-class 0000:0006"), std::string::npos) << rules;
  }
  const std::string tag = (*lab)->tag();
  lab->reset();
  EXPECT_TRUE(NetworkLab::NamespacesOf(getpid()).empty()) << tag << " outlived its lab";
}

// `ringside ARGS` must exit 1 at once, its message containing `named`, having built no lab.
void ExpectRefused(const launch::TempDir& dir, const std::vector<std::string>& args,
                   const std::string& named) {
  SCOPED_TRACE(absl::StrJoin(args, " "));
  launch::SpawnOptions spawn;
  spawn.argv = {testing::BinDir() + "/ringside"};
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  spawn.log_path = dir.File("refused.log");
  auto process = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(process.ok()) << process.status();
  auto exit = process->Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 1);
  const std::string log = ReadFileToString(spawn.log_path).value_or("");
  EXPECT_NE(log.find(named), std::string::npos) << log;
  EXPECT_TRUE(NetworkLab::NamespacesOf(process->pid()).empty());
}

// Bad input fails at once, naming the flag, before anything is built.
TEST(LabCommandTest, BadLabFlagsFailAtOnce) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  ExpectRefused(*dir, {"lab", "--link_rate=fast"}, "--link_rate");
  ExpectRefused(*dir, {"lab"}, "--link_rate");
  // A host the lab does not have, or not HOST:RATE.
  ExpectRefused(*dir, {"lab", "--link_rate=20mbit", "--workers=2", "--slow_link=worker-9:1mbit"},
                "--slow_link: 'worker-9' is not a host of this lab");
  ExpectRefused(*dir, {"lab", "--link_rate=20mbit", "--slow_link=worker-1:fast"}, "--slow_link");
  // compare would run unshaped: it refuses the lab's flags rather than ignore them.
  ExpectRefused(*dir, {"compare", "--link_rate=100mbit"}, "`ringside lab`");
  ExpectRefused(*dir, {"compare", "--slow_link=worker-1:1mbit"}, "`ringside lab`");
  // --colocate runs one cluster size, in compare and lab only.
  ExpectRefused(*dir, {"lab", "--link_rate=20mbit", "--colocate", "--workers=1,2"}, "--colocate");
  ExpectRefused(*dir, {"up", "--colocate"}, "--colocate");
}

// Without root the command says so at once (setpriv drops to nobody).
TEST(LabCommandTest, WithoutRootItSaysWhatIsMissing) {
  auto dir = launch::TempDir::Create("ringside-lab-test-");
  ASSERT_TRUE(dir.ok());
  launch::SpawnOptions spawn;
  spawn.argv = {"/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                testing::BinDir() + "/ringside",
                "lab",
                "--link_rate=20mbit"};
  spawn.log_path = dir->File("nonroot.log");
  auto process = launch::Subprocess::Spawn(spawn);
  ASSERT_TRUE(process.ok()) << process.status() << " (setpriv is in util-linux)";
  auto exit = process->Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  const std::string log = ReadFileToString(spawn.log_path).value_or("");
  EXPECT_EQ(exit->exit_code, 1) << log;
  EXPECT_NE(log.find("must run as root"), std::string::npos) << log;
}

}  // namespace
}  // namespace ringside
