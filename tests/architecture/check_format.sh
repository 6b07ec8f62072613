#!/bin/sh
# Every C++ and CUDA source is formatted as .clang-format says. Usage: check_format.sh REPO_DIR
# Fix with `make format`.
set -u
cd "$1" || exit 1
command -v clang-format >/dev/null || {
  echo "FAIL: clang-format is missing; run scripts/setup-debian.sh (make test does)"; exit 1; }
files=$(find common proto ring server worker launch cli bench tests \
          -path tests/deploy/node_modules -prune -o \
          \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \) -print | sort)
# One clang-format for all files; it names each unformatted file in its "file:line:col:" lines.
unformatted=$(clang-format --dry-run --Werror $files 2>&1 | grep -o '^[^: ]*:[0-9]*:[0-9]*: error' |
                cut -d: -f1 | sort -u)
if [ -n "$unformatted" ]; then
  echo "FAIL: not formatted per .clang-format (run: make format):"
  for f in $unformatted; do echo "  $f"; done
  exit 1
fi
echo "ok: $(echo "$files" | wc -l) files formatted per .clang-format"
