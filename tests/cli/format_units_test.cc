#include "cli/report/format_units.h"

#include <cstdint>
#include <limits>

#include "cli/progress.h"
#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

TEST(HumanBytesTest, ThreeSignificantDigitsInIecUnits) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(784), "784 B");
  EXPECT_EQ(HumanBytes(524.5), "524.5 B");
  EXPECT_EQ(HumanBytes(1024), "1.00 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(11182140), "10.7 MiB");
  EXPECT_EQ(HumanBytes(7454760), "7.11 MiB");
  EXPECT_EQ(HumanBytes(14909520), "14.2 MiB");
  EXPECT_EQ(HumanBytes(512.0 * 1024 * 1024), "512 MiB");
  EXPECT_EQ(HumanBytes(3.0 * 1024 * 1024 * 1024), "3.00 GiB");
}

TEST(HumanBytesTest, NeverPrintsFourDigitsOfAUnit) {
  EXPECT_EQ(HumanBytes(1023.9 * 1024), "1.00 MiB");
  EXPECT_EQ(HumanBytes(1023.0 * 1024), "1023 KiB");
}

TEST(HumanSecondsTest, PicksAUnitPerMagnitude) {
  EXPECT_EQ(HumanSeconds(0), "0 s");
  EXPECT_EQ(HumanSeconds(0.210), "210 ms");
  EXPECT_EQ(HumanSeconds(0.0123), "12.3 ms");
  EXPECT_EQ(HumanSeconds(2.5), "2.50 s");
  EXPECT_EQ(HumanSeconds(4.2e-5), "42.0 \u00b5s");
  EXPECT_EQ(HumanSeconds(std::numeric_limits<double>::quiet_NaN()), "n/a");
}

TEST(PercentTest, OneDecimal) {
  EXPECT_EQ(Percent(0.5714), "57.1%");
  EXPECT_EQ(Percent(1), "100.0%");
}

TEST(WithThousandsTest, GroupsDigits) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(131), "131");
  EXPECT_EQ(WithThousands(1863690), "1,863,690");
  EXPECT_EQ(WithThousands(-1000), "-1,000");
  EXPECT_EQ(WithThousands(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

TEST(ShortNumberTest, ReadableAtEveryMagnitude) {
  EXPECT_EQ(ShortNumber(0), "0");
  EXPECT_EQ(ShortNumber(301.2), "301");
  EXPECT_EQ(ShortNumber(15238), "15,238");
  EXPECT_EQ(ShortNumber(0.3412), "0.341");
  EXPECT_EQ(ShortNumber(2.4e-7), "2.40e-07");
}

TEST(HtmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("<b a=\"x\">'&'</b>"), "&lt;b a=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;");
  EXPECT_EQ(HtmlEscape("worker-0 \u2192 ps-1"), "worker-0 \u2192 ps-1");
}

TEST(ProgressTextTest, RatesWhileTrainingAndFinishingOnceEveryStepIsDone) {
  EXPECT_EQ(ProgressText(40, 200, 3.14, 7.0 * 1024 * 1024),
            "40/200 steps, 3.1 steps/s, 7.00 MiB/s");
  // The evaluator catches up after the last step: no "0.0 steps/s" as if training had stalled.
  EXPECT_EQ(ProgressText(200, 200, 0, 0), "200/200 steps done, finishing (evaluations, results)");
}

}  // namespace
}  // namespace ringside::cli
