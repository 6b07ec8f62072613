// `ringside-bench codec`'s measurement (bench/codec_bench.h) at a tiny size, one round each: a
// record per codec after the copy and error feedback's add, each codec's exact bytes per element,
// and bad options refused. No timing is asserted.
#include "bench/codec_bench.h"

#include <sstream>

#include "gtest/gtest.h"

namespace ringside::bench {
namespace {

TEST(CodecBenchTest, MeasuresTheCopyThenEveryCodecWithItsBytes) {
  CodecBenchOptions options;
  options.codecs = {"topk:0.1", "sign", "randomk:0.1", "powersgd:2"};
  options.elements = 1001;
  options.segment_elements = 256;  // 256, 256, 256, 233
  options.min_seconds = 0;
  auto records = MeasureCodecs(options);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 6u);
  EXPECT_EQ((*records)[0].codec, "copy");
  EXPECT_EQ((*records)[0].bytes_per_element, 4.0);
  EXPECT_EQ((*records)[1].codec, "ef-add");  // error feedback's add: nothing sent
  EXPECT_EQ((*records)[1].bytes_per_element, 0.0);
  EXPECT_EQ((*records)[2].codec, "topk:0.1");
  EXPECT_DOUBLE_EQ((*records)[2].bytes_per_element, (3 * (4 + 8 * 26) + 4 + 8 * 24) / 1001.0);
  EXPECT_DOUBLE_EQ((*records)[3].bytes_per_element, (3 * 36 + 34) / 1001.0);
  EXPECT_DOUBLE_EQ((*records)[4].bytes_per_element, 4 * (3 * 26 + 24) / 1001.0);
  // PowerSGD on a matrix of 1024 columns (one row here, too small to gain: sent whole, with its
  // bias).
  EXPECT_EQ((*records)[5].codec, "powersgd:2");
  EXPECT_DOUBLE_EQ((*records)[5].bytes_per_element, 4.0);
  for (const CodecBenchRecord& record : *records) EXPECT_GE(record.rounds, 1) << record.codec;
  std::ostringstream out;
  ASSERT_TRUE(RunCodecBench(options, out).ok());
  EXPECT_NE(out.str().find("ns/element"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("randomk:0.1"), std::string::npos) << out.str();
}

TEST(CodecBenchTest, RefusesBadOptions) {
  CodecBenchOptions options;
  options.codecs = {"topk:2"};
  EXPECT_EQ(MeasureCodecs(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.codecs = {"none"};
  EXPECT_EQ(MeasureCodecs(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.codecs = {"sign"};
  options.segment_elements = 0;
  EXPECT_EQ(MeasureCodecs(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::bench
