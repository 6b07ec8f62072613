// The worker's timeline: the ring buffer's bound, the phases of a step laid end to end and
// adding up to the step, and the Chrome trace it writes (structure and a round trip).
#include "worker/timeline.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ringside::worker {
namespace {

StepTiming TimingAt(int64_t start_us, int64_t compute_ns, int64_t sync_ns, int64_t update_ns) {
  return {absl::FromUnixMicros(start_us), absl::Nanoseconds(compute_ns), absl::Nanoseconds(sync_ns),
          absl::Nanoseconds(update_ns)};
}

TEST(TimelineTest, KeepsTheNewestEventsUpToItsCapacityAndCountsTheDropped) {
  Timeline timeline(10);
  for (int step = 0; step < 7; ++step) {
    timeline.RecordStep(step, 1, SyncMode::kRing, TimingAt(1000 * step, 100'000, 200'000, 50'000));
  }
  const std::vector<TimelineEvent> events = timeline.Events();
  ASSERT_EQ(events.size(), 10u);
  EXPECT_EQ(timeline.dropped(), 7u * 4 - 10);
  // Oldest dropped: what is left ends with the last step whole, and is in recording order.
  EXPECT_EQ(events.back().step, 6);
  EXPECT_EQ(events.back().lane, TimelineLane::kUpdate);
  EXPECT_EQ(events.front().step, 4);
  EXPECT_EQ(events.front().lane, TimelineLane::kSync);
  timeline.RecordRegroup(7, 2, SyncMode::kPs, absl::FromUnixMicros(9000), absl::Milliseconds(3));
  EXPECT_EQ(timeline.Events().size(), 10u);
  EXPECT_EQ(timeline.dropped(), 19u);
  EXPECT_EQ(timeline.Events().back().lane, TimelineLane::kRegroup);
  EXPECT_EQ(timeline.Events().back().duration_us, 3000);
}

TEST(TimelineTest, TooSmallACapacityStillHoldsOneStep) {
  Timeline timeline(1);
  EXPECT_EQ(timeline.capacity(), 4u);
  timeline.RecordStep(0, 1, SyncMode::kRing, TimingAt(0, 1000, 1000, 1000));
  EXPECT_EQ(timeline.Events().size(), 4u);
  EXPECT_EQ(timeline.dropped(), 0u);
}

// An overlapped step (--bucket_bytes): the sync began 3 ms before the compute ended, so its
// event starts there, on its own lane beside the compute's; the update follows the sync's end
// and the step ends with it. A sync over before the compute ended (a straggler's sleep) ends
// inside the compute, and the update follows the compute.
TEST(TimelineTest, AnOverlappedStepsSyncBeginsBeforeItsComputeEnds) {
  Timeline timeline;
  StepTiming overlapped = TimingAt(1'000'000, 10'000'000, 5'000'000, 1'000'000);
  overlapped.overlap = absl::Milliseconds(3);
  EXPECT_EQ(overlapped.concurrent(), absl::Milliseconds(3));
  EXPECT_EQ(overlapped.total(), absl::Milliseconds(13));
  timeline.RecordStep(0, 1, SyncMode::kRing, overlapped);
  StepTiming hidden = TimingAt(2'000'000, 10'000'000, 2'000'000, 1'000'000);
  hidden.overlap = absl::Milliseconds(4);
  EXPECT_EQ(hidden.concurrent(), absl::Milliseconds(2));
  EXPECT_EQ(hidden.total(), absl::Milliseconds(11));
  timeline.RecordStep(1, 1, SyncMode::kPs, hidden);
  std::map<std::pair<int64_t, TimelineLane>, TimelineEvent> events;
  for (const TimelineEvent& e : timeline.Events()) events[{e.step, e.lane}] = e;
  const auto at = [&](int64_t step, TimelineLane lane) { return events[{step, lane}]; };
  EXPECT_EQ(at(0, TimelineLane::kSync).start_us, 1'000'000 + 10'000 - 3'000);
  EXPECT_EQ(at(0, TimelineLane::kUpdate).start_us, 1'000'000 + 12'000);
  EXPECT_EQ(at(0, TimelineLane::kStep).duration_us, 13'000);
  EXPECT_EQ(at(1, TimelineLane::kSync).start_us, 2'000'000 + 6'000);
  EXPECT_EQ(at(1, TimelineLane::kUpdate).start_us, 2'000'000 + 10'000);
  EXPECT_EQ(at(1, TimelineLane::kStep).duration_us, 11'000);
  // Still a trace that reads back whole.
  auto back = ParseChromeTrace(ChromeTraceText({{0, "worker-0", timeline.Events(), 0}}));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0].events.size(), 8u);
}

TEST(TimelineTest, PhasesLieEndToEndAndSumToTheStepAfterRounding) {
  Timeline timeline;
  // Sub-microsecond parts, so each phase rounds on its own.
  timeline.RecordStep(3, 5, SyncMode::kPs,
                      TimingAt(1'700'000'000'000'000, 1'234'567, 8'765'432, 499));
  const std::vector<TimelineEvent> events = timeline.Events();
  ASSERT_EQ(events.size(), 4u);
  std::map<TimelineLane, TimelineEvent> by_lane;
  for (const TimelineEvent& e : events) {
    EXPECT_EQ(e.step, 3);
    EXPECT_EQ(e.generation, 5u);
    EXPECT_EQ(e.mode, SyncMode::kPs);
    by_lane[e.lane] = e;
  }
  const TimelineEvent& step = by_lane[TimelineLane::kStep];
  const TimelineEvent& compute = by_lane[TimelineLane::kCompute];
  const TimelineEvent& sync = by_lane[TimelineLane::kSync];
  const TimelineEvent& update = by_lane[TimelineLane::kUpdate];
  EXPECT_EQ(compute.duration_us, 1235);
  EXPECT_EQ(sync.duration_us, 8765);
  EXPECT_EQ(update.duration_us, 0);
  EXPECT_EQ(compute.start_us, step.start_us);
  EXPECT_EQ(sync.start_us, compute.start_us + compute.duration_us);
  EXPECT_EQ(update.start_us, sync.start_us + sync.duration_us);
  EXPECT_EQ(step.duration_us, compute.duration_us + sync.duration_us + update.duration_us);
  // Within rounding of the measured total (10.000498 ms).
  EXPECT_NEAR(step.duration_us, 10'000.498, 1.5);
}

TEST(TimelineTest, WritesAChromeTraceWithNamedProcessesAndLanes) {
  Timeline timeline;
  timeline.RecordRegroup(0, 1, SyncMode::kRing, absl::FromUnixMicros(500), absl::Microseconds(400));
  timeline.RecordStep(0, 1, SyncMode::kRing, TimingAt(1000, 2'000'000, 3'000'000, 1'000'000));
  const std::string text =
      ChromeTraceText({{7, "worker-7", timeline.Events(), 11}, {8, "worker-8", {}, 2}}, 500);
  const nlohmann::json trace = nlohmann::json::parse(text, nullptr, false);
  ASSERT_TRUE(trace.is_object()) << text;
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["dropped_events"], 13);
  int complete = 0;
  std::map<int, std::string> process_names;
  std::map<int, std::string> lane_names;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      process_names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    } else if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 7) {
      lane_names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    } else if (e["ph"] == "X") {
      ++complete;
      EXPECT_EQ(e["pid"], 7);
      EXPECT_TRUE(e["ts"].is_number_integer() && e["dur"].is_number_integer()) << e;
      EXPECT_GE(e["ts"].get<int64_t>(), 0) << "shifted by the origin";
      EXPECT_TRUE(e["args"]["step"].is_number_integer());
      EXPECT_EQ(e["args"]["mode"], "ring");
    }
  }
  EXPECT_EQ(complete, 5);
  EXPECT_EQ(process_names, (std::map<int, std::string>{{7, "worker-7"}, {8, "worker-8"}}));
  EXPECT_EQ(lane_names,
            (std::map<int, std::string>{
                {0, "step"}, {1, "compute"}, {2, "sync"}, {3, "update"}, {4, "regroup"}}));
}

TEST(TimelineTest, ReadsBackWhatItWrote) {
  Timeline timeline;
  timeline.RecordStep(4, 2, SyncMode::kPs, TimingAt(1000, 2'000'000, 3'000'000, 1'000'000));
  absl::StatusOr<std::vector<TimelineProcess>> read =
      ParseChromeTrace(ChromeTraceText({{3, "worker-3", timeline.Events(), 5}}));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].pid, 3);
  EXPECT_EQ((*read)[0].name, "worker-3");
  EXPECT_EQ((*read)[0].dropped, 5u);
  ASSERT_EQ((*read)[0].events.size(), 4u);
  const std::vector<TimelineEvent> written = timeline.Events();
  for (size_t i = 0; i < 4; ++i) {
    const TimelineEvent& want = written[i];
    const TimelineEvent& got = (*read)[0].events[i];
    EXPECT_EQ(got.lane, want.lane);
    EXPECT_EQ(got.start_us, want.start_us);
    EXPECT_EQ(got.duration_us, want.duration_us);
    EXPECT_EQ(got.step, 4);
    EXPECT_EQ(got.generation, 2u);
    EXPECT_EQ(got.mode, SyncMode::kPs);
  }
}

TEST(TimelineTest, RefusesWhatItDidNotWriteWithoutThrowing) {
  for (const char* text :
       {"", "{\"traceEvents\": [", "[]", "{}", "{\"traceEvents\": [{\"ph\": \"X\"}]}",
        "{\"traceEvents\": [{\"ph\": \"B\", \"pid\": 1}]}",
        "{\"traceEvents\": [{\"ph\":\"X\",\"pid\":1,\"tid\":9,\"ts\":0,\"dur\":1,"
        "\"args\":{\"step\":0,\"generation\":1,\"mode\":\"ring\"}}]}",
        "{\"traceEvents\": [{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1,"
        "\"args\":{\"step\":0,\"generation\":1,\"mode\":\"mpi\"}}]}"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<TimelineProcess>> read = ParseChromeTrace(text);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ringside::worker
