"""distributed.reproducible with the real binary: the same config on 1, 2, 3 and 4 processes
(G = 12 micro-shards), plain data parallelism and ZeRO 1, 2 and 3, float32, bf16-mixed and
bf16-true (ZeRO 0-2), with dropout and clipping, ends with bitwise the same weights and optimizer state and the same logged
losses; a run of 4 processes resumed on 2 and then on 3 ends as the one-process run (ZeRO 3's
parts re-cut, and merged on one); what would break the promise is refused by name."""
import gzip
import json
import os
import signal

import torch

import common
from common import run, read_jsonl

# Dropout, AdamW (which amplifies any difference where gradients are ~0), clipping, the
# divergence guard's moving mean of the agreed loss: any other order of additions shows. 1000 examples: 10 steps of 12 x 8 an epoch, the last 40 not read.
CONFIG = """
run_dir: {run_dir}
seed: 7
model: {{type: mlp, args: {{sizes: [64, 48, 10], dropout: 0.2}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  val: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003, args: {{weight_decay: 0.01}}}}
train: {{max_length: 20 steps, log_every: 5 steps, val_every: 10 steps, threads: 1,
        clip_grad_norm: 1.0, divergence: {{spike_factor: 100, window: 3, action: skip}}}}
distributed: {{reproducible: 12}}
checkpoint: {{enabled: true, every: null}}
"""

# ZeRO 3 shards a model by its units: a small transformer_lm, two optimizer groups, dropout.
LM_CONFIG = """
run_dir: {run_dir}
seed: 7
model:
  type: transformer_lm
  args: {{vocab: 64, d_model: 32, layers: 3, heads: 4, seq_len: 16, dropout: 0.1}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 16}}}}
  validation_ratio: 0.1
  loader: {{batch_size: 4, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.003, no_decay_bias_norm: true, args: {{weight_decay: 0.01}}}}
train: {{max_length: 12 steps, log_every: 4 steps, val_every: 6 steps, threads: 1,
        clip_grad_norm: 0.5}}
distributed: {{reproducible: 12, zero: 3}}
checkpoint: {{enabled: true, every: null}}
"""


class Reproducible(common.Case):
    port = 29700

    def config(self, name):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:1000]))
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"),
                            CONFIG.format(run_dir=run_dir, data=data)), run_dir

    def lm_config(self, name):
        data = common.random_tokens(os.path.join(self.dir, "tokens.bin"), 64, 6000)
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"),
                            LM_CONFIG.format(run_dir=run_dir, data=data)), run_dir

    def flat_optimizer_state(self, run_dir):
        """ZeRO 3's optimizer state by flat: every rank's part laid end to end (the flats' padded
        lengths do not depend on the world size under distributed.reproducible)."""
        step = os.path.join(run_dir, "checkpoints", "last")
        with open(os.path.join(step, "model-shards.json")) as f:
            world = json.load(f)["world_size"]
        parts = [torch.load(os.path.join(step, f"optimizer-rank-{r}.pt"))["state"]
                 for r in range(world)]
        out = {}
        for index in parts[0]:
            out[index] = {k: torch.cat([p[index][k] for p in parts]) if k != "step"
                          else parts[0][index][k] for k in parts[0][index]}
        return out

    def train(self, world, cfg, *args):
        Reproducible.port += 1
        cmd = ["train", cfg] + list(args)
        if world > 1:
            cmd = ["launch", "--nproc-per-node", str(world), "--master-port",
                   str(Reproducible.port), "--"] + cmd
        code, out = run(cmd)
        self.assertEqual(code, 0, out)
        return out

    def model(self, run_dir):
        return torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))

    def optimizer_state(self, run_dir):
        """Every parameter's optimizer state by index, from optimizer.pt or ZeRO's partitions."""
        step = os.path.join(run_dir, "checkpoints", "last")
        names = sorted(n for n in os.listdir(step) if n.startswith("optimizer"))
        state = {}
        for name in names:
            part = torch.load(os.path.join(step, name))
            for index, values in part["state"].items():
                self.assertNotIn(index, state)
                state[index] = values
        return state

    def logged(self, run_dir):
        """metrics.jsonl without the wall-clock times."""
        return [{k: v for k, v in e.items() if k != "time"}
                for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))]

    def assert_same_tensors(self, a, b, what):
        self.assertEqual(sorted(a), sorted(b), what)
        for k in a:
            if isinstance(a[k], dict):
                self.assert_same_tensors(a[k], b[k], f"{what} {k}")
            elif not isinstance(a[k], torch.Tensor):
                self.assertEqual(a[k], b[k], f"{what} {k}")
            else:
                self.assertTrue(torch.equal(a[k], b[k]),
                                f"{what} {k}: max difference {(a[k] - b[k]).abs().max().item()}")

    def assert_same_run(self, ref, other, logs=True):
        self.assert_same_tensors(self.model(ref), self.model(other), "model.pt")
        self.assert_same_tensors(self.optimizer_state(ref), self.optimizer_state(other),
                                 "optimizer state")
        if logs:
            self.assertEqual(self.logged(ref), self.logged(other))
        # train.divergence's moving window: the agreed losses, summed in shard order.
        guard = os.path.join("checkpoints", "last", "divergence.json")
        if os.path.exists(os.path.join(ref, guard)):
            with open(os.path.join(ref, guard)) as a, open(os.path.join(other, guard)) as b:
                self.assertEqual(a.read(), b.read())

    def test_one_to_four_processes_zero_0_1_2_float32_and_bfloat16(self):
        for precision in ("fp32", "bf16-mixed", "bf16-true"):
            cfg, ref = self.config(f"one-{precision}")
            self.train(1, cfg, "--train.precision", precision)
            losses = [e["train/loss"] for e in self.logged(ref) if "train/loss" in e]
            self.assertEqual(len(losses), 4)
            for world, zero in ((2, 0), (3, 1), (4, 2)):
                with self.subTest(precision=precision, world=world, zero=zero):
                    cfg, run_dir = self.config(f"w{world}-z{zero}-{precision}")
                    out = self.train(world, cfg, "--train.precision", precision,
                                     "--distributed.zero", str(zero))
                    self.assertIn(f"accumulation {12 // world}", out)
                    self.assert_same_run(ref, run_dir)
        # The check can fail: without the promise, 2 processes with the same global batch
        # end elsewhere.
        cfg, plain = self.config("plain-2")
        self.train(2, cfg, "--distributed.reproducible", "0", "--train.accumulation_steps", "6")
        a, b = self.model(os.path.join(self.dir, "one-fp32")), self.model(plain)
        self.assertFalse(all(torch.equal(a[k], b[k]) for k in a))

    def test_four_processes_resumed_on_two_then_three_end_as_one(self):
        cfg, ref = self.config("one")
        self.train(1, cfg)
        cfg, run_dir = self.config("resized")
        self.train(4, cfg, "--train.max_length", "7 steps", "--distributed.zero", "1")
        out = self.train(2, cfg, "--train.max_length", "14 steps", "--checkpoint.resume", "auto")
        self.assertIn("resuming on 2 process(es) a checkpoint written by 4", out)
        out = self.train(3, cfg, "--checkpoint.resume", "auto", "--distributed.zero", "2")
        self.assertIn("resuming on 3 process(es) a checkpoint written by 2", out)
        # (Each segment's end logs what it has: the events differ, the weights and state not.)
        self.assert_same_run(ref, run_dir, logs=False)
        last = [e for e in self.logged(run_dir) if "val/loss" in e][-1]
        self.assertEqual(last, [e for e in self.logged(ref) if "val/loss" in e][-1])

    def test_one_process_saves_at_window_ends_and_resumes_exactly(self):
        # A quarter epoch is 2.5 steps of 12 micro-batches: the save due inside step 3's window
        # waits for its end (the window's sum so far is the sync's, which no checkpoint holds).
        cfg, ref = self.config("one")
        self.train(1, cfg)
        cfg, run_dir = self.config("quarters")
        self.train(1, cfg, "--checkpoint.every", "0.25 epochs", "--train.max_length", "4 steps")
        self.assertEqual(sorted(os.listdir(os.path.join(run_dir, "checkpoints"))),
                         ["last", "step-3", "step-4"])
        self.train(1, cfg, "--checkpoint.resume", os.path.join(run_dir, "checkpoints", "step-3"))
        self.assert_same_run(ref, run_dir)

    def test_two_machines_stopped_by_sigterm_resume_on_three_as_one_process(self):
        # Two "machines" (network namespaces joined by a veth pair) of 2 workers each, stopped
        # by SIGTERM to both launchers mid-run (every rank saves at the window's end), resumed
        # on 3 processes of one machine: bitwise the one-process run.
        cfg, ref = self.config("one")
        self.train(1, cfg)
        cfg, run_dir = self.config("machines")
        Reproducible.port += 1
        with common.Machines(self, "10.78.0") as machines:
            procs = [machines.launch(node, [
                "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                "--master-addr", machines.addrs[0], "--master-port", str(Reproducible.port), "--",
                "train", cfg, "--distributed.timeout", "60"] + common.slow_steps(100))
                for node in (0, 1)]
            metrics = os.path.join(run_dir, "metrics.jsonl")

            def logged_step_5():
                try:
                    return any(e["step"] >= 5 for e in read_jsonl(metrics))
                except (OSError, ValueError):  # not yet written, or a line being written
                    return False

            self.assertTrue(common.wait_for(logged_step_5, 120))
            for p in procs:
                p.send_signal(signal.SIGTERM)
            outs = [p.communicate(timeout=120)[0] for p in procs]
            for p, out in zip(procs, outs):
                self.assertEqual(p.returncode, 75, out)  # checkpoint.on_signal's exit code
        saved = [n for n in os.listdir(os.path.join(run_dir, "checkpoints")) if n != "last"]
        self.assertEqual(len(saved), 1, outs[0])
        self.assertLess(int(saved[0][5:]), 20, saved)
        out = self.train(3, cfg, "--checkpoint.resume", "auto")
        self.assertIn("resuming on 3 process(es) a checkpoint written by 4", out)
        self.assert_same_run(ref, run_dir, logs=False)

    def test_zero3_on_two_to_four_processes_and_resized_ends_as_one(self):
        # One process (ZeRO 3 has no effect there): the plain path, whole gradients.
        cfg, ref = self.lm_config("one")
        self.train(1, cfg)
        exported = {}
        for world in (2, 4):
            with self.subTest(world=world):
                cfg, run_dir = self.lm_config(f"zero3-{world}")
                self.train(world, cfg)
                exported[world] = run_dir
                self.assert_same_tensors(self.final_weights(ref), self.final_weights(run_dir),
                                         "weights")
                self.assertEqual(self.logged(ref), self.logged(run_dir))
        self.assert_same_tensors(self.flat_optimizer_state(exported[2]),
                                 self.flat_optimizer_state(exported[4]), "optimizer parts")
        # bf16-mixed: 3 processes as one.
        cfg, ref16 = self.lm_config("one-bf16")
        self.train(1, cfg, "--train.precision", "bf16-mixed")
        cfg, run16 = self.lm_config("zero3-3-bf16")
        self.train(3, cfg, "--train.precision", "bf16-mixed")
        self.assert_same_tensors(self.final_weights(ref16), self.final_weights(run16), "bf16")
        self.assertEqual(self.logged(ref16), self.logged(run16))
        # Resized: 4 -> 2 -> 3 (the parts re-cut each time), and 4 -> 1 (the parts merged).
        cfg, resized = self.lm_config("resized")
        self.train(4, cfg, "--train.max_length", "5 steps")
        self.train(2, cfg, "--train.max_length", "9 steps", "--checkpoint.resume", "auto")
        self.train(3, cfg, "--checkpoint.resume", "auto")
        self.assert_same_tensors(self.final_weights(ref), self.final_weights(resized), "4-2-3")
        cfg, merged = self.lm_config("to-one")
        self.train(4, cfg, "--train.max_length", "5 steps")
        out = self.train(1, cfg, "--checkpoint.resume", "auto")
        self.assertIn("resuming on 1 process(es) a checkpoint written by 4", out)
        self.assert_same_tensors(self.final_weights(ref), self.final_weights(merged), "4-1")

    def test_what_would_break_the_promise_is_refused_by_name(self):
        cfg, run_dir = self.config("refused")
        Reproducible.port += 1
        code, out = run(["launch", "--nproc-per-node", "5", "--master-port",
                         str(Reproducible.port), "--", "train", cfg])
        self.assertNotEqual(code, 0, out)
        self.assertIn("5 processes do not divide the 12 micro-shards", out)
        self.assertIn("1, 2, 3, 4, 6 or 12", out)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")))
        code, out = run(["train", cfg, "--train.threads", "auto"], env={
            k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
        self.assertNotEqual(code, 0, out)
        self.assertIn("set train.threads", out)
        images = os.path.join(self.dir, "images.yaml")
        common.write(images, open(cfg).read().replace(
            "{type: mlp, args: {sizes: [64, 48, 10], dropout: 0.2}}",
            "{type: cnn, args: {in_channels: 1, image_size: [8, 8], channels: [4], classes: 10, "
            "batch_norm: true}}"))
        code, out = run(["train", images])  # (refused before any step: the shapes never meet)
        self.assertNotEqual(code, 0, out)
        self.assertIn("batch-norm layer", out)
        cfg, _ = self.lm_config("sgd")
        Reproducible.port += 1
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port",
                         str(Reproducible.port), "--", "train", cfg, "--optimizer.type", "sgd"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("needs optimizer.type adam or adamw with args.fused: true", out)


if __name__ == "__main__":
    common.main()
