#include "worker/dataset.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace ringside::worker {
namespace {

TEST(IrisTest, HasFiftyRowsPerClassAndTheKnownMeans) {
  auto iris = ParseCsvDataset(IrisCsv(), "iris");
  ASSERT_TRUE(iris.ok()) << iris.status();
  ASSERT_EQ(iris->rows(), 150);
  ASSERT_EQ(iris->features, 4);
  ASSERT_EQ(iris->classes, 3);
  EXPECT_EQ(iris->class_names,
            (std::vector<std::string>{"Iris-setosa", "Iris-versicolor", "Iris-virginica"}));
  // Per-class means (Fisher 1936): sepal length, sepal width, petal length, petal width.
  const double kMeans[3][4] = {
      {5.006, 3.428, 1.462, 0.246}, {5.936, 2.770, 4.260, 1.326}, {6.588, 2.974, 5.552, 2.026}};
  for (int c = 0; c < 3; ++c) {
    double sums[4] = {0, 0, 0, 0};
    int count = 0;
    for (int64_t r = 0; r < iris->rows(); ++r) {
      if (iris->y[r] != c) continue;
      ++count;
      for (int j = 0; j < 4; ++j) sums[j] += iris->x[r * 4 + j];
    }
    EXPECT_EQ(count, 50) << "class " << c;
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(sums[j] / 50, kMeans[c][j], 1e-4) << c << "," << j;
  }
}

TEST(DataSpecTest, ParsesAndRejects) {
  auto iris = ParseDataSpec("iris");
  ASSERT_TRUE(iris.ok());
  EXPECT_EQ(iris->kind, DataSpec::Kind::kIris);
  auto synthetic = ParseDataSpec("synthetic:1000");
  ASSERT_TRUE(synthetic.ok());
  EXPECT_EQ(synthetic->kind, DataSpec::Kind::kSynthetic);
  EXPECT_EQ(synthetic->rows, 1000);
  EXPECT_EQ(synthetic->ToString(), "synthetic:1000");
  for (const char* bad : {"", "Iris", "mnist", "synthetic", "synthetic:", "synthetic:0",
                          "synthetic:-5", "synthetic:1e3", "synthetic:100000000000"}) {
    EXPECT_EQ(ParseDataSpec(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CsvTest, RejectsMalformedInput) {
  EXPECT_FALSE(ParseCsvDataset("a,b,class\n1,2,x\n3,y,z\n", "t").ok());
  EXPECT_FALSE(ParseCsvDataset("a,b,class\n1,2\n", "t").ok());
  EXPECT_FALSE(ParseCsvDataset("a,b,class\n1,2,only_one_class\n", "t").ok());
  EXPECT_FALSE(ParseCsvDataset("", "t").ok());
  auto ok = ParseCsvDataset("a,class\r\n1.5,x\r\n-2,y\r\n\r\n", "t");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->rows(), 2);
  EXPECT_EQ(ok->y, (std::vector<int32_t>{0, 1}));
}

TEST(SyntheticTest, IsSeededBalancedAndStandardised) {
  auto spec = ModelSpec::Parse("6,8,4", "relu");
  ASSERT_TRUE(spec.ok());
  auto a = LoadDataset(*ParseDataSpec("synthetic:400"), *spec, 7);
  auto b = LoadDataset(*ParseDataSpec("synthetic:400"), *spec, 7);
  auto c = LoadDataset(*ParseDataSpec("synthetic:400"), *spec, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->features, 6);
  EXPECT_EQ(a->classes, 4);
  EXPECT_EQ(a->rows(), 400);
  EXPECT_EQ(std::memcmp(a->x.data(), b->x.data(), a->x.size() * sizeof(float)), 0);
  EXPECT_NE(a->x, c->x);
  std::vector<int> per_class(4);
  for (int32_t y : a->y) ++per_class[y];
  EXPECT_EQ(per_class, (std::vector<int>{100, 100, 100, 100}));
  for (int j = 0; j < 6; ++j) {
    double sum = 0, squares = 0;
    for (int64_t r = 0; r < a->rows(); ++r) sum += a->x[r * 6 + j];
    for (int64_t r = 0; r < a->rows(); ++r) squares += std::pow(a->x[r * 6 + j] - sum / 400, 2);
    EXPECT_NEAR(sum / 400, 0.0, 1e-5);
    EXPECT_NEAR(std::sqrt(squares / 400), 1.0, 1e-5);
  }
}

TEST(LoadDatasetTest, IrisNeedsFourInputsAndThreeClasses) {
  auto good = LoadDataset(*ParseDataSpec("iris"), *ModelSpec::Parse("4,16,3", "tanh"), 1);
  ASSERT_TRUE(good.ok()) << good.status();
  double sum = 0;
  for (int64_t r = 0; r < 150; ++r) sum += good->x[r * 4 + 2];
  EXPECT_NEAR(sum / 150, 0.0, 1e-5);  // standardised
  auto bad = LoadDataset(*ParseDataSpec("iris"), *ModelSpec::Parse("5,16,3", "tanh"), 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto huge = LoadDataset(DataSpec{DataSpec::Kind::kSynthetic, kMaxSyntheticRows},
                          *ModelSpec::Parse("784,10", "tanh"), 1);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringside::worker
