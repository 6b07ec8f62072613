// FlagGiven and RepeatedFlagValues (common/flags/command_line.h): every form Abseil accepts.
#include "common/flags/command_line.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

using ::testing::ElementsAre;

// A command line as main() gets it.
class Argv {
 public:
  explicit Argv(std::vector<std::string> args) : args_(std::move(args)) {
    for (std::string& arg : args_) pointers_.push_back(arg.data());
  }
  int argc() const { return static_cast<int>(pointers_.size()); }
  char* const* argv() const { return pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
};

TEST(CommandLineTest, AFlagIsGivenInEveryFormAbseilAccepts) {
  for (const char* form : {"--steps=5", "-steps=5", "--steps", "-steps"}) {
    const Argv line({"ringside", "up", form, "5"});
    EXPECT_TRUE(FlagGiven(line.argc(), line.argv(), "steps")) << form;
  }
  const Argv other({"ringside", "up", "--steps_per_day=5", "--batch_size=4", "steps"});
  EXPECT_FALSE(FlagGiven(other.argc(), other.argv(), "steps"));
  const Argv after_end({"ringside", "up", "--", "--steps=5"});
  EXPECT_FALSE(FlagGiven(after_end.argc(), after_end.argv(), "steps")) << "-- ends the flags";
  const Argv binary_only({"--steps=5"});
  EXPECT_FALSE(FlagGiven(binary_only.argc(), binary_only.argv(), "steps")) << "argv[0] is no flag";
}

TEST(CommandLineTest, EveryValueOfARepeatedFlagInOrder) {
  const Argv line({"ringside", "lab", "--slow_link=worker-0:1mbit", "-slow_link", "worker-1:2mbit",
                   "--link_rate=1gbit", "--slow_link", "worker-2:3mbit", "--", "--slow_link=x"});
  EXPECT_THAT(RepeatedFlagValues(line.argc(), line.argv(), "slow_link"),
              ElementsAre("worker-0:1mbit", "worker-1:2mbit", "worker-2:3mbit"));
  const Argv dangling({"ringside", "lab", "--slow_link"});
  EXPECT_TRUE(RepeatedFlagValues(dangling.argc(), dangling.argv(), "slow_link").empty());
}

}  // namespace
}  // namespace ringside
