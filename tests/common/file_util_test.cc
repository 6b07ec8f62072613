// Scratch files (common/file_util.h): written whole and read back into a buffer of exactly their
// size; a file of another size, or none, is an error naming it, never a partial read.
#include "common/file_util.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

TEST(ScratchFileTest, IsReadBackIntoABufferOfItsSize) {
  auto dir = launch::TempDir::Create("ringside-scratch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("values");
  const std::string contents = "0123456789abcdef";
  ASSERT_TRUE(WriteScratchFile(path, contents).ok());
  std::string out(contents.size(), '\0');
  ASSERT_TRUE(ReadFileInto(path, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, contents);
  EXPECT_EQ(WriteScratchFile(path, contents).code(), absl::StatusCode::kInternal)
      << "an existing file is never written over";
}

TEST(ScratchFileTest, AFileOfAnotherSizeOrNoneIsAnError) {
  auto dir = launch::TempDir::Create("ringside-scratch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("values");
  ASSERT_TRUE(WriteScratchFile(path, "0123").ok());
  std::string longer(5, '\0');
  const absl::Status status = ReadFileInto(path, absl::MakeSpan(longer));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("holds 4 bytes, not the 5 expected"));
  std::string shorter(3, '\0');
  EXPECT_EQ(ReadFileInto(path, absl::MakeSpan(shorter)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFileInto(dir->File("none"), absl::MakeSpan(shorter)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(WriteScratchFile(dir->File("no/such/dir"), "x").code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ringside
