#!/usr/bin/python3
"""The job's step as the workers' logs state it, for the container tests' rolling restarts.

  job_progress.py --final GENERATION --current LOG... [--gone LOG...]

Every worker logs `worker-R: generation G, MODE mode, W workers, resuming at step S` once it
holds generation G's state (worker/elastic_training.cc): S is the job's completed step, agreed
by every member of G in the regroup. Read from the logs of the workers running now (--current,
one per container: a container restarted in place holds both its processes' lines) and of
every process that left (--gone), it must show a job that never restarted:
  - in every generation every worker that adopted it resumed at the same step;
  - ordered by generation, that step never goes back (a restart from the initial state or an
    older checkpoint resumes at a smaller one);
  - each current worker adopted GENERATION (the controller's now), at that one step.
With --controller (the controller's log lines since the rolling restart began: the stopped
process's, then its replacement's) and --leaves N (how many members the restart stopped), it
also checks that no member was lost silently: the controller logged N leaves (`controller:
member M (worker-R|shard S) left ...`) and dropped no member for its heartbeat timeout
(`controller: dropped member M ...`), so every stop was a hand-over, never a stall.
Prints what it found in one line; exits 1 saying what broke.
"""
import argparse
import re
import sys

LINE = re.compile(r"^worker-(\d+): generation (\d+), (\w+) mode, (\d+) workers, "
                  r"resuming at step (\d+)$")
LEFT = re.compile(r"^controller: member \d+ \((worker-\d+|shard \d+)\) left")
DROPPED = re.compile(r"^controller: dropped member \d+")


def fail(message):
    sys.exit(f"job_progress: FAIL: {message}")


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line.strip() for line in f.read().splitlines()]
    except OSError as error:
        fail(f"cannot read {path}: {error}")


def resumptions(path):
    """[(generation, step, line)] of one log, in its order."""
    found = []
    for line in read_lines(path):
        match = LINE.match(line)
        if match:
            found.append((int(match.group(2)), int(match.group(5)), line))
    return found


def leaves_seen(controller_logs, leaves):
    """What the controller logged of the members that left: a phrase for the summary."""
    lines = [line for path in controller_logs for line in read_lines(path)]
    dropped = [line for line in lines if DROPPED.match(line)]
    if dropped:
        fail(f"the controller dropped a member for its heartbeat timeout: {dropped[0]}")
    left = [LEFT.match(line).group(1) for line in lines if LEFT.match(line)]
    if len(left) != leaves:
        fail(f"the controller logged {len(left)} leaves ({', '.join(left) or 'none'}), not "
             f"{leaves}")
    return f"; the controller saw {leaves} leaves and dropped no member"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--final", type=int, required=True)
    parser.add_argument("--current", nargs="+", required=True)
    parser.add_argument("--gone", nargs="*", default=[])
    parser.add_argument("--controller", nargs="+")
    parser.add_argument("--leaves", type=int)
    args = parser.parse_args(argv)
    if (args.controller is None) != (args.leaves is None):
        parser.error("--controller and --leaves go together")

    by_log = {path: resumptions(path) for path in args.current + args.gone}
    step_of, logged = {}, {}  # generation -> step, generation -> how many logs adopted it
    for path, found in by_log.items():
        if not found:
            fail(f"{path} has no 'generation G, ... resuming at step S' line")
        for generation, step, line in found:
            if generation in step_of and step_of[generation] != step:
                fail(f"generation {generation}: resumed at step {step_of[generation]} by one "
                     f"worker and at step {step} by another ({path}: {line})")
            step_of[generation] = step
            logged[generation] = logged.get(generation, 0) + 1
    previous = None
    for generation in sorted(step_of):
        if previous is not None and step_of[generation] < step_of[previous]:
            fail(f"the job's step went back: generation {previous} resumed at step "
                 f"{step_of[previous]}, generation {generation} at step {step_of[generation]}")
        previous = generation
    if args.final not in step_of:
        fail(f"no worker adopted generation {args.final}; the newest adopted is {previous}")
    behind = [path for path in args.current
              if args.final not in {g for g, _, _ in by_log[path]}]
    if behind:
        fail(f"not every current worker adopted generation {args.final}: {behind}")
    seen = leaves_seen(args.controller, args.leaves) if args.controller else ""
    print(f"{len(step_of)} generations ({min(step_of)} to {previous}), each at one step, never "
          f"going back; generation {args.final} at step {step_of[args.final]} on "
          f"{len(args.current)} workers{seen}")


if __name__ == "__main__":
    main(sys.argv[1:])
