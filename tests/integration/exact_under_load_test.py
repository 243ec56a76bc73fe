"""A run's numbers do not depend on the machine's load: the same command run while the machine is
quiet, busy and changing ends bitwise equal; SIGTERM and kill -9 at random moments, resumed under
another load, end bitwise equal to the run that never stopped, for one process and for `unitrain
launch` with 2; ZeRO 3 trains as plain data parallelism does under a changing load. (The thread
count is chosen from the CPUs the process may use, never from their load, and kept on resume:
bench/busy/thread_numerics.py shows which sums another count changes.)

The load is the test's own: `sh -c 'while :; do :; done'` processes started and stopped during
the runs. The runs have no OMP_* variables (scripts/test sets OMP_WAIT_POLICY for CTest), so
their threads' place and waits follow the load as a user's would."""
import os
import random
import re
import signal
import subprocess
import threading
import time

import torch

import common
from common import read_jsonl, wait_for

# Large enough that LibTorch and OpenBLAS split the sums by thread: with 1 thread instead of 2 the
# weights differ after a few steps. The 784-wide layer is what makes it so with LibTorch 2.6 and
# OpenBLAS 0.3.29 too (Debian 13), whose products of power-of-two widths (64x512 @ 512x512) and
# whose L2 sum of 262,144 squares give the same bits at 1 and 2 threads; a 64x784 @ 784x512 product
# does not, there as with 1.13 and OpenBLAS 0.3.21.
CONFIG = """
name: exact
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 784, 512, 10], dropout: 0.1}}}}
objective: {{losses: [{{type: cross_entropy}}], regularizers: [{{type: l2, weight: 1.0e-4}}],
            metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  normalize: {{enabled: true}}
  loader: {{batch_size: 64, shuffle: true, workers: 2}}
optimizer: {{type: adamw, lr: 1.0e-3}}
scheduler: {{type: cosine}}
train: {{max_length: 3 epochs, accumulation_steps: 2, log_every: 3 steps}}
checkpoint: {{every: 4 steps, keep_last: 2}}
"""
STEP_MS = 40  # a pause after each step (the test plugin's slow_steps): time to signal mid-run


class Load:
    """Busy programs beside the runs: `pattern` "quiet" (none), "busy" (one per CPU) or
    "changing" (one, two, none, ... every 0.4 s)."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.hogs = []
        self.stop = threading.Event()
        self.thread = None

    def set(self, n):
        while len(self.hogs) > n:
            h = self.hogs.pop()
            h.kill()
            h.wait()
        while len(self.hogs) < n:
            self.hogs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))

    def change(self):
        counts = [1, len(os.sched_getaffinity(0)), 0]
        i = 0
        while not self.stop.wait(0.4):
            self.set(counts[i % len(counts)])
            i += 1

    def __enter__(self):
        if self.pattern == "busy":
            self.set(len(os.sched_getaffinity(0)))
        elif self.pattern == "changing":
            self.thread = threading.Thread(target=self.change)
            self.thread.start()
        time.sleep(0.3)  # a start-up that sees the load
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread:
            self.thread.join()
        self.set(0)


def environment():
    return {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}


def run(args):
    """`unitrain args...` without OMP_* variables; (exit code, output)."""
    p = subprocess.run([common.BIN] + args, capture_output=True, text=True, env=environment(),
                       timeout=600)
    return p.returncode, p.stdout + p.stderr


def losses(run_dir):
    return [(e["step"], e["train/loss"]) for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
            if "train/loss" in e]


class ExactUnderLoad(common.Case):
    reference = None

    def config(self, name):
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=common.DIGITS))
        return cfg, run_dir

    def command(self, cfg, launch):
        train = ["train", cfg] + common.slow_steps(STEP_MS)
        return [common.BIN] + (["launch", "--nproc-per-node", "2", "--"] if launch else []) + train

    def train(self, name, load, launch=False):
        cfg, run_dir = self.config(name)
        with Load(load):
            p = subprocess.run(self.command(cfg, launch), capture_output=True, text=True,
                               env=environment(), timeout=600)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        return run_dir, out

    def weights(self, run_dir):
        return self.final_weights(run_dir, "--plugin", common.test_plugin())

    def assert_same_run(self, a, b):
        wa, wb = self.weights(a), self.weights(b)
        self.assertEqual(list(wa), list(wb))
        for k in wa:
            self.assertTrue(torch.equal(wa[k], wb[k]),
                            f"{k}: {b} differs from {a} by {(wa[k] - wb[k]).abs().max().item()}")
        self.assertEqual(losses(a), losses(b))

    def test_the_same_command_quiet_busy_and_changing_ends_bitwise_equal(self):
        cpus = len(os.sched_getaffinity(0))
        quiet, out = self.train("quiet", "quiet")
        self.assertIn(f"threads {cpus} (auto: {cpus} CPUs usable by this process", out)
        busy, out = self.train("busy", "busy")
        self.assertIn(f"threads {cpus} (auto: ", out)  # the load chose nothing
        if cpus > 1:  # the team's place follows it
            self.assertIn("sleeping while they wait); the count stays", out)
        changing, out = self.train("changing", "changing")
        self.assertIn(f"threads {cpus} (auto: ", out)
        self.assert_same_run(quiet, busy)
        self.assert_same_run(quiet, changing)
        # The control: another thread count is another run (so the equality above says something):
        # the same command on one CPU (taskset) computes with 1 thread...
        cfg, other = self.config("one-cpu")
        p = subprocess.run(["taskset", "-c", "0"] + self.command(cfg, False), capture_output=True,
                           text=True, env=environment(), timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("threads 1 (auto: 1 CPU usable by this process", p.stdout + p.stderr)
        a, b = self.weights(quiet), self.weights(other)
        self.assertFalse(all(torch.equal(a[k], b[k]) for k in a), "1 thread computed as 2 did")
        # ...and keeps it when resumed with every CPU; another count given on resume is allowed
        # and says the resume is then not bitwise.
        code, out = run(["train", cfg, "--train.max_length", "4 epochs"] + common.slow_steps(0))
        self.assertEqual(code, 0, out)
        self.assertIn("threads 1 (auto: the count this run started with, kept so that its "
                      "arithmetic stays the same", out)
        code, out = run(["train", cfg, "--train.threads", "2", "--train.max_length", "5 epochs"] +
                        common.slow_steps(0))
        self.assertEqual(code, 0, out)
        self.assertIn("train.threads 2: this run computed with 1 thread before this resume", out)

    def interrupted(self, name, launch):
        """The run stopped by SIGTERM at a random moment under a changing load, resumed busy,
        killed (kill -9) at a random moment, resumed quiet."""
        rng = random.Random(os.getpid())
        cfg, run_dir = self.config(name)
        ckpts = os.path.join(run_dir, "checkpoints")
        outcomes = []
        for load, how in (("changing", signal.SIGTERM), ("busy", signal.SIGKILL), ("quiet", None)):
            with Load(load):
                seen = set(os.listdir(ckpts)) if os.path.isdir(ckpts) else set()
                p = subprocess.Popen(self.command(cfg, launch), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=environment())
                if how is not None:
                    # After this segment's first save, at a random moment of the next 0.6 s.
                    wait_for(lambda: os.path.isdir(ckpts) and
                             any(d.startswith("step-") for d in set(os.listdir(ckpts)) - seen))
                    time.sleep(rng.uniform(0, 0.6))
                    if how == signal.SIGKILL and launch:
                        pid = common.pid_of_rank(rng.randint(0, 1), cfg)
                        if pid:
                            os.kill(pid, signal.SIGKILL)
                    else:
                        p.send_signal(how)
                out = p.communicate(timeout=600)[0]
                finished = how is None or p.returncode == 0
                expected = {None: [0], signal.SIGTERM: [0, 75],
                            signal.SIGKILL: [0, 137 if launch else -9]}[how]
                self.assertIn(p.returncode, expected, out)
                outcomes.append(f"{load}: exit {p.returncode}")
                if finished:
                    break
        print("segments:", ", ".join(outcomes))
        # The SIGTERM lands mid-run (0.6 s at most after a save at step 4 of 42 steps of 40 ms):
        # a resume is tested, not a run that ended before its signal.
        self.assertGreater(len(outcomes), 1, outcomes)
        return run_dir

    def test_sigterm_and_kill_under_other_loads_resume_bitwise_one_process(self):
        reference, _ = self.train("reference", "quiet")
        self.assert_same_run(reference, self.interrupted("stopped", launch=False))

    def test_sigterm_and_kill_under_other_loads_resume_bitwise_launch_two(self):
        reference, _ = self.train("reference", "quiet", launch=True)
        self.assert_same_run(reference, self.interrupted("stopped", launch=True))

    def test_zero3_trains_as_plain_data_parallel_under_a_changing_load(self):
        # zero3_test.py's bound on a quiet machine (3 processes, SGD), with train.threads auto.
        import zero3_test
        case = zero3_test.Zero3()
        case.dir = self.dir
        finals = []
        for name, extra, port in (("plain", [], 29811), ("zero3", ["--distributed.zero", "3"], 29813)):
            cfg, run_dir = case.config(name)
            with Load("changing"):
                code, out = run(["launch", "--nproc-per-node", "3", "--master-port", str(port),
                                 "--", "train", cfg, "--train.threads", "auto"] + extra)
            self.assertEqual(code, 0, out)
            finals.append(self.final_weights(run_dir))
        worst = max(((finals[0][k] - finals[1][k]).abs().max() / finals[0][k].abs().max()).item()
                    for k in finals[0])
        print(f"ZeRO 3 against plain data parallelism under a changing load: {worst:.3g}")
        self.assertLess(worst, 1e-6)


if __name__ == "__main__":
    common.main()
