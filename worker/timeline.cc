#include "worker/timeline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "nlohmann/json.hpp"

namespace ringside::worker {
namespace {

using nlohmann::json;

constexpr TimelineLane kLanes[] = {TimelineLane::kStep, TimelineLane::kCompute, TimelineLane::kSync,
                                   TimelineLane::kUpdate, TimelineLane::kRegroup};

int64_t Micros(absl::Duration d) { return absl::ToInt64Microseconds(d + absl::Nanoseconds(500)); }

json EventJson(const TimelineEvent& e, int pid, int64_t origin_us) {
  const std::string lane(TimelineLaneName(e.lane));
  return {{"name", e.lane == TimelineLane::kStep || e.lane == TimelineLane::kRegroup
                       ? absl::StrCat(lane, " ", e.step)
                       : lane},
          {"cat", lane},
          {"ph", "X"},
          {"pid", pid},
          {"tid", static_cast<int>(e.lane)},
          {"ts", e.start_us - origin_us},
          {"dur", e.duration_us},
          {"args",
           {{"step", e.step},
            {"generation", e.generation},
            {"mode", std::string(SyncModeName(e.mode))}}}};
}

// A field of a trace event that must be an integer.
bool ReadInt(const json& object, const char* name, int64_t& out) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return false;
  out = it->get<int64_t>();
  return true;
}

absl::Status BadEvent(size_t index, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("trace event ", index, ": ", why));
}

// One "ph":"X" event of ours back into a TimelineEvent (pid in `pid`).
absl::StatusOr<TimelineEvent> ParseEvent(const json& e, size_t index, int64_t& pid) {
  TimelineEvent event;
  int64_t tid = 0, step = 0, generation = 0;
  if (!ReadInt(e, "pid", pid) || !ReadInt(e, "tid", tid) || !ReadInt(e, "ts", event.start_us) ||
      !ReadInt(e, "dur", event.duration_us)) {
    return BadEvent(index, "needs integer pid, tid, ts and dur");
  }
  if (tid < 0 || tid > static_cast<int64_t>(TimelineLane::kRegroup) || event.duration_us < 0) {
    return BadEvent(index, absl::StrCat("tid ", tid, " is no lane, or dur is negative"));
  }
  event.lane = static_cast<TimelineLane>(tid);
  auto args = e.find("args");
  if (args == e.end() || !args->is_object() || !ReadInt(*args, "step", step) ||
      !ReadInt(*args, "generation", generation)) {
    return BadEvent(index, "needs args {step, generation, mode}");
  }
  auto mode = args->find("mode");
  if (mode == args->end() || !mode->is_string()) return BadEvent(index, "args.mode missing");
  absl::StatusOr<SyncMode> parsed = ParseSyncMode(mode->get<std::string>());
  if (!parsed.ok()) return BadEvent(index, parsed.status().message());
  event.step = step;
  event.generation = static_cast<uint64_t>(generation);
  event.mode = *parsed;
  return event;
}

}  // namespace

absl::string_view TimelineLaneName(TimelineLane lane) {
  switch (lane) {
    case TimelineLane::kStep:
      return "step";
    case TimelineLane::kCompute:
      return "compute";
    case TimelineLane::kSync:
      return "sync";
    case TimelineLane::kUpdate:
      return "update";
    case TimelineLane::kRegroup:
      return "regroup";
  }
  return "unknown";
}

Timeline::Timeline(size_t capacity) : capacity_(capacity < 4 ? 4 : capacity) {}

void Timeline::Add(const TimelineEvent& event) {
  if (events_.size() == capacity_) {
    events_.pop_front();
    ++dropped_;
  }
  events_.push_back(event);
}

void Timeline::RecordStep(int64_t step, uint64_t generation, SyncMode mode,
                          const StepTiming& timing) {
  const int64_t start = absl::ToUnixMicros(timing.start);
  const int64_t compute = Micros(timing.compute), sync = Micros(timing.sync),
                update = Micros(timing.update);
  // An overlapped step's sync begins before the compute ends (never before the step began).
  const int64_t overlap = std::min(compute, Micros(timing.overlap));
  const int64_t after = std::max<int64_t>(0, sync - overlap);  // the sync's part after compute
  absl::MutexLock lock(&mu_);
  Add({TimelineLane::kStep, start, compute + after + update, step, generation, mode});
  Add({TimelineLane::kCompute, start, compute, step, generation, mode});
  Add({TimelineLane::kSync, start + compute - overlap, sync, step, generation, mode});
  Add({TimelineLane::kUpdate, start + compute + after, update, step, generation, mode});
}

void Timeline::RecordRegroup(int64_t completed_steps, uint64_t generation, SyncMode mode,
                             absl::Time start, absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  Add({TimelineLane::kRegroup, absl::ToUnixMicros(start), Micros(duration), completed_steps,
       generation, mode});
}

std::vector<TimelineEvent> Timeline::Events() const {
  absl::MutexLock lock(&mu_);
  return {events_.begin(), events_.end()};
}

uint64_t Timeline::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

std::string ChromeTraceText(const std::vector<TimelineProcess>& processes, int64_t origin_us) {
  json events = json::array();
  uint64_t dropped = 0;
  for (const TimelineProcess& process : processes) {
    dropped += process.dropped;
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", process.pid},
                      {"args", {{"name", process.name}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", process.pid},
                      {"args", {{"sort_index", process.pid}}}});
    for (TimelineLane lane : kLanes) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", process.pid},
                        {"tid", static_cast<int>(lane)},
                        {"args", {{"name", std::string(TimelineLaneName(lane))}}}});
    }
    for (const TimelineEvent& e : process.events) {
      events.push_back(EventJson(e, process.pid, origin_us));
    }
  }
  const json trace = {{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ms"},
                      {"otherData", {{"dropped_events", dropped}}}};
  return trace.dump() + "\n";
}

absl::StatusOr<std::vector<TimelineProcess>> ParseChromeTrace(absl::string_view text) {
  const json trace = json::parse(text.begin(), text.end(), nullptr, false);
  if (!trace.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeline is not a JSON object (", text.size(), " bytes; cut short?)"));
  }
  auto events = trace.find("traceEvents");
  if (events == trace.end() || !events->is_array()) {
    return absl::InvalidArgumentError("timeline has no \"traceEvents\" array");
  }
  std::map<int64_t, TimelineProcess> processes;  // by pid, in pid order
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object()) return BadEvent(i, "not an object");
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string()) return BadEvent(i, "no \"ph\"");
    int64_t pid = 0;
    if (ph->get<std::string>() == "M") {
      auto name = e.find("name"), args = e.find("args");
      if (!ReadInt(e, "pid", pid)) return BadEvent(i, "metadata without an integer pid");
      processes[pid].pid = static_cast<int>(pid);
      if (name != e.end() && *name == "process_name" && args != e.end() && args->is_object() &&
          args->contains("name") && (*args)["name"].is_string()) {
        processes[pid].name = (*args)["name"].get<std::string>();
      }
      continue;
    }
    if (ph->get<std::string>() != "X") return BadEvent(i, "only X and M events are written");
    absl::StatusOr<TimelineEvent> event = ParseEvent(e, i, pid);
    if (!event.ok()) return event.status();
    processes[pid].pid = static_cast<int>(pid);
    processes[pid].events.push_back(*event);
  }
  std::vector<TimelineProcess> out;
  for (auto& [pid, process] : processes) out.push_back(std::move(process));
  int64_t dropped = 0;
  auto other = trace.find("otherData");
  if (other != trace.end() && other->is_object() && ReadInt(*other, "dropped_events", dropped) &&
      !out.empty()) {
    out.front().dropped = static_cast<uint64_t>(dropped);
  }
  return out;
}

absl::Status WriteWorkerTimeline(const Timeline& timeline, int rank, const std::string& path) {
  return WriteFileAtomically(
      path, ChromeTraceText({{rank, WorkerName(rank), timeline.Events(), timeline.dropped()}}));
}

}  // namespace ringside::worker
