#!/usr/bin/python3
"""Every command line the docs show that starts a Ringside binary or script must work as shown.

Reads README.md, CHANGELOG.md and docs/*.md: code blocks line by line (a trailing backslash joins
lines) and inline code spans. Wherever a token names a Ringside binary (ringside,
ringside-controller, -ps, -worker, -bench, with or without a build/bin/ path) the tokens up to
the next shell separator form its command line, and:
  - every --flag must be one of that binary's flags (its --helpfull);
  - `ringside` must name a subcommand it has (compare, lab, plan, up, ctl mode ring|ps, health);
  - `ringside-bench` must name a command it has;
  - a command line with --help is run and must exit 0 and print something.
A token naming a script (scripts/..., deploy/..., tests/...: a path ending in .sh or .py) must be
a file of the repository, and `make TARGET` a target of the Makefile.
Usage: check_doc_commands.py REPO_ROOT BIN_DIR. Exit 1 with every problem listed, one a line.
"""
import glob
import os
import re
import subprocess
import sys

BINARIES = ["ringside", "ringside-controller", "ringside-ps", "ringside-worker", "ringside-bench"]
RINGSIDE_COMMANDS = {"compare", "lab", "plan", "up", "ctl", "health"}
SEPARATORS = {"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<", ")", "#"}


def doc_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [f for f in files if os.path.exists(f)]


def snippets(path):
    """(line number, text) of every code-block line and inline code span of a Markdown file."""
    out = []
    in_block = False
    pending = ""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.rstrip("\n")
            if stripped.lstrip().startswith("```"):
                in_block = not in_block
                continue
            if in_block:
                if stripped.endswith("\\"):
                    pending += stripped[:-1] + " "
                    continue
                out.append((number, pending + stripped))
                pending = ""
            else:
                for span in re.findall(r"`([^`]+)`", stripped):
                    out.append((number, span))
    return out


def tokens_of(text):
    """(raw, cleaned) tokens: cleaned without the brackets and quotes around a placeholder."""
    text = re.sub(r"\s#\s.*$", "", text)  # a shell comment
    return [(t, t.strip("[]()'\",")) for t in text.split()]


def helpfull(bin_dir, binary, cache):
    if binary not in cache:
        result = subprocess.run([os.path.join(bin_dir, binary), "--helpfull"],
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise SystemExit(f"{binary} --helpfull exited {result.returncode}: "
                             f"{result.stderr[-500:]}")
        cache[binary] = set(re.findall(r"^  --([a-z0-9_]+)=", result.stdout, re.M))
    return cache[binary]


def bench_commands(bin_dir, cache):
    if "ringside-bench commands" not in cache:
        result = subprocess.run([os.path.join(bin_dir, "ringside-bench"), "--help"],
                                capture_output=True, text=True, timeout=60)
        cache["ringside-bench commands"] = set(re.findall(r"^  ([a-z-]+)\t", result.stdout, re.M))
    return cache["ringside-bench commands"]


def check_binary_command(binary, args, where, bin_dir, cache, problems, runs):
    flags = helpfull(bin_dir, binary, cache)
    # Placeholders (COMMAND, <...>, ...) stand for any word; a|b offers alternatives.
    words = [a for a in args if not a.startswith("-") and a != "..." and not a.isupper()
             and not a.startswith("<")]
    for arg in args:
        m = re.match(r"^--?([a-z0-9_]+)", arg)
        if m and m.group(1) not in flags and m.group(1) not in ("help", "helpfull"):
            problems.append(f"{where}: {binary} has no flag --{m.group(1)}")
    if binary == "ringside" and words:
        for word in words[0].split("|"):
            if word not in RINGSIDE_COMMANDS:
                problems.append(f"{where}: ringside has no command '{word}'")
        if words[0] == "ctl" and len(words) > 1 and words[1] != "mode":
            problems.append(f"{where}: ringside ctl has no command '{words[1]}'")
    if binary == "ringside-bench" and words and words[0].isalpha():
        if words[0] not in bench_commands(bin_dir, cache):
            problems.append(f"{where}: ringside-bench has no command '{words[0]}'")
    if "--help" in args:
        runs.append((where, [os.path.join(bin_dir, binary)] + args))


def check_line(root, where, text, bin_dir, cache, problems, runs, make_targets):
    """Checks every command on the line; returns how many it found."""
    found = 0
    raw_tokens = tokens_of(text)
    tokens = [cleaned for _, cleaned in raw_tokens]
    for i, (raw, token) in enumerate(raw_tokens):
        base = raw.rsplit("/", 1)[-1]
        if base in BINARIES and (raw == base or raw.endswith("bin/" + base)):
            args = []
            for t in tokens[i + 1:]:
                if t in SEPARATORS or t.rsplit("/", 1)[-1] in BINARIES:
                    break
                args.append(t)
            if args and args[0].endswith(":"):
                continue  # a program's output ("ringside up: controller at ..."), not a command
            found += 1
            check_binary_command(base, args, where, bin_dir, cache, problems, runs)
        elif re.match(r"^(scripts|deploy|tests|bench|\.ci)/[\w./-]+\.(sh|py)$", token):
            found += 1
            if not os.path.isfile(os.path.join(root, token)):
                problems.append(f"{where}: no script {token}")
        elif token == "make" and i + 1 < len(tokens) and re.match(r"^[a-z]+$", tokens[i + 1]):
            found += 1
            if tokens[i + 1] not in make_targets:
                problems.append(f"{where}: the Makefile has no target '{tokens[i + 1]}'")
    return found


def main():
    root, bin_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "Makefile"), encoding="utf-8") as f:
        make_targets = set(re.findall(r"^([a-z]+):", f.read(), re.M))
    cache, problems, runs, checked = {}, [], [], 0
    for path in doc_files(root):
        for number, text in snippets(path):
            where = f"{os.path.relpath(path, root)}:{number}"
            checked += check_line(root, where, text, bin_dir, cache, problems, runs,
                                  make_targets)
    for where, argv in runs:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if result.returncode != 0 or not result.stdout.strip():
            problems.append(f"{where}: `{' '.join(argv[1:])}` exited {result.returncode}: "
                            f"{(result.stderr or result.stdout)[-300:]}")
    for problem in problems:
        print(problem)
    print(f"{checked} commands checked, {len(runs)} run, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
