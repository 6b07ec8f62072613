#!/bin/sh
# Every relative link in the README, the changelog and docs/ resolves to a file inside the
# repository (a clone has nothing beside it), and nothing refers to the tracker's shared folder.
# Usage: check_doc_links.sh REPO_DIR
set -u
repo=$(cd "$1" && pwd) || exit 1
status=0
for doc in "$repo"/README.md "$repo"/CHANGELOG.md "$repo"/docs/*.md; do
  [ -e "$doc" ] || continue
  dir=$(dirname "$doc")
  for target in $(grep -o '](\([^)#]*\)' "$doc" | sed 's/^](//' | grep -v '^[a-z]*://' | sort -u); do
    resolved=$(realpath -m "$dir/$target")
    case "$resolved" in
      "$repo"/*) ;;
      *) echo "FAIL: ${doc#$repo/} links outside the repository: $target"; status=1; continue ;;
    esac
    [ -e "$resolved" ] || { echo "FAIL: ${doc#$repo/} links a missing file: $target"; status=1; }
  done
done
if grep -rn '\.\./shared' "$repo"/README.md "$repo"/CHANGELOG.md "$repo"/docs 2>/dev/null; then
  echo "FAIL: the lines above point at ../shared, which a clone does not have"; status=1
fi
[ $status -eq 0 ] && echo "ok: every documentation link resolves inside the repository"
exit $status
