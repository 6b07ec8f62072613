// A fresh private directory under $TMPDIR (or /tmp), removed with its contents when the owner
// goes away. For rendezvous files, per-rank result files and logs of child processes.
//
// Ownership: move-only; the object owns the directory tree. Thread-compatible.
// Errors: Create() returns INTERNAL when mkdtemp fails; removal errors in the destructor are
// ignored (best effort, never throws).
#ifndef RINGSIDE_LAUNCH_TEMP_DIR_H_
#define RINGSIDE_LAUNCH_TEMP_DIR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside::launch {

class TempDir {
 public:
  // Creates "<tmp>/<prefix>XXXXXX" (<tmp>: Base()).
  static absl::StatusOr<TempDir> Create(absl::string_view prefix);
  // Where temporary directories go: $TMPDIR, or /tmp when it is unset or empty.
  static std::string Base();

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();  // removes the tree unless Keep() was called

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(absl::string_view name) const;
  // Leaves the directory on disk (e.g. to inspect logs after a failure).
  void Keep() { keep_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  void Remove();

  std::string path_;
  bool keep_ = false;
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_TEMP_DIR_H_
