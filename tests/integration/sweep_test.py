"""unitrain sweep with the real binary on digits: a grid equals separate runs, a killed sweep
(or trial) continued equals an uninterrupted one, ASHA promotes by resuming, bad input is refused
before any trial folder is made."""
import glob
import json
import os
import signal
import subprocess
import time

import common
from common import run

# A small MLP on digits (23 steps an epoch); a checkpoint every 10 steps.
BASE = """
name: base
seed: 3
model: {{type: mlp, args: {{sizes: [64, 32, 10], dropout: 0.1}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy, name: acc}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: 64, workers: 0}}
optimizer: {{type: adamw, lr: 1.0e-3, args: {{weight_decay: 0.01}}}}
train: {{max_length: {length}, log_every: 10 steps, val_every: 1 epoch, threads: 1}}
checkpoint: {{every: 10 steps}}
"""

SWEEP = """
name: s
base: {base}
sweep_dir: {folder}
mode: max
"""


def values(path):
    """metrics.jsonl without the wall-clock times."""
    return [{k: v for k, v in e.items() if k != "time"} for e in common.read_jsonl(path)]


class Sweep(common.Case):
    def base(self, length="2 epochs"):
        return common.write(os.path.join(self.dir, "base.yaml"),
                            BASE.format(data=common.DIGITS, length=length))

    def sweep_file(self, name, more, length="2 epochs", metric="val/acc"):
        folder = os.path.join(self.dir, name)
        text = SWEEP.format(base=self.base(length), folder=folder) + "metric: %s\n" % metric + more
        return common.write(os.path.join(self.dir, name + ".yaml"), text), folder

    def results(self, folder):
        with open(os.path.join(folder, "results.json")) as f:
            return json.load(f)["trials"]

    def test_a_trial_whose_metric_is_not_a_number_fails_and_the_sweep_goes_on(self):
        # lr 1e30 with on_nonfinite: skip trains to its end with a validation loss of NaN: that
        # trial failed (diverged), the other is ranked and best, and the sweep says one failed.
        sweep, folder = self.sweep_file(
            "diverged", "strategy: grid\nspace: {optimizer.lr: {grid: [1.0e+30, 0.001]}}\n",
            length="1 epoch", metric="val/loss")
        with open(sweep) as f:
            common.write(sweep, f.read().replace("mode: max", "mode: min"))
        base = os.path.join(self.dir, "base.yaml")
        with open(base) as f:
            common.write(base, f.read().replace("threads: 1}", "threads: 1, on_nonfinite: skip}"))
        code, out = run(["sweep", sweep])
        self.assertNotIn("does not report", out)
        self.assertIn("trial 0 failed: it diverged: its validation reported val/loss = nan", out)
        self.assertIn("best: trial 1", out)
        self.assertEqual(code, 1, out)  # a failed trial: the sweep's exit says so
        rows = self.results(folder)
        self.assertEqual([r["status"] for r in rows], ["failed", "finished"])
        self.assertEqual(rows[0]["steps"], 23)

    def test_a_grid_of_learning_rates_equals_separate_runs(self):
        lrs = ["0.01", "0.003", "0.001", "0.0003"]
        sweep, folder = self.sweep_file(
            "grid", "strategy: grid\nspace: {optimizer.lr: {grid: [%s]}}\n" % ", ".join(lrs))
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 0, out)
        self.assertIn("best: trial", out)
        rows = self.results(folder)
        # results.json: a number as a number (results.csv keeps the YAML text).
        self.assertEqual([r["parameters"]["optimizer.lr"] for r in rows], [float(x) for x in lrs])
        self.assertEqual([r["status"] for r in rows], ["finished"] * 4)
        for k, lr in enumerate(lrs):
            trial = os.path.join(folder, "trial-%d" % k)
            alone = os.path.join(self.dir, "alone-%d" % k)
            code, out = run(["train", self.base(), "--optimizer.lr", lr, "--run_dir", alone])
            self.assertEqual(code, 0, out)
            self.assertEqual(values(os.path.join(trial, "metrics.jsonl")),
                             values(os.path.join(alone, "metrics.jsonl")), lr)
            last_val = [e for e in values(os.path.join(alone, "metrics.jsonl")) if "val/acc" in e]
            self.assertEqual(rows[k]["metric"], last_val[-1]["val/acc"])
            self.assertEqual(rows[k]["steps"], 46)
        # A trial folder is an ordinary run: eval works on its config unchanged.
        code, out = run(["eval", os.path.join(folder, "trial-1", "config.yaml")])
        self.assertEqual(code, 0, out)
        with open(os.path.join(folder, "results.csv")) as f:
            self.assertEqual(f.readline().strip(), "trial,optimizer.lr,rung,val/acc,steps,status")
        best = max(rows, key=lambda r: r["metric"])["trial"]
        with open(os.path.join(folder, "best.yaml")) as f:
            best_yaml = f.read()
        self.assertIn("trial %d" % best, best_yaml)
        self.assertIn("run_dir: runs/s-best", best_yaml)
        # The report: every trial's curves, the metric against the learning rate.
        code, out = run(["report", folder])
        self.assertEqual(code, 0, out)
        with open(os.path.join(folder, "report.html")) as f:
            page = f.read()
        self.assertIn('data-chart="sweep:optimizer.lr"', page)
        self.assertEqual(page.count("<circle data-point="), 4)
        self.assertIn("s-trial-3", page)
        # Run again: nothing is trained, the table is shown.
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 0, out)
        self.assertIn("continuing the sweep", out)
        self.assertEqual(self.results(folder), rows)
        # A trial that early_stopping ended says so, and where it stopped: not `finished` after
        # the rung's 5 epochs (the console, results.csv and .json, the report's table).
        sweep, folder = self.sweep_file(
            "early", "strategy: grid\nspace: {optimizer.lr: {grid: [0.01]}}\n", length="5 epochs")
        with open(self.base(length="5 epochs"), "a") as f:
            f.write("early_stopping: {metric: val/acc, mode: max, patience: 1, min_delta: 1.0}\n")
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 0, out)
        self.assertIn("trial 0: val/acc", out)
        self.assertIn("stopped early after 2 epochs, 46 steps (of 5 epochs)", out)
        row = self.results(folder)[0]
        self.assertEqual((row["status"], row["steps"], row["epochs"]), ("stopped early", 46, 2))
        with open(os.path.join(folder, "results.csv")) as f:
            self.assertTrue(f.read().strip().endswith(",46,stopped early"))
        code, out = run(["report", folder])
        self.assertEqual(code, 0, out)
        with open(os.path.join(folder, "report.html")) as f:
            self.assertIn("<td class=\"num\">46</td><td>stopped early</td></tr>", f.read())

    def slow_sweep(self, name, parallel=1):
        """Random search, 3 trials of 40 steps slowed to ~50 ms a step (time for kills)."""
        more = ("strategy: random\nmax_trials: 3\nseed: 5\nparallel: %d\n"
                "space: {optimizer.lr: {loguniform: [1.0e-3, 1.0e-2]}, "
                "model.args.dropout: {uniform: [0.0, 0.3]}}\n" % parallel)
        sweep, folder = self.sweep_file(name, more, length="40 steps")
        with open(self.base(length="40 steps"), "a") as f:
            f.write("callbacks: [{type: slow_steps, args: {ms: 50}}]\n")
        return ["sweep", sweep, "--plugin", common.test_plugin()], folder

    def trial_values(self, folder):
        return {os.path.basename(t): values(os.path.join(t, "metrics.jsonl"))
                for t in sorted(glob.glob(os.path.join(folder, "trial-*")))}

    def test_kill_9_of_the_sweep_and_of_a_trial_then_rerun_equals_an_uninterrupted_sweep(self):
        args, whole = self.slow_sweep("whole")
        code, out = run(args)
        self.assertEqual(code, 0, out)
        args, folder = self.slow_sweep("killed")
        sweep = subprocess.Popen([common.BIN] + args, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        # Kill -9 the sweep while trial 1 trains (after a checkpoint of it).
        self.assertTrue(common.wait_for(lambda: glob.glob(
            os.path.join(folder, "trial-1", "checkpoints", "step-10")), timeout=300))
        sweep.kill()
        sweep.wait()
        # Continue it, and kill -9 the trial it runs: the sweep restarts that trial.
        rerun = subprocess.Popen([common.BIN] + args, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        self.assertTrue(common.wait_for(lambda: glob.glob(
            os.path.join(folder, "trial-2", "checkpoints", "step-20")), timeout=300))
        trials = common.children_of(rerun.pid)
        self.assertEqual(len(trials), 1)
        os.kill(trials[0], signal.SIGKILL)
        out, _ = rerun.communicate(timeout=600)
        self.assertEqual(rerun.returncode, 0, out)
        self.assertIn("continuing the sweep", out)
        self.assertIn("restarting it from its checkpoint", out)
        self.assertEqual(self.results(folder), self.results(whole))
        self.assertEqual(self.trial_values(folder), self.trial_values(whole))

    def test_ctrl_c_stops_the_trials_with_a_checkpoint_and_the_same_command_continues(self):
        args, folder = self.slow_sweep("interrupted")
        sweep = subprocess.Popen([common.BIN] + args, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        self.assertTrue(common.wait_for(lambda: glob.glob(
            os.path.join(folder, "trial-0", "checkpoints", "step-10")), timeout=300))
        sweep.send_signal(signal.SIGINT)
        out, _ = sweep.communicate(timeout=300)
        self.assertEqual(sweep.returncode, 130, out)
        self.assertIn("the same sweep resumes it", out)
        self.assertEqual(self.results(folder)[0]["status"], "running")
        self.assertGreaterEqual(self.results(folder)[0]["steps"], 10)  # what it saved on the signal
        code, out = run(args)
        self.assertEqual(code, 0, out)
        self.assertEqual([r["status"] for r in self.results(folder)], ["finished"] * 3)
        self.assertEqual([e["step"] for e in values(
            os.path.join(folder, "trial-0", "metrics.jsonl")) if "val/acc" in e], [40])

    def test_a_paused_trial_is_resumed_by_the_next_sweep_never_ranked(self):
        # Every trial's job pauses after 1 s (the timer callback), before its only validation:
        # the sweep ranks nothing, writes no best.yaml and exits 75; each run of the same
        # command resumes the paused trials, until they end as an uninterrupted sweep does.
        args, whole = self.slow_sweep("unpaused")
        code, out = run(args)
        self.assertEqual(code, 0, out)
        args, folder = self.slow_sweep("paused")
        base = os.path.join(self.dir, "base.yaml")
        with open(base) as f:
            text = f.read().replace("args: {ms: 50}}]", "args: {ms: 50}}, "
                                    "{type: timer, args: {budget: 1s}}]")
        common.write(base, text)
        code, out = run(args)
        self.assertEqual(code, 75, out)
        self.assertEqual([r["status"] for r in self.results(folder)], ["paused"] * 3)
        self.assertEqual([r["metric"] for r in self.results(folder)], [None] * 3)
        self.assertEqual([r["rung"] for r in self.results(folder)], [None] * 3)  # not -1
        self.assertNotIn(" -1 ", out)
        self.assertFalse(os.path.exists(os.path.join(folder, "best.yaml")))
        self.assertIn("paused with a checkpoint: run the same command again to resume them; "
                      "exit 75", out)
        self.assertNotIn("does not report", out)
        steps = [r["steps"] for r in self.results(folder)]
        self.assertTrue(all(0 < n < 40 for n in steps), steps)
        for _ in range(8):
            code, out = run(args)
            if code != 75:
                break
            now = [r["steps"] for r in self.results(folder)]
            self.assertTrue(all(a <= b for a, b in zip(steps, now)) and now != steps, (steps, now))
            steps = now
        self.assertEqual(code, 0, out)
        with open(os.path.join(folder, "logs", "trial-0.log")) as f:
            self.assertIn("resumed from", f.read())
        self.assertEqual(self.results(folder), self.results(whole))
        self.assertTrue(os.path.exists(os.path.join(folder, "best.yaml")))

    def test_parallel_trials_give_the_same_results(self):
        args, one = self.slow_sweep("one")
        code, out = run(args)
        self.assertEqual(code, 0, out)
        args, two = self.slow_sweep("two", parallel=2)
        code, out = run(args)
        self.assertEqual(code, 0, out)
        self.assertEqual(self.results(one), self.results(two))

    def test_multi_process_trials_retry_a_killed_worker_and_best_yaml_says_how_to_run(self):
        # Trials of 2 processes each; kill -9 of one worker ends its launcher with 137, which
        # the sweep retries from the trial's checkpoint as it does a single-process trial. The
        # sweep gives each trial its share of the CPUs, which best.yaml, a run alone, does not
        # keep; its header says how the trials ran.
        sweep, folder = self.sweep_file(
            "two-procs", "strategy: grid\nspace: {optimizer.lr: {grid: [0.01]}}\n"
            "launch: {nproc_per_node: 2, master_port: 29690}\n",
            length="30 steps")
        with open(self.base(length="30 steps")) as f:
            base = f.read().replace(", threads: 1}", "}")
        common.write(self.base(length="30 steps"),
                     base + "callbacks: [{type: slow_steps, args: {ms: 100}}]\n")
        sweep_run = subprocess.Popen([common.BIN, "sweep", sweep, "--plugin", common.test_plugin()],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertTrue(common.wait_for(lambda: glob.glob(
            os.path.join(folder, "trial-*", "checkpoints", "step-10")), timeout=300))
        workers = [w for launch in common.children_of(sweep_run.pid)
                   for w in common.children_of(launch)]
        self.assertEqual(len(workers), 2, workers)
        os.kill(workers[1], signal.SIGKILL)
        out, _ = sweep_run.communicate(timeout=600)
        self.assertEqual(sweep_run.returncode, 0, out)
        self.assertIn("restarting it from its checkpoint", out)
        with open(os.path.join(glob.glob(os.path.join(folder, "trial-*"))[0], "config.yaml")) as f:
            self.assertRegex(f.read(), r"threads: \d+\n")  # the trial's share
        with open(os.path.join(folder, "best.yaml")) as f:
            best_yaml = f.read()
        self.assertIn("threads: auto", best_yaml)
        self.assertIn("# Its trials ran on 2 processes each: unitrain launch --nproc-per-node 2 -- "
                      "train %s/best.yaml" % folder, best_yaml)

    def test_asha_promotes_the_best_third_by_resuming(self):
        more = ("strategy: asha\nmax_trials: 9\nseed: 1\n"
                "asha: {min_length: 5 steps, max_length: 45 steps, reduction_factor: 3}\n"
                "space: {optimizer.lr: {loguniform: [1.0e-4, 3.0e-2]}}\n")
        sweep, folder = self.sweep_file("asha", more)
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 0, out)
        with open(os.path.join(folder, "sweep.json")) as f:
            trials = json.load(f)["trials"]
        self.assertEqual(len(trials), 9)
        # Replay the asynchronous rule over the recorded metrics, one job at a time.
        done = {t["trial"]: [] for t in trials}
        jobs = []
        while True:
            job = None
            for rung in (1, 0):
                reached = sorted((t for t in done if len(done[t]) > rung),
                                 key=lambda t: (-done[t][rung], t))
                for t in reached[:len(reached) // 3]:
                    if len(done[t]) == rung + 1:
                        job = (t, rung + 1)
                        break
                if job:
                    break
            if not job:
                started = [t for t in done if done[t]]
                if len(started) == 9:
                    break
                job = (len(started), 0)
            jobs.append(job)
            done[job[0]].append(trials[job[0]]["rung_metrics"][job[1]])
        for t in trials:
            self.assertEqual(len(t["rung_metrics"]), len(done[t["trial"]]), t)
        lengths = [5, 15, 45]
        total = 0
        for t in trials:
            rung = len(t["rung_metrics"]) - 1
            self.assertEqual(t["steps"], lengths[rung])
            total += t["steps"]
            events = values(os.path.join(folder, "trial-%d" % t["trial"], "metrics.jsonl"))
            # Promotion resumed the run folder: validation every 5 steps (the sweep's gcd of
            # the rungs, as val_every: 1 epoch misses their ends) up to its last rung, each
            # step once (never trained again); the rung's metric is the validation at its end.
            val = {e["step"]: e["val/acc"] for e in events if "val/acc" in e}
            self.assertEqual(sorted(val), list(range(5, lengths[rung] + 1, 5)))
            self.assertEqual(len([e for e in events if "val/acc" in e]), len(val))
            self.assertEqual(t["rung_metrics"], [val[n] for n in lengths[:rung + 1]])
        self.assertLess(total, 9 * 45 * 0.5)
        self.assertIn("%d steps in all" % total, out)

    def assert_refused(self, space, says, more="", metric="val/acc"):
        sweep, folder = self.sweep_file("bad", "strategy: grid\nspace: %s\n%s" % (space, more),
                                        metric=metric)
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 2, out)
        self.assertIn(says, out)
        self.assertEqual(glob.glob(os.path.join(folder, "trial-*")), [])

    def test_bad_input_is_refused_before_any_trial_folder_is_made(self):
        self.assert_refused("{optimizer.lrr: {grid: [0.1]}}", "unknown key 'optimizer.lrr'")
        self.assert_refused("{optimizer.lr: {uniform: [0.1, 0.01]}}",
                            "space.optimizer.lr.uniform: empty range", "max_trials: 2\n")
        self.assert_refused("{optimizer.lr: {choice: []}}", "space.optimizer.lr.choice")
        self.assert_refused("{optimizer.lr: {grid: [fast, 0.1]}}",
                            "optimizer.lr: expected float, got 'fast'")
        self.assert_refused("{model.args.sizes: {grid: [[64, 10], oops]}}", "model.args.sizes")
        self.assert_refused("{optimizer.lr: {grid: [0.1]}}", "metric: 'accuracy' is not a "
                            "validation metric", metric="accuracy")
        # --space.<key>: the key is a run config key path, dots and all, checked as the file's.
        sweep, folder = self.sweep_file("cli", "strategy: grid\nspace: {optimizer.lr: {grid: [0.1]}}\n")
        for key, value, says in (("optimizer.lr", "{grid: [fast]}",
                                  "optimizer.lr: expected float, got 'fast'"),
                                 ("optimizer.lrr", "{grid: [0.1]}", "unknown key 'optimizer.lrr'"),
                                 ("optimizer.lr", "0.1", "--space.optimizer.lr: expected a "
                                  "distribution")):
            code, out = run(["sweep", sweep, "--space." + key, value])
            self.assertEqual(code, 2, out)
            self.assertIn(says, out)
            self.assertEqual(glob.glob(os.path.join(folder, "trial-*")), [])
        sweep, _ = self.sweep_file("badname", "strategy: grid\nspace: {optimizer.lr: {grid: [0.1]}}\n")
        with open(sweep) as f:
            text = f.read().replace("name: s\n", "name: ../s\n")
        code, out = run(["sweep", common.write(sweep, text)])
        self.assertEqual(code, 2, out)
        self.assertIn("name '../s' must be one folder name", out)
        # A base that trains on nothing, or is not there, is refused before any trial.
        with open(self.base()) as f:
            no_data = common.write(os.path.join(self.dir, "no-data.yaml"),
                                   "\n".join(l for l in f.read().split("\n")
                                             if not l.startswith("  train:")))
        for base, says in ((no_data, "base: data.train is not set"),
                           ("missing.yaml", "a relative base path is from the current folder")):
            sweep, folder = self.sweep_file("nobase", "strategy: grid\nspace: {optimizer.lr: {grid: [0.1]}}\n")
            with open(sweep) as f:
                text = f.read().replace("base: %s\n" % self.base(), "base: %s\n" % base)
            code, out = run(["sweep", common.write(sweep, text)], cwd=self.dir)
            self.assertEqual(code, 2, out)
            self.assertIn(says, out)
            self.assertEqual(glob.glob(os.path.join(folder, "trial-*")), [])

    def test_a_metric_the_runs_never_report_stops_the_sweep_naming_the_ones_they_do(self):
        sweep, folder = self.sweep_file(
            "nometric", "strategy: grid\nspace: {optimizer.lr: {grid: [0.1, 0.01]}}\n",
            metric="val/f1")
        code, out = run(["sweep", sweep])
        self.assertEqual(code, 2, out)
        self.assertIn("does not report 'val/f1'; it reports: val/acc, val/loss", out)
        self.assertEqual(len(glob.glob(os.path.join(folder, "trial-*"))), 1)
        # The same when the first job pauses (a timer) after it validated: not a round of
        # paused trials first.
        args, folder = self.slow_sweep("nometric-paused")
        base = os.path.join(self.dir, "base.yaml")
        with open(base) as f:
            text = f.read().replace("args: {ms: 50}}]", "args: {ms: 50}}, "
                                    "{type: timer, args: {budget: 1.5s}}]")
        common.write(base, text.replace("val_every: 1 epoch", "val_every: 5 steps"))
        sweep = args[1]
        with open(sweep) as f:
            common.write(sweep, f.read().replace("metric: val/acc", "metric: val/f1"))
        code, out = run(args)
        self.assertEqual(code, 2, out)
        self.assertIn("does not report 'val/f1'; it reports: val/acc, val/loss", out)
        self.assertEqual(len(glob.glob(os.path.join(folder, "trial-*"))), 1)


if __name__ == "__main__":
    common.main()
