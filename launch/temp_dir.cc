#include "launch/temp_dir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ringside::launch {

std::string TempDir::Base() {
  const char* base = getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

absl::StatusOr<TempDir> TempDir::Create(absl::string_view prefix) {
  std::string pattern = absl::StrCat(Base(), "/", prefix, "XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", strerror(errno)));
  }
  return TempDir(std::string(buffer.data()));
}

TempDir::TempDir(TempDir&& other) noexcept { *this = std::move(other); }

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() { Remove(); }

std::string TempDir::File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

void TempDir::Remove() {
  if (path_.empty() || keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace ringside::launch
