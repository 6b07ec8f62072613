#!/usr/bin/python3
"""job_progress.py (the container tests' check that a rolling restart never restarted the job)
on hand-written worker logs: it passes a job whose step only moves on, and fails, saying why, on
each way a restarted or split job shows in the logs."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "job_progress.py")


def line(rank, generation, step, mode="ps", world=4):
    return (f"worker-{rank}: generation {generation}, {mode} mode, {world} workers, "
            f"resuming at step {step}\n")


class JobProgressTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def log(self, name, *lines):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("ringside-worker: starting\n" + "".join(lines) + "worker-0: a step\n")
        return path

    def run_check(self, final, current, gone=(), controller=(), leaves=None):
        args = [sys.executable, SCRIPT, "--final", str(final), "--current", *current]
        if gone:
            args += ["--gone", *gone]
        if controller:
            args += ["--controller", *controller]
        if leaves is not None:
            args += ["--leaves", str(leaves)]
        return subprocess.run(args, capture_output=True, text=True, check=False)

    def controller_log(self, name, *lines):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(f"controller: {text}\n" for text in lines))
        return path

    def test_leaves_the_controller_logged_and_no_drop_pass(self):
        a = self.log("a", line(0, 9, 120))
        old = self.controller_log(
            "old", "member 4 (worker-1) left having completed 130 steps; generation 9 goes on "
            "without it", "member 7 registered (\"10.0.0.5:5000\")")
        new = self.controller_log("new", "resumed generation 9 with 4 workers",
                                  "member 8 (shard 0) left; generation 10 goes on without it")
        result = self.run_check(9, [a], controller=[old, new], leaves=2)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("the controller saw 2 leaves and dropped no member", result.stdout)

    def test_a_member_dropped_for_its_heartbeat_timeout_fails(self):
        a = self.log("a", line(0, 9, 120))
        log = self.controller_log(
            "c", "member 4 (worker-1) left having completed 130 steps; generation 9 goes on "
            "without it", "dropped member 5 (silent for 10s)")
        result = self.run_check(9, [a], controller=[log], leaves=1)
        self.assertEqual(result.returncode, 1)
        self.assertIn("the controller dropped a member for its heartbeat timeout: controller: "
                      "dropped member 5 (silent for 10s)", result.stderr)

    def test_a_stop_the_controller_saw_no_leave_for_fails(self):
        a = self.log("a", line(0, 9, 120))
        log = self.controller_log("c", "member 8 (shard 1) left; generation 9 goes on without it")
        result = self.run_check(9, [a], controller=[log], leaves=2)
        self.assertEqual(result.returncode, 1)
        self.assertIn("the controller logged 1 leaves (shard 1), not 2", result.stderr)

    def test_controller_logs_without_a_count_of_leaves_are_refused(self):
        a = self.log("a", line(0, 9, 120))
        log = self.controller_log("c")
        result = self.run_check(9, [a], controller=[log])
        self.assertEqual(result.returncode, 2)
        self.assertIn("--controller and --leaves go together", result.stderr)

    def test_a_job_whose_step_only_moves_on_passes(self):
        gone = self.log("gone", line(0, 7, 0, "ring"), line(0, 9, 120), line(1, 11, 200))
        a = self.log("a", line(1, 7, 0, "ring"), line(1, 9, 120), line(0, 11, 200),
                     line(0, 13, 250))
        b = self.log("b", line(2, 13, 250))
        result = self.run_check(13, [a, b], [gone])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("4 generations (7 to 13)", result.stdout)
        self.assertIn("generation 13 at step 250 on 2 workers", result.stdout)

    def test_a_step_that_goes_back_fails(self):
        gone = self.log("gone", line(0, 9, 120))
        a = self.log("a", line(1, 9, 120), line(0, 11, 0))  # started over
        result = self.run_check(11, [a], [gone])
        self.assertEqual(result.returncode, 1)
        self.assertIn("the job's step went back: generation 9 resumed at step 120, "
                      "generation 11 at step 0", result.stderr)

    def test_two_steps_in_one_generation_fail(self):
        a = self.log("a", line(0, 9, 120))
        b = self.log("b", line(1, 9, 121))
        result = self.run_check(9, [a, b])
        self.assertEqual(result.returncode, 1)
        self.assertIn("generation 9: resumed at step 120 by one worker and at step 121",
                      result.stderr)

    def test_a_current_worker_outside_the_final_generation_fails(self):
        a = self.log("a", line(0, 9, 120), line(0, 11, 130))
        b = self.log("b", line(1, 9, 120))
        result = self.run_check(11, [a, b])
        self.assertEqual(result.returncode, 1)
        self.assertIn("not every current worker adopted generation 11", result.stderr)
        self.assertIn(b, result.stderr)

    def test_a_final_generation_nobody_adopted_fails(self):
        a = self.log("a", line(0, 9, 120))
        result = self.run_check(12, [a])
        self.assertEqual(result.returncode, 1)
        self.assertIn("no worker adopted generation 12; the newest adopted is 9", result.stderr)

    def test_a_log_without_a_generation_fails(self):
        a = self.log("a", line(0, 9, 120))
        empty = self.log("empty")
        result = self.run_check(9, [a], [empty])
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"{empty} has no 'generation G, ... resuming at step S' line",
                      result.stderr)

    def test_a_missing_log_is_named(self):
        result = self.run_check(9, [os.path.join(self.dir.name, "absent")])
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot read", result.stderr)


if __name__ == "__main__":
    unittest.main()
