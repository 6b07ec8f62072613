// The HTML report opened in headless Chromium (Debian's `chromium`, which
// scripts/setup-debian.sh installs) renders its charts: a screenshot shows the charts' colours,
// and the browser's DOM holds every chart's SVG with its marks. No network is involved: the
// page is a local file and must need nothing else.
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/report/report_html.h"
#include "cli/report/svg_chart.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "tests/cli/html_probe.h"
#include "tests/cli/png_image.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";
// Tall enough for job 1's first row of charts below the verdict's numbers and the table: the
// link charts, then the phase and step-time charts.
constexpr int kWidth = 1280, kHeight = 2800;

// 'text' for /bin/sh, whatever characters the temp dir's path holds.
std::string ShellQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

uint32_t Rgb(const char* hex) { return static_cast<uint32_t>(std::stoul(hex + 1, nullptr, 16)); }

class ReportInChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kChromium, X_OK), 0)
        << kChromium << " is missing: run scripts/setup-debian.sh (as root), which installs "
        << "Debian's chromium package for this test";
    absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("report-browser-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<launch::TempDir>(*std::move(dir));
    ASSERT_TRUE(WriteHtmlReportFile(testing::SampleReport(), dir_->File("report.html")).ok());
  }

  // Runs headless Chromium on the report with `extra` flags, a fresh profile and a private
  // HOME (nothing written outside the temp dir), stdout to `stdout_file`.
  void RunChromium(const std::string& name, const std::vector<std::string>& extra,
                   const std::string& stdout_file) {
    std::vector<std::string> argv = {
        kChromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        absl::StrCat("--user-data-dir=", dir_->File("profile-" + name))};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(absl::StrCat("file://", dir_->File("report.html")));
    // Through a shell only to keep stdout (the DOM) apart from Chromium's stderr chatter.
    std::string command = "exec";
    for (const std::string& arg : argv) absl::StrAppend(&command, " ", ShellQuoted(arg));
    absl::StrAppend(&command, " >", ShellQuoted(stdout_file));
    const std::string home = dir_->File("home");
    launch::SpawnOptions options;
    options.argv = {"/bin/sh", "-c", command};
    options.log_path = dir_->File("chromium-" + name + ".log");
    options.extra_env = {"HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_CACHE_HOME=" + home};
    absl::StatusOr<launch::Subprocess> chromium = launch::Subprocess::Spawn(options);
    ASSERT_TRUE(chromium.ok()) << chromium.status();
    // About a second each on an idle 2-core machine; the bound only stops a hang.
    absl::StatusOr<launch::ExitStatus> exit = chromium->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << "chromium (" << name << ") did not finish: " << exit.status() << "\n"
                           << launch::TailOfFile(chromium->log_path(), 20);
    ASSERT_TRUE(exit->ok()) << "chromium (" << name << ") " << exit->ToString() << "\n"
                            << launch::TailOfFile(chromium->log_path(), 20);
  }

  std::unique_ptr<launch::TempDir> dir_;
};

TEST_F(ReportInChromiumTest, ScreenshotShowsTheCharts) {
  const std::string png = dir_->File("report.png");
  ASSERT_NO_FATAL_FAILURE(RunChromium(
      "screenshot",
      {absl::StrCat("--screenshot=", png), absl::StrCat("--window-size=", kWidth, ",", kHeight)},
      dir_->File("screenshot.out")));
  absl::StatusOr<std::string> bytes = ReadFileToString(png);
  ASSERT_TRUE(bytes.ok()) << "no screenshot: " << bytes.status();
  absl::StatusOr<testing::RgbImage> image = testing::DecodePng(*bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->width, kWidth);
  EXPECT_EQ(image->height, kHeight);

  // A blank page is one colour; text alone gives grey anti-aliasing. The charts' own colours
  // (bars of each mode, the sync phase) must be painted over thousands of pixels.
  EXPECT_GT(testing::DistinctColors(*image), 50u);
  const int64_t pixels = int64_t{kWidth} * kHeight;
  EXPECT_LT(testing::CountPixelsNear(*image, 0xffffff, 0), pixels * 95 / 100) << "mostly blank";
  EXPECT_GT(testing::CountPixelsNear(*image, Rgb(kRingColor), 2), 2000) << "ring bars";
  EXPECT_GT(testing::CountPixelsNear(*image, Rgb(kPsColor), 2), 2000) << "ps bars";
  EXPECT_GT(testing::CountPixelsNear(*image, Rgb(kSyncColor), 2), 1000) << "sync phase";
  EXPECT_GT(testing::CountPixelsNear(*image, Rgb(kExpectedColor), 2), 2000) << "model bars";
  if (HasFailure()) {
    dir_->Keep();
    ADD_FAILURE() << "the screenshot is kept: " << png;
  }
}

TEST_F(ReportInChromiumTest, DomHoldsEveryChartWithItsMarks) {
  const std::string dom_file = dir_->File("dom.html");
  ASSERT_NO_FATAL_FAILURE(RunChromium("dom", {"--dump-dom"}, dom_file));
  absl::StatusOr<std::string> dom = ReadFileToString(dom_file);
  ASSERT_TRUE(dom.ok()) << dom.status();
  ASSERT_NE(dom->find("<table class=\"comparison\">"), std::string::npos) << *dom;
  for (int job = 0; job < 2; ++job) {
    for (const std::string& id : testing::ChartIds(job)) {
      const std::string svg = testing::SvgById(*dom, id);
      ASSERT_FALSE(svg.empty()) << id << " is not in the browser's DOM";
      EXPECT_GT(testing::CountMarks(svg, "rect") + testing::CountMarks(svg, "polyline") +
                    testing::CountMarks(svg, "circle"),
                0)
          << id << " has no marks";
    }
  }
  const std::string ps_links = testing::SvgById(*dom, "links-ps-job0");
  EXPECT_EQ(testing::CountMarks(ps_links, "rect", "measured ps"), 16);
  EXPECT_EQ(testing::CountMarks(testing::SvgById(*dom, "model-busiest-job0"), "polyline"), 2);
}

}  // namespace
}  // namespace ringside::cli
