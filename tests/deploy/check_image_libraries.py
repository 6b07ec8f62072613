#!/usr/bin/python3
"""The Dockerfile's runtime stage installs every shared library the binaries need: each library
that `ldd` resolves for the built ringside binaries belongs to a Debian package that is either in
the runtime stage's `apt-get install` list, a dependency of one (closure over this machine's
installed packages, from dpkg), or part of debian:12-slim (the closure of the Priority: required
packages). Catches a new library dependency that would only fail when the image starts.

  check_image_libraries.py BIN_DIR DOCKERFILE
"""
import os
import re
import subprocess
import sys

BINARIES = ["ringside", "ringside-controller", "ringside-ps", "ringside-worker"]


def runtime_packages(dockerfile):
    text = open(dockerfile, encoding="utf-8").read().replace("\\\n", " ")
    stage = re.search(r"^FROM \S+ AS runtime-cpu$(.*?)^FROM ", text, re.M | re.S)
    if not stage:
        sys.exit(f"{dockerfile}: no runtime-cpu stage")
    install = re.search(r"apt-get install -y --no-install-recommends (.*?)&&", stage.group(1))
    if not install:
        sys.exit(f"{dockerfile}: no apt-get install in the runtime-cpu stage")
    return install.group(1).split()


def installed():
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Priority}\t"
                          "${Depends}, ${Pre-Depends}\n"], capture_output=True, text=True,
                         check=True).stdout
    packages = {}
    for line in out.splitlines():
        name, status, priority, depends = line.split("\t")
        if status.endswith(" installed"):
            alternatives = [re.split(r"[ :(]", a.strip())[0] for d in depends.split(",")
                            for a in d.split("|") if a.strip()]
            packages[name] = (priority, alternatives)
    return packages


def closure(roots, packages):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        todo.extend(packages[name][1])
    return seen


def packages_of(paths):
    """{path: package} through one dpkg -S call (per path: as given, resolved, and under /lib,
    since Debian 12 registers libraries under /lib while /lib links to /usr/lib)."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        for candidate in (path, real, re.sub(r"^/usr/lib/", "/lib/", real)):
            candidates.setdefault(candidate, path)
    result = subprocess.run(["dpkg", "-S", *candidates], capture_output=True, text=True)
    owners = {}
    for line in result.stdout.splitlines():
        package, _, owned = line.partition(": ")
        if owned in candidates:
            owners[candidates[owned]] = package.split(":")[0]
    return owners


def main(bin_dir, dockerfile):
    packages = installed()
    wanted = runtime_packages(dockerfile)
    missing_here = [p for p in wanted if p not in packages]
    if missing_here:
        sys.exit(f"runtime packages not installed on this machine: {missing_here}: "
                 "run scripts/setup-debian.sh")
    required = [name for name, (priority, _) in packages.items() if priority == "required"]
    provided = closure(wanted, packages) | closure(required, packages)
    problems = []
    libraries = {}
    for binary in BINARIES:
        path = os.path.join(bin_dir, binary)
        ldd = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
        libraries[binary] = re.findall(r"=> (/\S+)", ldd)
    owners = packages_of({lib for libs in libraries.values() for lib in libs})
    for binary, libs in libraries.items():
        for library in libs:
            package = owners.get(library)
            if package is None:
                problems.append(f"{binary}: {library} belongs to no Debian package")
            elif package not in provided:
                problems.append(f"{binary}: {library} is in {package}, which the runtime stage "
                                f"does not install")
    for p in sorted(set(problems)):
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"image libraries: ok ({len(wanted)} runtime packages cover {len(BINARIES)} binaries)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
