#!/usr/bin/env bash
# Checks that everything in scripts/runtime-requirements.txt is on this machine, naming what is
# missing and why a test needs it. With --owners, also that each comes from a package that
# scripts/setup-debian.sh names (or a dependency of one, or a package of every Debian system),
# so a fresh machine gets it too: what this machine happens to have proves nothing.
# Exit 0 when all hold; 1, listing every problem, otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
requirements=$here/runtime-requirements.txt
owners=false
[ "${1:-}" = --owners ] && owners=true

problems=()
declare -A file_of  # requirement -> the file that provides it

while read -r kind name why; do
  case $kind in
    '' | '#'*) continue ;;
    program | image)
      if path=$(command -v "$name"); then file_of[$name]=$(readlink -f "$path")
      elif [ "$kind" = image ]; then
        echo "note: $name is not here; it comes with the machine image, not Debian ($why)" >&2
      else problems+=("missing program $name: $why"); fi ;;
    path)
      if [ -e "$name" ]; then file_of[$name]=$(readlink -f "$name")
      else problems+=("missing file $name: $why"); fi ;;
    python)
      if module=$(/usr/bin/python3 -c "import $name; print($name.__file__)" 2>/dev/null); then
        file_of[$name]=$(readlink -f "$module")
      else problems+=("missing python3 module $name: $why"); fi ;;
    *) problems+=("runtime-requirements.txt: unknown kind '$kind' for $name") ;;
  esac
  [ "$kind" = image ] && unset "file_of[$name]" 2>/dev/null || true
done <"$requirements"

# The package that installed a file; dpkg records paths as the package shipped them, which may
# be /bin or /sbin where the file now lives under /usr (merged /usr).
package_of() {
  local file=$1 candidates=("$1")
  case $file in
    /usr/bin/* | /usr/sbin/* | /usr/lib/*) candidates+=("${file#/usr}") ;;
  esac
  for candidate in "${candidates[@]}"; do
    if owner=$(dpkg-query -S "$candidate" 2>/dev/null); then
      echo "${owner%%:*}" | cut -d, -f1 | sed 's/:.*//'
      return 0
    fi
  done
  return 1
}

if $owners && [ ${#file_of[@]} -gt 0 ]; then
  mapfile -t named < <(bash "$here/setup-debian.sh" --list)
  declare -A allowed=()
  # The named packages and everything they depend on (not what they only recommend: the set-up
  # installs without recommended packages).
  while read -r package; do
    allowed[${package%%:*}]=1
  done < <(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
             --no-breaks --no-replaces --no-enhances "${named[@]}" 2>/dev/null |
           grep -v '^ ' | tr -d '<>')
  for name in "${!file_of[@]}"; do
    file=${file_of[$name]}
    if ! package=$(package_of "$file"); then
      problems+=("$name ($file) belongs to no Debian package: install it through a package")
      continue
    fi
    [ -n "${allowed[$package]:-}" ] && continue
    priority=$(dpkg-query -W -f='${Priority}' "$package" 2>/dev/null || true)
    [ "$priority" = required ] && continue
    problems+=("$name comes from package $package, which scripts/setup-debian.sh neither names nor depends on: a fresh machine lacks it")
  done
fi

for problem in "${problems[@]}"; do echo "check-runtime: $problem" >&2; done
count=$(grep -cE '^(program|path|python|image) ' "$requirements")
echo "check-runtime: $count requirements, ${#problems[@]} problems$($owners && echo ' (owners checked)')"
[ ${#problems[@]} -eq 0 ]
