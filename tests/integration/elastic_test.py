"""Resume at another world size with the real binary: a checkpoint of W processes continues on W'
with the same global batch, ending where a run of W' processes from the start ends (1e-5
relative), its loss curve continuing."""
import glob
import gzip
import os
import re
import signal
import subprocess
import time

import common
from common import run, read_jsonl, wait_for

# No dropout and SGD: the only difference between the runs is the order of float additions
# (which ranks sum which samples), which SGD keeps at rounding level.
CONFIG = """
run_dir: {run_dir}
seed: 11
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: {batch}, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, args: {{momentum: 0.9}}}}
train: {{max_length: 30 steps, log_every: 5 steps, threads: 1, {batching}}}
checkpoint: {{enabled: true, every: 15 steps}}
"""


def descendants(pid):
    """Every process below `pid` (from /proc), children before their children."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


class Elastic(common.Case):
    port = 29620

    def config(self, name, batch=16, batching="global_batch_size: 96"):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:960]))  # 10 steps of 96 per epoch
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"), CONFIG.format(
            run_dir=run_dir, data=data, batch=batch, batching=batching)), run_dir

    def train(self, world, cfg, *args):
        Elastic.port += 1
        cmd = ["train", cfg] + list(args)
        if world > 1:
            cmd = ["launch", "--nproc-per-node", str(world), "--master-port", str(Elastic.port),
                   "--"] + cmd
        code, out = run(cmd)
        self.assertEqual(code, 0, out)
        return out

    def test_a_refused_resume_never_says_it_resumes(self):
        # A finished 1-process run, then 2 processes with another precision: refused (nothing
        # would train), and no line before the refusal says the run resumes on 2 processes.
        cfg, _ = self.config("refused")
        self.train(1, cfg, "--train.max_length", "15 steps")
        Elastic.port += 1
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", str(Elastic.port),
                         "--", "train", cfg, "--train.max_length", "15 steps",
                         "--train.precision", "bf16-mixed"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("holds a finished run", out)
        self.assertNotIn("resuming on 2 process(es)", out)

    def check(self, before, after, zero="0", **config):
        cfg, ref = self.config(f"ref-{before}-{after}-{zero}", **config)
        self.train(after, cfg, "--distributed.zero", zero)
        cfg, run_dir = self.config(f"run-{before}-{after}-{zero}", **config)
        self.train(before, cfg, "--train.max_length", "15 steps", "--distributed.zero", zero)
        out = self.train(after, cfg, "--distributed.zero", zero)
        self.assertIn("resumed from", out)
        if before != after:
            self.assertIn(f"resuming on {after} process(es) a checkpoint written by {before}", out)
        self.assert_weights_close(self.final_weights(ref), self.final_weights(run_dir), 1e-5, 1e-6)
        # The loss curve continues: one event per 5 steps, never restarting, close to the
        # reference's after the resume.
        ea = [e for e in read_jsonl(os.path.join(ref, "metrics.jsonl")) if "train/loss" in e]
        eb = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "train/loss" in e]
        self.assertEqual([e["step"] for e in eb], [5, 10, 15, 20, 25, 30])
        self.assertEqual([e["samples"] for e in eb], [e["samples"] for e in ea])
        for x, y in zip(ea, eb):
            self.assertAlmostEqual(x["train/loss"], y["train/loss"], places=4)
        return out

    def test_two_processes_resume_on_one(self):
        self.check(2, 1)

    def test_one_process_resumes_on_two(self):
        self.check(1, 2)

    def test_two_processes_resume_on_three_with_sharded_optimizer_state(self):
        self.check(2, 3, zero="1")

    def test_the_accumulation_keeps_the_global_batch(self):
        # No global_batch_size: 2 x 32 x 1 per step; one process accumulates 2 x 32. The
        # reference is that layout from the start.
        cfg, ref = self.config("acc-ref", batch=32, batching="accumulation_steps: 2")
        self.train(1, cfg)
        cfg, run_dir = self.config("acc-run", batch=32, batching="accumulation_steps: 1")
        self.train(2, cfg, "--train.max_length", "15 steps")
        out = self.train(1, cfg)
        self.assertIn("(train.accumulation_steps 1 -> 2)", out)
        self.assert_weights_close(self.final_weights(ref), self.final_weights(run_dir), 1e-5, 1e-6)

    def test_a_global_batch_that_does_not_split_is_refused_before_anything_changes(self):
        cfg, run_dir = self.config("odd", batch=32, batching="accumulation_steps: 1")
        self.train(2, cfg, "--train.max_length", "15 steps")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            before = f.read()
        Elastic.port += 1
        code, out = run(["launch", "--nproc-per-node", "3", "--master-port", str(Elastic.port),
                         "--", "train", cfg])
        self.assertNotEqual(code, 0, out)
        self.assertIn("its global batch of 64 samples per step", out)
        self.assertIn("resume on 1, 2, 4", out)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            self.assertEqual(f.read(), before)

    def test_torchrun_elastic_node_lost_then_back(self):
        """Two torchrun agents (`--nnodes 1:2`, c10d rendezvous) as two nodes of one process each:
        one node's agent and worker killed, the other re-forms alone and resumes at world size 1
        from the last checkpoint with the global batch kept; a node started again joins and the
        run scales back to 2 (torchrun ends the worker with SIGTERM, which saves). With
        distributed.reproducible (2 micro-shards of 48: one per process on 2, two micro-steps on
        1) it ends bitwise equal to one process never disturbed."""
        cfg, ref = self.config("torchrun-ref", batch=48)
        self.train(1, cfg, "--train.max_length", "80 steps", "--checkpoint.every", "10 steps",
                   "--distributed.reproducible", "2")
        cfg, run_dir = self.config("torchrun", batch=48)
        Elastic.port += 1
        rdzv = Elastic.port
        logs = []
        # While this file exists the steps take 1 s, not 150 ms: node a, alone, does not finish
        # its 70 steps before node b's agent is back (a Python that imports torch, under load).
        hold = os.path.join(self.dir, "hold-pace")

        def node(name, hosts=False):
            log = open(os.path.join(self.dir, name + ".log"), "w")
            logs.append(log)
            # Its own process group (session): its agent and worker are killed together. The
            # agent unbuffered: the worker lines it tees (--tee) reach the file as they are
            # said, not when 8 kB have gathered or the agent ends (node a's growth back to two
            # would be read only after node a finished alone).
            return subprocess.Popen(
                common.torchrun() + [
                    "--nnodes", "1:2", "--nproc_per_node", "1", "--rdzv_backend", "c10d",
                    "--rdzv_endpoint", f"127.0.0.1:{rdzv}", "--rdzv_id", "elastic-test",
                    # Node a hosts the rendezvous store, whichever agent comes up first (the
                    # store goes with the node that hosts it).
                    "--rdzv_conf", "last_call_timeout=3,is_host=%d" % hosts, "--max_restarts", "3",
                    "--monitor_interval", "1", "--redirects", "1", "--tee", "1", "--no_python",
                    common.BIN, "train", cfg,
                    "--train.max_length", "80 steps", "--checkpoint.every", "10 steps",
                    "--distributed.timeout", "30", "--distributed.reproducible", "2",
                    "--plugin", common.test_plugin(),
                    "--callbacks", "[{type: slow_steps, args: {ms: 150, slower_while: %s}}]" % hold],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"))

        def text(name):
            with open(os.path.join(self.dir, name + ".log")) as f:
                return f.read()

        def train_logs():  # every worker's, every start
            out = ""
            for path in sorted(glob.glob(os.path.join(run_dir, "**", "*.log"), recursive=True)):
                with open(path, errors="replace") as f:
                    out += f.read()
            return out + text("a") + text("b") + (text("b2") if os.path.exists(
                os.path.join(self.dir, "b2.log")) else "")

        a = node("a", hosts=True)  # the node that stays
        time.sleep(0.5)
        b = node("b")
        procs = [a, b]
        try:
            self.assertTrue(wait_for(lambda: "data parallel: rank 0 of 2" in train_logs(), 180),
                            train_logs())
            # Node a may have started alone first (b's agent later than last_call_timeout under
            # load) and saved checkpoints of one process: b is lost only after the group of two
            # saved one of its own.
            folder = os.path.join(run_dir, "checkpoints")

            def steps_saved():
                names = os.listdir(folder) if os.path.isdir(folder) else []
                return {int(n[5:]) for n in names if n.startswith("step-")}

            before = steps_saved()
            self.assertTrue(wait_for(lambda: steps_saved() - before, 180), train_logs())
            first_of_two = min(steps_saved() - before)
            # Node b is lost: its agent and its worker (which torchrun 2.x starts in a session
            # of its own, so the agent's process group alone would leave it running).
            for pid in [b.pid] + descendants(b.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            common.write(hold, "")
            b.wait(timeout=30)
            shrunk = "resuming on 1 process(es) a checkpoint written by 2"

            def after_shrink():  # node a's log from the shrink's resume on
                # Node a's log is in time order (the logs together are not: an earlier restart,
                # when b joined after a first group of one had formed, resumed from another step
                # and said "resuming on 2" too). The resume says where it resumed from, then,
                # once nothing refused it, how the world changed.
                log = text("a")
                at = log.rfind(shrunk)
                start = log.rfind("resumed from", 0, at) if at >= 0 else -1
                return log[start:] if start >= 0 else ""

            def resumed():  # what node a's worker resumed from after the shrink, once said
                return re.findall(r"resumed from (\S+?):", after_shrink())

            self.assertTrue(wait_for(lambda: resumed(), 240), train_logs())
            self.assertIn("the global batch of 96 samples", train_logs())
            self.assertGreaterEqual(int(resumed()[0].rsplit("step-", 1)[1]), first_of_two,
                                    (resumed(), text("a")))
            b2 = node("b2")  # the node comes back
            procs.append(b2)
            grown = "resuming on 2 process(es) a checkpoint written by 1"
            self.assertTrue(wait_for(lambda: grown in after_shrink(), 240), train_logs())
            os.remove(hold)
            self.assertEqual(a.wait(timeout=300), 0, text("a"))
            self.assertEqual(b2.wait(timeout=60), 0, text("b2"))
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            for log in logs:
                log.close()
        state = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        self.assertEqual([e["step"] for e in state if "train/loss" in e][-1], 80)
        # Two layout changes (the second at whichever step torchrun's SIGTERM lands), each
        # step the same float additions in the same order: the one-process run's bits.
        self.assert_weights_equal(self.final_weights(ref),
                                  self.final_weights(run_dir, "--plugin", common.test_plugin()))


if __name__ == "__main__":
    common.main()
