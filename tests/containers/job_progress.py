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
Prints what it found in one line; exits 1 saying what broke.
"""
import argparse
import re
import sys

LINE = re.compile(r"^worker-(\d+): generation (\d+), (\w+) mode, (\d+) workers, "
                  r"resuming at step (\d+)$")


def fail(message):
    sys.exit(f"job_progress: FAIL: {message}")


def resumptions(path):
    """[(generation, step, line)] of one log, in its order."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as error:
        fail(f"cannot read {path}: {error}")
    found = []
    for line in lines:
        match = LINE.match(line.strip())
        if match:
            found.append((int(match.group(2)), int(match.group(5)), line.strip()))
    return found


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--final", type=int, required=True)
    parser.add_argument("--current", nargs="+", required=True)
    parser.add_argument("--gone", nargs="*", default=[])
    args = parser.parse_args(argv)

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
    print(f"{len(step_of)} generations ({min(step_of)} to {previous}), each at one step, never "
          f"going back; generation {args.final} at step {step_of[args.final]} on "
          f"{len(args.current)} workers")


if __name__ == "__main__":
    main(sys.argv[1:])
