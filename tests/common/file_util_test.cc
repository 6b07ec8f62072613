// Scratch files (common/file_util.h): written and read at offsets within their size; a file of
// another size, or none, is an error naming it, never a partial read. Atomic writes: the file
// appears whole at its path on Commit, and a writer that does not commit leaves nothing.
#include "common/file_util.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

using ::testing::HasSubstr;

TEST(ScratchFileTest, IsWrittenAndReadAtOffsetsWithinItsSize) {
  auto dir = launch::TempDir::Create("ringside-scratch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("values");
  absl::StatusOr<ScratchFile> file = ScratchFile::Create(path, 16);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Write(8, "89abcdef").ok());
  ASSERT_TRUE(file->Write(0, "01234567").ok());
  EXPECT_EQ(file->Write(12, "too long").code(), absl::StatusCode::kInvalidArgument);
  std::string middle(6, '\0');
  ASSERT_TRUE(file->Read(5, absl::MakeSpan(middle)).ok());
  EXPECT_EQ(middle, "56789a");
  std::string past(2, '\0');
  EXPECT_EQ(file->Read(15, absl::MakeSpan(past)).code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<ScratchFile> again = ScratchFile::Open(path, 16);
  ASSERT_TRUE(again.ok()) << again.status();
  std::string all(16, '\0');
  ASSERT_TRUE(again->Read(0, absl::MakeSpan(all)).ok());
  EXPECT_EQ(all, "0123456789abcdef");
  EXPECT_EQ(ScratchFile::Create(path, 16).status().code(), absl::StatusCode::kInternal)
      << "an existing file is never written over";
}

TEST(ScratchFileTest, AFileOfAnotherSizeOrNoneIsAnError) {
  auto dir = launch::TempDir::Create("ringside-scratch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("values");
  ASSERT_TRUE(ScratchFile::Create(path, 4).ok());
  const absl::Status status = ScratchFile::Open(path, 5).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("holds 4 bytes, not the 5 expected"));
  EXPECT_EQ(ScratchFile::Open(path, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScratchFile::Open(dir->File("none"), 3).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ScratchFile::Create(dir->File("no/such/dir"), 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ScratchFileTest, AFileCutShortUnderItsReaderIsAnErrorNotAPartialRead) {
  auto dir = launch::TempDir::Create("ringside-scratch-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("values");
  ASSERT_TRUE(ScratchFile::Create(path, 8).ok());
  absl::StatusOr<ScratchFile> file = ScratchFile::Open(path, 8);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(truncate(path.c_str(), 4), 0);
  std::string out(8, '\0');
  const absl::Status status = file->Read(0, absl::MakeSpan(out));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("ended early"));
}

TEST(AtomicFileWriterTest, TheFileAppearsWholeOnCommitAndAnAbandonedWriterLeavesNothing) {
  auto dir = launch::TempDir::Create("ringside-atomic-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("file");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    absl::StatusOr<AtomicFileWriter> file = AtomicFileWriter::Create(dir->File(".file.tmp"), 0644);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(file->Append("ne").ok());
    ASSERT_TRUE(file->Append("w").ok());
    EXPECT_EQ(ReadFileToString(path).value(), "old") << "nothing visible before the commit";
    ASSERT_TRUE(file->Commit(path).ok());
  }
  EXPECT_EQ(ReadFileToString(path).value(), "new");
  {
    absl::StatusOr<AtomicFileWriter> file = AtomicFileWriter::Create(dir->File(".file.tmp"), 0644);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(file->Append("abandoned").ok());
  }
  EXPECT_EQ(ReadFileToString(path).value(), "new");
  EXPECT_FALSE(std::filesystem::exists(dir->File(".file.tmp"))) << "the temporary is removed";
  // An existing temporary is never written through (O_EXCL).
  ASSERT_TRUE(WriteFileAtomically(dir->File(".taken"), "x").ok());
  EXPECT_FALSE(AtomicFileWriter::Create(dir->File(".taken"), 0644).ok());
  const absl::Status missing = AtomicFileWriter::Create(dir->File("no/such/dir"), 0644).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(WithHint(missing, "a hint").message(), HasSubstr("no/such/dir: "));
  EXPECT_THAT(WithHint(missing, "a hint").message(), HasSubstr("; a hint"));
}

}  // namespace
}  // namespace ringside
