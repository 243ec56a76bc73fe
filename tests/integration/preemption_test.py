"""Preemption with the real binary and real signals: SIGUSR1 (Slurm's --signal) and SIGTERM
(preemptible VMs) save a checkpoint and exit 75 (checkpoint.on_signal.exit_code), from one
process and from `unitrain launch`; the same command then resumes and ends bitwise equal to a run
that was never stopped."""
import glob
import gzip
import json
import os
import signal
import subprocess
import time

import torch

import common
from common import run, read_jsonl, wait_for

RESUME_CODE = 75  # checkpoint.on_signal.exit_code's default

# Digits' first 1280 rows; 60 steps of 64 samples (one process) or 2 x 32.
CONFIG = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, args: {{momentum: 0.9}}}}
train: {{max_length: 60 steps, log_every: 5 steps, threads: 1}}
checkpoint: {{every: null}}
"""


class Preemption(common.Case):
    port = 29640

    def config(self, name, world):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:1280]))
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, data=data, batch=64 // world)), run_dir

    def command(self, world, cfg):
        """The run's command: slowed down (30 ms a step) so that a signal lands mid-run."""
        train = ["train", cfg] + common.slow_steps(30)
        if world == 1:
            return train
        Preemption.port += 1
        return ["launch", "--nproc-per-node", str(world), "--master-port", str(Preemption.port),
                "--"] + train

    def uninterrupted(self, world):
        cfg, run_dir = self.config(f"uninterrupted-{world}", world)
        code, out = run(self.command(world, cfg))
        self.assertEqual(code, 0, out)
        return self.final_weights(run_dir, "--plugin", common.test_plugin())

    def stop_and_resume(self, world, sig, name, to_rank=None):
        """Starts the run, sends `sig` mid-run (to the command, or to worker `to_rank` alone),
        checks what the stop left, runs the same command again; returns the final weights."""
        cfg, run_dir = self.config(name, world)
        cmd = self.command(world, cfg)
        p = subprocess.Popen([common.BIN] + cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(metrics) and len(read_jsonl(metrics)) >= 2))
        if to_rank is None:
            p.send_signal(sig)
        else:
            os.kill(common.pid_of_rank(to_rank, cfg), sig)
        out = p.communicate(timeout=120)[0]
        name = signal.Signals(sig).name
        self.assertEqual(p.returncode, RESUME_CODE, out)
        self.assertNotIn("restarting", out)
        saved = glob.glob(os.path.join(run_dir, "checkpoints", "step-*"))
        self.assertEqual(len(saved), 1, out)
        step = int(saved[0].rsplit("-", 1)[1])
        self.assertLess(step, 60, out)
        for r in range(world):  # every rank's state is in it
            self.assertTrue(os.path.exists(os.path.join(saved[0], f"rng-rank-{r}.pt")), out)
        with open(os.path.join(run_dir, "results", "summary.json")) as f:
            status = json.load(f)["status"]
        said = f"stopped by {name}: checkpoint saved; exit {RESUME_CODE}"
        self.assertTrue(status.startswith(said), status)
        self.assertIn("run the same command to resume", status)
        last = [line for line in out.splitlines() if line.strip()][-1]
        self.assertIn(said, last)
        code, out = run(cmd)  # the same command resumes
        self.assertEqual(code, 0, out)
        self.assertIn("resumed from " + saved[0], out)
        return self.final_weights(run_dir, "--plugin", common.test_plugin())

    def assert_same(self, a, b):
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)  # exact resume: bitwise

    def test_one_process_saves_on_sigusr1_and_sigterm_and_resumes_exactly(self):
        full = self.uninterrupted(1)
        for sig in (signal.SIGUSR1, signal.SIGTERM):
            self.assert_same(full, self.stop_and_resume(1, sig, f"one-{int(sig)}"))

    def test_launch_forwards_sigusr1_and_sigterm_and_returns_the_resume_code(self):
        full = self.uninterrupted(2)
        for sig in (signal.SIGUSR1, signal.SIGTERM):
            self.assert_same(full, self.stop_and_resume(2, sig, f"two-{int(sig)}"))
        # As a scheduler may: the signal reaches one worker only; every rank stops at its step.
        self.assert_same(full, self.stop_and_resume(2, signal.SIGUSR1, "rank1", to_rank=1))

    def past_the_loader(self, pid):
        """Waits until process `pid` has the signals a run saves on blocked or caught: bin/unitrain
        (apps/unitrain/start.c) blocks them ~1 ms after exec; before that the dynamic loader
        runs, not unitrain."""
        bit = 1 << (signal.SIGUSR1 - 1)

        def held():
            with open(f"/proc/{pid}/status") as f:
                masks = {k: int(v, 16) for k, v in (line.split(":\t") for line in f
                                                    if line.startswith(("SigBlk", "SigCgt")))}
            return bool((masks["SigBlk"] | masks["SigCgt"]) & bit)
        self.assertTrue(wait_for(held, timeout=10, interval=0.001))

    def test_a_signal_at_any_moment_of_a_run_is_never_fatal(self):
        """SIGUSR1 at moments spread over a run's whole life (start-up, loading, rendezvous,
        the first step, mid-run, the final save, the report): exit 75 with the run's state
        saved, or 0 when it had finished; never death by the signal. The same command then ends
        bitwise equal to the run that never stopped."""
        for world in (1, 2):
            cfg, run_dir = self.config(f"life-{world}", world)
            start = time.monotonic()
            code, out = run(self.command(world, cfg))
            length = time.monotonic() - start
            self.assertEqual(code, 0, out)
            full = self.final_weights(run_dir, "--plugin", common.test_plugin())
            outcomes = []
            for i, part in enumerate((0, 0.03, 0.1, 0.2, 0.35, 0.6, 0.85, 0.95, 1.0)):
                cfg, run_dir = self.config(f"life-{world}-{i}", world)
                cmd = self.command(world, cfg)
                p = subprocess.Popen([common.BIN] + cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
                self.past_the_loader(p.pid)
                time.sleep(part * length)
                p.send_signal(signal.SIGUSR1)
                out = p.communicate(timeout=120)[0]
                at = f"world {world}, SIGUSR1 {part * length:.2f} s after the start"
                self.assertIn(p.returncode, (0, RESUME_CODE), f"{at}:\n{out}")
                outcomes.append(f"{part * length:.2f} s: {p.returncode}")
                if p.returncode == RESUME_CODE:
                    self.assertIn("run the same command to resume", out, at)
                    code, out = run(cmd)
                    self.assertEqual(code, 0, f"{at}, resumed:\n{out}")
                self.assert_same(full, self.final_weights(run_dir, "--plugin",
                                                          common.test_plugin()))
            print(f"world {world} ({length:.1f} s a run): " + ", ".join(outcomes))

    def test_a_signal_while_set_up_is_stuck_ends_it_resumable(self):
        """Rank 0 of 2 alone waits for rank 1 at the rendezvous: SIGTERM is held, and once
        training has not started 10 s later the process ends with 75 and says why."""
        cfg, run_dir = self.config("stuck", 1)
        Preemption.port += 1
        env = dict(os.environ, RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(Preemption.port))
        p = subprocess.Popen([common.BIN, "train", cfg], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env)
        self.assertTrue(wait_for(lambda: os.path.isdir(run_dir)))
        time.sleep(0.5)
        sent = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=60)[0]
        self.assertEqual(p.returncode, RESUME_CODE, out)
        self.assertGreaterEqual(time.monotonic() - sent, 10, out)
        self.assertIn("SIGTERM during set-up, and training did not start within 10 s", out)

    def test_signals_off_the_list_keep_their_default_action(self):
        cfg, run_dir = self.config("unlisted", 1)
        code, out = run(["train", cfg, "--checkpoint.on_signal.signals", "[SIGBUS]"])
        self.assertEqual(code, 2, out)
        self.assertIn("checkpoint.on_signal.signals", out)
        self.assertIn("'SIGBUS'", out)
        p = subprocess.Popen([common.BIN] + self.command(1, cfg)
                             + ["--checkpoint.on_signal.signals", "[SIGTERM]"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(metrics) and len(read_jsonl(metrics)) >= 2))
        p.send_signal(signal.SIGUSR1)
        out = p.communicate(timeout=120)[0]
        self.assertEqual(p.returncode, -signal.SIGUSR1, out)  # killed by it, nothing saved
        self.assertEqual(glob.glob(os.path.join(run_dir, "checkpoints", "step-*")), [])


if __name__ == "__main__":
    common.main()
