#include "cli/report/svg_chart.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ScaleTest, MapsLinearlyAndLogarithmically) {
  const Scale linear{0, 10, 100, 200};
  EXPECT_DOUBLE_EQ(linear(5), 150);
  const Scale flipped{0, 10, 300, 100};  // y axes grow upwards
  EXPECT_DOUBLE_EQ(flipped(10), 100);
  const Scale log{2, 1024, 0, 90, /*log=*/true};
  EXPECT_DOUBLE_EQ(log(2), 0);
  EXPECT_DOUBLE_EQ(log(32), 40);  // 4 of 9 doublings
  EXPECT_DOUBLE_EQ(log(1024), 90);
}

TEST(TicksTest, RoundStepsFromZero) {
  EXPECT_THAT(LinearTicks(0.345, 5),
              ElementsAre(0, DoubleEq(0.1), DoubleEq(0.2), DoubleEq(0.3), DoubleEq(0.4)));
  EXPECT_THAT(LinearTicks(100, 4), ElementsAre(0, 50, 100));
  EXPECT_THAT(ByteTicks(11182144, 4), ElementsAre(0, 5 << 20, 10 << 20, 15 << 20));
  EXPECT_THAT(ByteTicks(800, 4), ElementsAre(0, 200, 400, 600, 800));
  EXPECT_THAT(PowerOfTwoTicks(3, 40, 10), ElementsAre(4, 8, 16, 32));
  EXPECT_THAT(PowerOfTwoTicks(1, 1024, 6), ElementsAre(1, 4, 16, 64, 256, 1024));
}

TEST(SvgCanvasTest, EscapesAndMarksDataElements) {
  SvgCanvas svg("chart-<1>", 100, 50, "a \"title\" & more");
  svg.Bar(1, 2, 3, 4, kRingColor, "measured ring", "worker-0 \u2192 <ps-0>");
  svg.Text(0, 0, "<b>", "start");
  const std::string text = svg.Finish();
  EXPECT_EQ(
      text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"chart-&lt;1&gt;\"",
                 0),
      0u);
  EXPECT_THAT(text, HasSubstr("aria-label=\"a &quot;title&quot; &amp; more\""));
  EXPECT_THAT(text,
              HasSubstr("<rect class=\"mark measured ring\" x=\"1.0\" y=\"2.0\" width=\"3.0\" "
                        "height=\"4.0\" fill=\"#1f77b4\"><title>worker-0 \u2192 &lt;ps-0&gt;"
                        "</title></rect>"));
  EXPECT_THAT(text, HasSubstr(">&lt;b&gt;</text>"));
  EXPECT_THAT(text, HasSubstr("</svg>"));
}

TEST(TextLayoutTest, WrapsRunNamesAtSpacesAndBeforeSlashes) {
  EXPECT_THAT(WrapText("ring", 14), ElementsAre("ring"));
  EXPECT_THAT(WrapText("ps staleness=2", 14), ElementsAre("ps staleness=2"));
  EXPECT_THAT(WrapText("ps backup_workers=1/no_straggler", 14),
              ElementsAre("ps", "backup_workers=1", "/no_straggler"));
  EXPECT_THAT(WrapText("ps sync/no_straggler", 14), ElementsAre("ps sync", "/no_straggler"));
  EXPECT_THAT(WrapText("", 14), ElementsAre());
}

TEST(TextLayoutTest, WidthGrowsWithLengthSizeAndWeight) {
  EXPECT_DOUBLE_EQ(TextWidth("", 12), 0);
  EXPECT_DOUBLE_EQ(TextWidth("ab", 10), 2 * 0.62 * 10);
  EXPECT_GT(TextWidth("ab", 10, /*bold=*/true), TextWidth("ab", 10));
  EXPECT_DOUBLE_EQ(TextWidth("m=", 10), 20);                      // the widest glyphs: 1 em each
  EXPECT_DOUBLE_EQ(TextWidth("\u00d7", 10), TextWidth("x", 10));  // one character, two bytes
}

TEST(SvgCanvasTest, ALabelCarriesItsClass) {
  SvgCanvas svg("c", 10, 10, "t");
  svg.Text(1, 2, "ps", "middle", 13, true, "run-label");
  EXPECT_THAT(svg.Finish(), HasSubstr("<text class=\"run-label\" x=\"1.0\" y=\"2.0\""));
}

}  // namespace
}  // namespace ringside::cli
