"""One run per run folder: a second run on a folder in use is refused before it touches
anything; a killed run leaves no stale lock; read-only commands work while a run trains."""
import glob
import os
import signal
import subprocess
import time

import common
from common import run

# Digits, a small MLP, a checkpoint every 20 steps; saves slowed down by the test hook so that
# the run lasts long enough to be raced.
CONFIG = """
name: locked
run_dir: {run_dir}
seed: 1
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  loader: {{batch_size: 32, workers: 0}}
optimizer: {{type: adam, lr: 1.0e-3}}
train: {{max_length: {steps} steps, log_every: 10 steps, val_every: 20 steps, threads: 1}}
checkpoint: {{every: 20 steps, keep_last: 2}}
"""

SLOW_SAVES = {"UNITRAIN_TEST_CHECKPOINT_PAUSE_MS": "150"}


class RunDirLock(common.Case):
    def config(self, name="run", steps=200):
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=common.DIGITS, steps=steps))
        return cfg, run_dir

    def start(self, args, env=None):
        return subprocess.Popen([common.BIN] + args, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, **(env or {})))

    def wait_training(self, run_dir, proc):
        """Waits until the run in `run_dir` has started training (and so holds its lock)."""
        log = os.path.join(run_dir, "train.log")

        def started():
            self.assertIsNone(proc.poll(), "the first run ended early")
            return os.path.exists(log) and "training:" in open(log).read()
        self.assertTrue(common.wait_for(started, timeout=120))

    def assert_complete(self, run_dir):
        for step_dir in glob.glob(os.path.join(run_dir, "checkpoints", "step-*")):
            self.assertEqual(common.manifest_problems(step_dir), [], step_dir)
        self.assertEqual(glob.glob(os.path.join(run_dir, "checkpoints", ".partial-*")), [])

    def test_a_second_run_on_the_same_folder_is_refused_before_it_touches_anything(self):
        cfg, run_dir = self.config()
        first = self.start(["train", cfg], env=SLOW_SAVES)
        try:
            self.wait_training(run_dir, first)
            # The race of the report: the same command again while the first is saving.
            self.assertTrue(common.wait_for(
                lambda: glob.glob(os.path.join(run_dir, "checkpoints", ".partial-*"))))
            t0 = time.time()
            code, out = run(["train", cfg], env=SLOW_SAVES)
            self.assertEqual(code, 2, out)
            self.assertLess(time.time() - t0, 30, out)
            self.assertIn(f"run folder {run_dir} is in use by pid {first.pid} on host ", out)
            self.assertIn(" since 20", out)
            # run_dir is set in the YAML: --name would not change the folder, --run_dir does.
            self.assertIn("; start another run with --run_dir <new-folder> (run_dir is set to "
                          f"{run_dir}, so --name does not change the folder), or stop that run", out)
            self.assertNotIn("removed", out)  # it cleaned nothing
            self.assertFalse(os.path.exists(os.path.join(run_dir, "history")))
            with open(os.path.join(run_dir, "train.log")) as f:
                self.assertNotIn("in use by", f.read())
        finally:
            out, _ = first.communicate(timeout=600)
        self.assertEqual(first.returncode, 0, out)
        self.assertNotIn("incomplete checkpoint", out)
        self.assert_complete(run_dir)
        # The lock file stays, naming its last holder; the next run takes it (a finished run:
        # nothing to train).
        with open(os.path.join(run_dir, ".lock")) as f:
            self.assertIn(f'"pid":{first.pid}', f.read())
        code, out = run(["train", cfg])
        self.assertEqual(code, 0, out)
        self.assertIn("training already complete", out)

    def test_a_killed_run_leaves_no_stale_lock(self):
        cfg, run_dir = self.config()
        first = self.start(["train", cfg], env=SLOW_SAVES)
        self.wait_training(run_dir, first)
        self.assertTrue(common.wait_for(
            lambda: os.path.exists(os.path.join(run_dir, "checkpoints", "last"))))
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
        code, out = run(["train", cfg])  # at once: no lock left behind
        self.assertEqual(code, 0, out)
        self.assertIn("resum", out)
        self.assert_complete(run_dir)
        with open(os.path.join(run_dir, "results", "summary.json")) as f:
            self.assertIn('"finished"', f.read())

    def test_a_partial_save_whose_writer_lives_is_left_alone(self):
        cfg, run_dir = self.config(steps=20)
        code, out = run(["train", cfg, "--train.max_length", "10 steps"])
        self.assertEqual(code, 0, out)
        host = os.uname().nodename
        writer = subprocess.Popen(["sleep", "120"])
        try:
            ckpts = os.path.join(run_dir, "checkpoints")
            live = os.path.join(ckpts, f".partial-step-30-{writer.pid}@{host}")
            dead = os.path.join(ckpts, f".partial-step-40-{2**22 + 7}@{host}")  # no such pid
            for d in (live, dead):
                os.makedirs(d)
                common.write(os.path.join(d, "model.pt"), "half")
            code, out = run(["train", cfg])
            self.assertEqual(code, 0, out)
            self.assertIn(f"left {live}: the process writing it is still running", out)
            self.assertIn("removed 1 incomplete checkpoint folder(s)", out)
            self.assertTrue(os.path.isdir(live))
            self.assertFalse(os.path.exists(dead))
        finally:
            writer.kill()
            writer.wait()

    def test_two_ranks_hold_one_lock_and_a_second_run_is_refused(self):
        cfg, run_dir = self.config(steps=160)
        launch = self.start(["launch", "--nproc-per-node", "2", "--", "train", cfg], env=SLOW_SAVES)
        try:
            self.wait_training(run_dir, launch)
            rank0 = common.pid_of_rank(0, cfg)
            self.assertIsNotNone(rank0)
            code, out = run(["train", cfg])
            self.assertEqual(code, 2, out)
            self.assertIn(f"is in use by pid {rank0} on host ", out)
        finally:
            out, _ = launch.communicate(timeout=600)
        self.assertEqual(launch.returncode, 0, out)
        self.assert_complete(run_dir)

    def test_read_only_commands_work_while_a_run_trains(self):
        cfg, run_dir = self.config(steps=300)
        first = self.start(["train", cfg], env=SLOW_SAVES)
        try:
            self.wait_training(run_dir, first)
            self.assertTrue(common.wait_for(
                lambda: os.path.exists(os.path.join(run_dir, "checkpoints", "last"))))
            last = os.path.join(run_dir, "checkpoints", "last")
            for args in (["eval", cfg, "--checkpoint", "last"],
                         ["export", cfg, "--checkpoint", "last", "--out",
                          os.path.join(self.dir, "w.pt")],
                         ["checkpoint", "inspect", last],
                         ["checkpoint", "verify", os.path.join(run_dir, "checkpoints")],
                         ["report", run_dir, "-o", os.path.join(self.dir, "r.html")]):
                code, out = run(args)
                self.assertEqual(code, 0, f"{args}: {out}")
                self.assertIsNone(first.poll(), f"{args} ended the run")
        finally:
            out, _ = first.communicate(timeout=600)
        self.assertEqual(first.returncode, 0, out)
        self.assert_complete(run_dir)


if __name__ == "__main__":
    common.main()
