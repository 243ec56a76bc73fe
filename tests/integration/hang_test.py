"""A rank that stops or stalls, with the real binary: the others name it within the collective
timeout, every rank leaves its flight record, and `launch --max-restarts` resumes the run from the
last checkpoint, ending bitwise where an uninterrupted run ends."""
import glob
import json
import os
import re
import signal
import subprocess
import time

import torch

import common
from common import run

CONFIG = """
run_dir: {run_dir}
seed: 3
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 32, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, args: {{momentum: 0.9}}}}
train: {{max_length: {steps} steps, log_every: 5 steps, threads: 1}}
checkpoint: {{enabled: true, every: 10 steps}}
"""

TIMEOUT = 4  # distributed.timeout of the runs that lose a rank


def blamed(error):
    """The ranks an error's 'did not arrive:' names, for whatever reason."""
    said = error.split("did not arrive:", 1)[-1] if "did not arrive:" in error else ""
    return {int(r) for r in re.findall(
        r"rank (\d+): (?:last seen|never published|running, but|failed earlier)", said)}


def gone(pid):
    """True when process `pid` has ended and been reaped (or is a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


class Hang(common.Case):
    def config(self, name, steps=60):
        import gzip
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:960]))
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"),
                            CONFIG.format(run_dir=run_dir, data=data, steps=steps)), run_dir

    def launch(self, cfg, port, *args, restarts=0, workers=3, timeout=TIMEOUT, grace=2):
        return subprocess.Popen(
            [common.BIN, "launch", "--nproc-per-node", str(workers), "--master-port", str(port),
             "--max-restarts", str(restarts), "--grace-period", str(grace), "--", "train", cfg,
             "--distributed.timeout", str(timeout)] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def torchrun(self, cfg, port):
        """3 workers under torchrun's c10d rendezvous (which leaves the workers' TCPStore to
        rank 0), as launch() starts them."""
        return subprocess.Popen(
            common.torchrun() + ["--no_python", "--nproc_per_node", "3", "--rdzv_backend", "c10d",
                                 "--rdzv_endpoint", f"127.0.0.1:{port}", "--redirects", "1",
                                 "--tee", "1", common.BIN, "train",
                                 cfg, "--distributed.timeout", str(TIMEOUT)] +
            common.slow_steps(30), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stop_rank_after_checkpoint(self, cfg, run_dir, port, restarts, under_torchrun=False):
        """Launches 3 workers, SIGSTOPs rank 2 once step-10 is saved; the launcher's end, its
        output and how long ranks 0 and 1 took to end after the stop."""
        if under_torchrun:
            p = self.torchrun(cfg, port)
        else:
            p = self.launch(cfg, port, *common.slow_steps(30), restarts=restarts)
        deadline = time.time() + 120
        while not os.path.exists(os.path.join(run_dir, "checkpoints", "step-10")):
            if p.poll() is not None:
                self.fail("the workers ended before their first checkpoint:\n" + p.communicate()[0])
            self.assertLess(time.time(), deadline, "no checkpoint appeared")
            time.sleep(0.05)
        pids = [common.pid_of_rank(r, cfg) for r in range(3)]
        self.assertNotIn(None, pids)
        os.kill(pids[2], signal.SIGSTOP)
        t0 = time.time()
        while not (gone(pids[0]) and gone(pids[1])):
            self.assertLess(time.time() - t0, 60, "ranks 0 and 1 still run")
            time.sleep(0.05)
        others_took = time.time() - t0
        if under_torchrun:  # its agent's SIGTERM waits while the worker is stopped (30 s)
            os.kill(pids[2], signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
        self.assertTrue(gone(pids[2]), "the stopped worker was left behind")
        return p.returncode, out, others_took

    def test_a_stopped_worker_is_named_and_each_rank_leaves_its_flight_record(self):
        cfg, run_dir = self.config("stopped")
        code, out, took = self.stop_rank_after_checkpoint(cfg, run_dir, 29581, restarts=0)
        self.assertEqual(code, 1, out)
        self.assertLess(took, TIMEOUT + 10, out)
        self.assertRegex(out, r"did not arrive: rank 2: last seen in \w+ #\d+ \(step \d+")
        self.assertIn("no sign of life since", out)
        for r in (0, 1):
            with open(os.path.join(run_dir, "logs", f"flight-rank-{r}.json")) as f:
                flight = json.load(f)
            self.assertEqual(flight["rank"], r)
            self.assertIn("rank 2: last seen in", flight["peers"][0])
            last = flight["records"][-1]
            self.assertTrue(last["failed"], flight)
            self.assertEqual(last["end"], "in flight")
            self.assertGreater(len(flight["records"]), 10)
            # The launcher prefixes the rank: the error does not say it again.
            self.assertRegex(out, rf"\[rank {r}\] error: [^\n]*{last['op']} #{last['seq']} \(step ")
            self.assertNotIn(f"rank {r}: {last['op']} #{last['seq']}", out)

    def blamed_when_rank_2_stops(self, port, torchrun):
        """3 workers, rank 2 SIGSTOPped: the ranks each of ranks 0 and 1 said did not arrive
        (from their flight records: the error as they raised it), and the launcher's output."""
        cfg, run_dir = self.config(f"stopped-{port}")
        code, out, took = self.stop_rank_after_checkpoint(cfg, run_dir, port, 0,
                                                          under_torchrun=torchrun)
        self.assertNotEqual(code, 0, out)
        self.assertLess(took, TIMEOUT + 15, out)
        said = {}
        for r in (0, 1):
            with open(os.path.join(run_dir, "logs", f"flight-rank-{r}.json")) as f:
                said[r] = json.load(f)["error"]
        return said, out

    def test_a_stopped_worker_alone_is_named_under_launch_and_torchrun(self):
        # Under torchrun rank 0 hosts the store the ranks read each other's notices from; it
        # stays up until the others have read (a read that fails is not evidence about a rank).
        # bench/soak/sigstop.py runs this 20 times each way.
        for port, torchrun in ((29801, False), (29802, True)):
            with self.subTest(torchrun=torchrun):
                said, out = self.blamed_when_rank_2_stops(port, torchrun)
                for r, error in said.items():
                    self.assertIn("did not arrive: rank 2: last seen in", error, out)
                    self.assertEqual(blamed(error), {2}, error)
                if not torchrun:  # unitrain launch names the rank once, at the line's start
                    self.assertNotIn("error: [rank", out)
                    self.assertNotIn("warning: [rank", out)
                    self.assertNotRegex(out, r"\[rank \d+\] \[rank \d+\]")

    def test_restart_after_a_stopped_worker_ends_like_an_uninterrupted_run(self):
        cfg, run_dir = self.config("restarted")
        code, out, _ = self.stop_rank_after_checkpoint(cfg, run_dir, 29582, restarts=1)
        self.assertEqual(code, 0, out)
        self.assertIn("restarting the workers (restart 1 of 1)", out)
        self.assertIn("resumed from", out)
        ref_cfg, ref_dir = self.config("uninterrupted")
        code, out = run(["launch", "--nproc-per-node", "3", "--master-port", "29583", "--",
                         "train", ref_cfg])
        self.assertEqual(code, 0, out)
        a = self.final_weights(ref_dir)
        b = self.final_weights(run_dir, "--plugin", common.test_plugin())
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)  # exact resume: bitwise

    def stall(self, step, ms, rank=-1):
        return ["--plugin", common.test_plugin(), "--callbacks",
                "[{type: stall_at, args: {step: %d, ms: %d, rank: %d}}]" % (step, ms, rank)]

    def test_the_watchdog_ends_a_stalled_process_naming_step_and_phase(self):
        cfg, run_dir = self.config("stalled", steps=20)
        t0 = time.time()
        code, out = run(["train", cfg, "--train.watchdog.stall_timeout", "1"]
                        + self.stall(step=5, ms=60000))
        self.assertEqual(code, 1, out)
        self.assertLess(time.time() - t0, 40, out)
        self.assertRegex(out, r"rank 0: no progress for 1\.\d s at step 5, phase forward")
        self.assertIn("train.watchdog.action: abort", out)

    def test_warn_lets_a_stalled_process_go_on(self):
        cfg, run_dir = self.config("slow", steps=10)
        code, out = run(["train", cfg, "--train.watchdog.stall_timeout", "0.5",
                         "--train.watchdog.action", "warn"] + self.stall(step=3, ms=1500))
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"rank 0: no progress for 0\.\d s at step 3, phase forward")
        self.assertIn("done: 10 steps", out)

    def test_a_stalled_rank_ends_and_the_others_name_it(self):
        cfg, run_dir = self.config("stalled-rank", steps=30)
        p = self.launch(cfg, 29584, "--train.watchdog.stall_timeout", "2",
                        *self.stall(step=15, ms=60000, rank=1), workers=2, timeout=30, grace=8)
        t0 = time.time()
        out, _ = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 1, out)
        self.assertLess(time.time() - t0, 60, out)  # not the 30 s collective timeout twice over
        self.assertRegex(out, r"rank 1: no progress for 2\.\d s at step 15, phase forward")
        self.assertIn("did not arrive: rank 1: last seen", out)
        with open(os.path.join(run_dir, "logs", "flight-rank-1.json")) as f:
            self.assertIn("no progress", json.load(f)["error"])
        self.assertTrue(glob.glob(os.path.join(run_dir, "logs", "flight-rank-0.json")))


if __name__ == "__main__":
    common.main()
