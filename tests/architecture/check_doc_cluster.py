#!/usr/bin/python3
"""The README's hand-made cluster, run as the README shows it, with the outcome it states.

Takes from README.md the code block that starts the cluster (a controller, a shard and two
workers in the background), the block after it with `ringside ctl mode ps`, and the `kill ...`
command the text gives for ending the cluster. `build/bin/` becomes BIN_DIR and the fixed
controller address 127.0.0.1:7000 a free port; everything else runs as written, in a temporary
directory. Then it checks what the README says happens:
  - every worker prints `generation 1, ring mode`;
  - `ringside ctl mode ps` succeeds (`mode ps from generation N`), and every worker prints
    `switching to ps at step N (generation 2)` once, then `generation 2, ps mode`;
  - asking for ps again changes nothing (`already in ps mode (generation 2): nothing to switch`);
  - the README's `kill` command ends every process.
Waits are for log lines, with one overall deadline against a hang; nothing sleeps for
correctness. Every process it started is killed by its PID on every exit path, the temporary
directory is removed, and on failure the logs are printed.
Usage: check_doc_cluster.py REPO_ROOT BIN_DIR. Exit 0 when all hold, 1 otherwise.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DEADLINE_SECONDS = 120  # the whole run; only a hang reaches it
WORKERS = 2  # what the README's block starts (`for i in 1 2`)


class Failure(Exception):
    pass


def code_blocks(text):
    """(offset after the block, body) of every fenced code block."""
    return [(m.end(), m.group(1))
            for m in re.finditer(r"^```[^\n]*\n(.*?)^```[ \t]*$", text, re.M | re.S)]


def readme_commands(root):
    """The cluster block, the ctl block and the kill command, as README.md has them."""
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    blocks = code_blocks(text)
    start = next((i for i, (_, body) in enumerate(blocks)
                  if "ringside-controller" in body and "ringside-worker" in body), None)
    if start is None:
        raise Failure("README.md has no code block starting ringside-controller and -worker")
    cluster_end, cluster = blocks[start]
    ctl = next((body for _, body in blocks[start + 1:] if "ringside ctl mode ps" in body), None)
    if ctl is None:
        raise Failure("README.md has no `ringside ctl mode ps` block after the cluster's")
    kill = re.search(r"`(kill %[^`]*)`", text[cluster_end:])
    if kill is None:
        raise Failure("README.md does not say which `kill %...` ends the cluster")
    for name, body in (("cluster", cluster), ("ctl", ctl)):
        if "127.0.0.1:7000" not in body or "build/bin/" not in body:
            raise Failure(f"README.md's {name} block no longer uses build/bin/ and "
                          f"127.0.0.1:7000; update this test with it:\n{body}")
    return cluster, ctl.strip(), kill.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Run:
    """The cluster's shell (a job-control wrapper around the README's block) and its logs."""

    def __init__(self, bin_dir):
        self.bin_dir = os.path.abspath(bin_dir)
        self.dir = tempfile.mkdtemp(prefix="ringside-doc-cluster-")
        self.log_path = os.path.join(self.dir, "cluster.log")
        self.ctl_log = []
        self.shell = None
        self.ended_cleanly = False
        self.deadline = time.monotonic() + DEADLINE_SECONDS

    def adapt(self, text, address):
        return text.replace("build/bin/", self.bin_dir + "/").replace("127.0.0.1:7000", address)

    def start(self, cluster, kill, address):
        os.mkfifo(os.path.join(self.dir, "stop"))
        # The block as written; then the jobs' PIDs for the clean-up, a wait for the test's word,
        # and the README's own kill command, so the test sees that it ends the cluster.
        script = "\n".join([
            self.adapt(cluster, address),
            "jobs -p > pids.tmp && mv pids.tmp pids",
            "read -r _ < stop",
            kill,
            "wait",
            "echo 'check_doc_cluster: every job ended'",
            ""])
        with open(os.path.join(self.dir, "cluster.sh"), "w", encoding="utf-8") as f:
            f.write(script)
        with open(self.log_path, "wb") as log:
            self.shell = subprocess.Popen(["bash", "cluster.sh"], cwd=self.dir,
                                          stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def pids(self):
        try:
            with open(os.path.join(self.dir, "pids"), encoding="utf-8") as f:
                return [int(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def wait_for(self, what, done):
        """Polls the log until done(log) holds; fails at the deadline or if the shell ended."""
        while True:
            log = self.log()
            if done(log):
                return log
            if self.shell.poll() is not None:
                raise Failure(f"the cluster's shell ended (exit {self.shell.returncode}) "
                              f"before {what}")
            if time.monotonic() > self.deadline:
                raise Failure(f"{DEADLINE_SECONDS} s passed without {what}")
            time.sleep(0.1)  # the next look at the log, not a wait for an event

    def ctl(self, command, address):
        left = max(1, self.deadline - time.monotonic())
        result = subprocess.run(["bash", "-c", self.adapt(command, address)], cwd=self.dir,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=min(60, left))
        self.ctl_log.append(f"$ {command}\n(exit {result.returncode})\n"
                            f"{result.stdout}{result.stderr}")
        if result.returncode != 0:
            raise Failure(f"`{command}` exited {result.returncode}")
        return result.stdout + result.stderr

    def stop(self):
        """Lets the shell run the README's kill command; every job must end."""
        with open(os.path.join(self.dir, "stop"), "w", encoding="utf-8") as f:
            f.write("stop\n")
        try:
            self.shell.wait(timeout=max(1, min(30, self.deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            raise Failure("the README's kill command did not end the cluster within 30 s")
        left = [pid for pid in self.pids() if alive(pid)]
        if left:
            raise Failure(f"processes still running after the README's kill command: {left}")
        self.ended_cleanly = True

    def clean_up(self):
        """Kills what is left, by PID: the jobs first, then their shell."""
        if self.shell is not None and not self.ended_cleanly:
            pids = [pid for pid in self.pids() if alive(pid)]
            if self.shell.poll() is None:
                pids.append(self.shell.pid)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                give_up = time.monotonic() + 5
                while any(alive(pid) for pid in pids) and time.monotonic() < give_up:
                    if self.shell.poll() is not None:  # reaped: its pid is no longer ours
                        pids = [pid for pid in pids if pid != self.shell.pid and alive(pid)]
                    time.sleep(0.05)  # the next look at the processes
                if not any(alive(pid) for pid in pids):
                    break
            try:
                self.shell.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def lines_by_worker(log, pattern):
    """The workers (worker-R) that printed a line matching pattern."""
    return set(re.findall(r"^(worker-\d+): " + pattern, log, re.M))


def check(run, cluster, ctl, kill):
    address = f"127.0.0.1:{free_port()}"
    run.start(cluster, kill, address)
    run.wait_for(f"{WORKERS} workers printing `generation 1, ring mode`",
                 lambda log: len(lines_by_worker(log, r"generation 1, ring mode")) == WORKERS)

    out = run.ctl(ctl, address)
    if not re.search(r"mode ps from generation \d+", out):
        raise Failure(f"`ringside ctl mode ps` did not say `mode ps from generation N`: {out!r}")
    log = run.wait_for(f"{WORKERS} workers printing `generation 2, ps mode`",
                       lambda log: len(lines_by_worker(log, r"generation 2, ps mode")) == WORKERS)
    # Every worker says the switch as what it is, once, whether its step was cut short or not.
    switched = re.findall(r"^(worker-\d+): switching to ps at step \d+ \(generation 2\)$", log, re.M)
    if sorted(switched) != sorted(set(switched)) or len(switched) != WORKERS:
        raise Failure(f"not every worker printed `switching to ps at step N (generation 2)` once: "
                      f"{switched}")

    out = run.ctl(ctl, address)
    if "already in ps mode (generation 2): nothing to switch" not in out:
        raise Failure(f"switching to ps again did not say it changed nothing: {out!r}")

    run.stop()


def main():
    if len(sys.argv) != 3:
        print("usage: check_doc_cluster.py REPO_ROOT BIN_DIR", file=sys.stderr)
        return 2
    root, bin_dir = sys.argv[1], sys.argv[2]
    # ctest's timeout or a Ctrl-C still prints the logs and runs the clean-up.
    def stopped(number, _):
        raise Failure(f"stopped by signal {number}")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stopped)
    run = None
    try:
        cluster, ctl, kill = readme_commands(root)
        run = Run(bin_dir)
        check(run, cluster, ctl, kill)
        print("ok: README.md's hand-made cluster switched from ring to ps as it says")
        return 0
    except (Failure, subprocess.TimeoutExpired, OSError) as e:
        print(f"FAIL: {e}")
        if run is not None:
            print("---- the cluster's output (the README's block) ----")
            print(run.log() if os.path.exists(run.log_path) else "(none)")
            for entry in run.ctl_log:
                print("---- " + entry)
        return 1
    finally:
        if run is not None:
            run.clean_up()


if __name__ == "__main__":
    sys.exit(main())
