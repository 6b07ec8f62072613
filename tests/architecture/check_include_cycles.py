#!/usr/bin/env python3
"""Fails when project files include each other in a loop.

A unit is a header with its source (foo.h and foo.cc, or foo.cu): unit A depends on unit B when
any file of A includes B's header. A cycle among units (a.cc includes b.h while b.h or b.cc
includes a.h, or a longer ring) is an include loop that climbs back up: the lower unit must not
know the higher one. The fix is to move what both need into a small header of its own, or to
invert the dependency.

Usage: check_include_cycles.py REPO_ROOT [FOLDER...]   (default: every source folder)
Prints each cycle found, one per line, and exits 1 if there is any; else prints a summary.
"""
import os
import re
import sys

FOLDERS = ["common", "ring", "server", "worker", "launch", "cli", "bench"]
SUFFIXES = (".h", ".cc", ".cu", ".h.in", ".cc.in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def unit_of(path):
    for suffix in SUFFIXES:
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = argv[1]
    folders = argv[2:] or FOLDERS
    edges = {}  # unit -> {unit it depends on: the include that makes it}
    for folder in folders:
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                path = os.path.relpath(os.path.join(directory, name), root)
                unit = unit_of(path)
                if unit is None:
                    continue
                deps = edges.setdefault(unit, {})
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        target = unit_of(match.group(1))
                        if target is not None and target != unit:
                            deps.setdefault(target, f"{path} includes {match.group(1)}")
    # Only edges between units found here (a generated proto header is no unit of ours).
    for unit in edges:
        edges[unit] = {t: why for t, why in edges[unit].items() if t in edges}

    # Tarjan's strongly connected components, iteratively.
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            unit, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[unit] = min(low[unit], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[unit])
            if low[unit] == index[unit]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == unit:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for component in sorted(components):
        members = set(component)
        print("include cycle among " + ", ".join(component) + ":")
        for unit in component:
            for target, why in sorted(edges[unit].items()):
                if target in members:
                    print(f"  {why}")
    if components:
        print(f"{len(components)} include cycle(s); move what both sides need into a header of "
              "its own, or invert the dependency")
        return 1
    print(f"no include cycles among {len(edges)} units in {', '.join(folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
