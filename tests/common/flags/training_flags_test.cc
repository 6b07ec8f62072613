// The training flags (common/flags/training_flags.h) and the description they are made from:
// one flag per row, its default the struct's, and a TrainingOptions value with every field
// changed survives TrainingOptionsArgv followed by Abseil's parser and TrainingOptionsFromFlags.
#include "common/flags/training_flags.h"

#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/support/training_options_sample.h"

namespace ringside {
namespace {

TEST(TrainingFlagsTest, EveryRowIsAFlagWithTheStructsDefaultAndTheRowsHelp) {
  const TrainingOptions defaults;
  for (const TrainingOption& option : TrainingOptionTable()) {
    SCOPED_TRACE(option.name);
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(option.name);
    ASSERT_NE(flag, nullptr);
    EXPECT_EQ(flag->DefaultValue(), TrainingOptionText(option.get(defaults)));
    EXPECT_EQ(flag->Help(), option.help);
  }
}

TEST(TrainingFlagsTest, EveryFlagOfTheFileIsARow) {
  int flags = 0;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "common/flags/training_flags.cc")) continue;
    ++flags;
    EXPECT_NE(FindTrainingOption(name), nullptr) << "--" << name << " has no row";
  }
  EXPECT_EQ(flags, static_cast<int>(TrainingOptionTable().size()));
}

TEST(TrainingFlagsTest, UnsetFlagsGiveTheDefaults) {
  absl::FlagSaver saver;
  const absl::StatusOr<TrainingOptions> options = TrainingOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  testing::ExpectSameTrainingOptions(*options, TrainingOptions());
}

// A field the description leaves out, or writes or reads wrong, differs here.
TEST(TrainingFlagsTest, OptionsSurviveTheirCommandLine) {
  absl::FlagSaver saver;
  const TrainingOptions sent = testing::NonDefaultTrainingOptions();
  std::vector<std::string> args = {"training_flags_test"};
  for (const std::string& flag : TrainingOptionsArgv(sent)) args.push_back(flag);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  const std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(positional.size(), 1u);
  const absl::StatusOr<TrainingOptions> received = TrainingOptionsFromFlags();
  ASSERT_TRUE(received.ok()) << received.status();
  testing::ExpectSameTrainingOptions(*received, sent);
}

TEST(TrainingFlagsTest, AValueOutOfRangeNamesItsFlagAndValue) {
  for (const auto& [flag, value, message] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"eval_every", "0", "--eval_every=0: must be at least 1 step"},
           {"lr", "-1", "--lr=-1: learning rate must be positive"},
           {"optimizer", "lbfgs", "--optimizer=lbfgs: unknown optimizer 'lbfgs'"}}) {
    SCOPED_TRACE(flag);
    absl::FlagSaver saver;
    std::string error;
    ASSERT_TRUE(absl::FindCommandLineFlag(flag)->ParseFrom(value, &error)) << error;
    const absl::StatusOr<TrainingOptions> options = TrainingOptionsFromFlags();
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(options.status().message(), message)) << options.status();
  }
}

}  // namespace
}  // namespace ringside
