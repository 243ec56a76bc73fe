"""Pipeline parallelism with the real binary (distributed.pipeline_parallel): a transformer_lm
cut into stages trains as one process does, bitwise (each unit computed whole, the micro-
batches' gradients added in the same order), beside data and tensor parallelism; its checkpoints
hold the model's whole tensors, so a run resumes bitwise at its plan and goes on at another;
what it cannot run is refused by key before anything is written."""
import json
import os
import shutil

import torch

import common
from common import run

CONFIG = """
run_dir: {run_dir}
seed: 3
model: {model}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 16}}}}
  validation_ratio: 0.1
  loader: {{batch_size: 4, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.001, args: {{weight_decay: 0.01, eps: 1.0e-6}}}}
train: {{max_length: 12 steps, accumulation_steps: 4, log_every: 1 steps,
        val_every: 6 steps, threads: 1}}
checkpoint: {{enabled: true, every: 6 steps}}
log: {{trackers: [console, jsonl]}}
"""
LM = ("{type: transformer_lm, args: {vocab: 48, d_model: 32, layers: 2, heads: 4, seq_len: 16, "
      "dropout: 0.0}}")
PP = ["--distributed.pipeline_parallel"]


class PipelineParallel(common.PlanRuns):
    CONFIG = CONFIG
    MODEL = LM

    def metrics(self, run_dir, key):
        return [e[key] for e in common.read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                if key in e]

    def weights(self, run_dir, step=12):
        return torch.load(os.path.join(run_dir, "checkpoints", f"step-{step}", "model.pt"))

    def assert_same(self, a, b, what, tolerance=0.0):
        wa, wb = self.weights(a), self.weights(b)
        self.assertEqual(list(wa), list(wb), what)
        for k in wa:
            self.assertEqual(wa[k].shape, wb[k].shape, f"{what}: {k}")
            if tolerance == 0:
                self.assertTrue(torch.equal(wa[k], wb[k]), f"{what}: {k}")
            else:
                self.assertLess((wa[k] - wb[k]).abs().max().item(), tolerance, f"{what}: {k}")
        for key in ("train/loss", "val/loss"):
            la, lb = self.metrics(a, key), self.metrics(b, key)
            self.assertEqual(len(la), len(lb), f"{what}: {key}")
            self.assertTrue(la, f"{what}: {key}")
            self.assertLessEqual(max(abs(p - q) for p, q in zip(la, lb)), tolerance,
                                 f"{what}: {key}")

    def test_stages_train_as_one_process_beside_data_and_tensor_parallelism(self):
        # (With a test split, evaluated after fit through the stages.)
        test = ["--data.test", "{type: tokens, args: {path: %s, seq_len: 16}}"
                % os.path.join(self.dir, "tokens.bin")]
        one, _ = self.train("one", *test)
        pp2, out = self.train("pp2", *test, *PP, "2", world=2)
        self.assertEqual(self.metrics(one, "test/loss"), self.metrics(pp2, "test/loss"))
        self.assertTrue(self.metrics(one, "test/loss"))
        self.assertIn("pipeline parallel: 2 stages over the model's 4 units (stage: units 0-1, "
                      "2-3), 1 data-parallel replica; this process: stage 1 (units 2 to 3), the "
                      "loss", out)
        self.assert_same(one, pp2, "PP 2 against one process")
        with open(os.path.join(pp2, "results", "summary.json")) as f:
            self.assertEqual(json.load(f)["pipeline_parallel"], 2)
        # The optimizer's state: a partition by parameter for each stage, together the whole.
        step = os.path.join(pp2, "checkpoints", "step-12")
        parts = [torch.load(os.path.join(step, f"optimizer-rank-{r}.pt"))["state"]
                 for r in (0, 1)]
        whole = torch.load(os.path.join(one, "checkpoints", "step-12", "optimizer.pt"))["state"]
        self.assertEqual(sorted(set(parts[0]) | set(parts[1])), sorted(whole))
        self.assertFalse(set(parts[0]) & set(parts[1]))
        for stages, world in ((4, 4), (3, 3)):
            run_dir, _ = self.train(f"pp{stages}", *PP, str(stages), world=world)
            self.assert_same(one, run_dir, f"PP {stages} against one process")
        # Clipping: the norm's squares summed over the stages, in another order.
        clip = ["--train.clip_grad_norm", "0.05"]
        one_clipped, _ = self.train("one-clipped", *clip)
        pp2_clipped, _ = self.train("pp2-clipped", *clip, *PP, "2", world=2)
        self.assert_same(one_clipped, pp2_clipped, "clipped PP 2 against one process", 1e-6)
        dp2, _ = self.train("dp2", world=2)
        dp2pp2, _ = self.train("dp2pp2", *PP, "2", world=4)
        self.assert_same(dp2, dp2pp2, "DP 2 x PP 2 against DP 2")
        tp2pp2, _ = self.train("tp2pp2", *PP, "2", "--distributed.tensor_parallel", "2", world=4)
        self.assert_same(one, tp2pp2, "TP 2 x PP 2 against one process", 1e-5)

    def test_a_checkpoint_resumes_bitwise_at_its_plan_and_goes_on_at_another(self):
        straight, _ = self.train("straight", *PP, "2", world=2)
        half, _ = self.train("half", *PP, "2", "--train.max_length", "6 steps", world=2)
        for other in ("one", "pp4"):
            shutil.copytree(half, os.path.join(self.dir, other), symlinks=True)
        _, out = self.train("half", *PP, "2", world=2)
        self.assertIn("resumed from", out)
        self.assert_same(straight, half, "PP 2 resumed at PP 2")
        # The PP 2 checkpoint of step 6 in one process, and cut into 4 stages.
        _, out = self.train("one")
        self.assertIn("resumed from", out)
        self.assert_same(straight, os.path.join(self.dir, "one"), "PP 2, then one process")
        _, out = self.train("pp4", *PP, "4", world=4)
        self.assertIn("resumed from", out)
        self.assert_same(straight, os.path.join(self.dir, "pp4"), "PP 2, then PP 4")
        # export reads it as any checkpoint.
        w = os.path.join(self.dir, "w.pt")
        code, out = run(["export", os.path.join(half, "config.yaml"), "--checkpoint", "last",
                         "--out", w])
        self.assertEqual(code, 0, out)
        exported, saved = torch.load(w), self.weights(half)
        for k in saved:
            self.assertTrue(torch.equal(exported[k], saved[k]), k)

    def test_hugging_face_folders_in_stages_train_as_in_one_process(self):
        folders = self.hf_folders()
        model = f"{{type: llama, args: {{pretrained: {os.path.join(folders, 'llama')}}}}}"
        one, _ = self.train("llama-one", model=model)
        pp2, _ = self.train("llama-pp2", *PP, "2", world=2, model=model)
        self.assert_same(one, pp2, "llama PP 2 against one process")
        # A head tied to the embeddings: the first and last stages both hold them, and their
        # gradients' parts are summed (in another order than one process's: within 1e-5).
        tied = f"{{type: llama, args: {{pretrained: {os.path.join(folders, 'llama_tied_bias')}}}}}"
        one, _ = self.train("tied-one", model=tied)
        pp2, out = self.train("tied-pp2", *PP, "2", world=2, model=tied)
        self.assert_same(one, pp2, "tied llama PP 2 against one process", 1e-5)
        # gpt2 (tied), its dropout off: within 1e-5 but for the attention's key bias, whose
        # gradient is zero in exact arithmetic (Adam's steps of its rounding noise: within 1e-4).
        gpt2 = self.gpt2_without_dropout()
        model = f"{{type: gpt2, args: {{pretrained: {gpt2}}}}}"
        one, _ = self.train("gpt2-one", model=model)
        pp2, _ = self.train("gpt2-pp2", *PP, "2", world=2, model=model)
        wa, wb = self.weights(one), self.weights(pp2)
        for k in wa:
            d = (wa[k] - wb[k]).abs()
            self.assertLess(d.max().item(), 1e-4 if k.endswith("c_attn.bias") else 1e-5, k)

    def test_two_machines_a_stage_on_each_a_tensor_group_inside(self):
        # Network namespaces joined by a veth pair, 2 workers in each: ranks 0+1 (machine 0) are
        # the last stage's tensor group, 2+3 (machine 1) the first's; the activations cross
        # between the machines. The same run as TP 2 x PP 2 on one machine, bitwise.
        plan = ["--distributed.tensor_parallel", "2", *PP, "2"]
        here, _ = self.train("here", *plan, world=4)
        cfg, run_dir = self.config("machines")
        with common.Machines(self, "10.79.1") as machines:
            procs = [machines.launch(node, [
                "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                "--master-addr", machines.addrs[0], "--master-port", "29589", "--", "train", cfg,
                *plan, "--distributed.timeout", "60"])
                for node in (0, 1)]
            outs = [p.communicate(timeout=600)[0] for p in procs]
        for p, out in zip(procs, outs):
            self.assertEqual(p.returncode, 0, out)
        self.assertIn("this process: stage 1 (units 2 to 3), the loss", outs[0])
        self.assert_same(here, run_dir, "TP 2 x PP 2 on two machines against one machine")

    def test_lora_adapters_train_in_their_stages(self):
        # model.lora on every linear layer of make_folders.py's llama under PP 2: bitwise one
        # process (its adapters, every loss), the frozen base's fingerprint taken before the
        # stages gave back the others' memory (the same file as one process's); stopped at step
        # 6 and continued in one process, bitwise.
        folders = self.hf_folders()
        model = ("{type: llama, args: {pretrained: %s}, lora: {r: 4, alpha: 8, "
                 "target_modules: all-linear}}" % os.path.join(folders, "llama"))
        one, _ = self.train("lora-one", model=model)
        pp2, out = self.train("lora-pp2", *PP, "2", world=2, model=model)
        self.assertIn("model.lora: adapters of rank 4 on 14 layers", out)
        self.assert_same(one, pp2, "LoRA under PP 2 against one process")
        frozen = [open(os.path.join(r, "checkpoints", "step-12", "frozen_weights.json")).read()
                  for r in (one, pp2)]
        self.assertEqual(frozen[0], frozen[1])
        half, _ = self.train("lora-half", *PP, "2", "--train.max_length", "6 steps", world=2,
                             model=model)
        _, out = self.train("lora-half", model=model)
        self.assertIn("resumed from", out)
        self.assert_same(one, half, "LoRA under PP 2 until step 6, then one process")

    def test_zero_shards_each_stages_optimizer_state_over_the_replicas(self):
        # DP 2 x PP 2 with distributed.zero 1 and 2: each stage's replicas keep the optimizer
        # state of half its parameters (2: and its gradients); bitwise the run without, for the
        # transformer_lm and (ZeRO 1) for gpt2, whose head tied to the embeddings is held on
        # both stages (its state written once: the 4 partitions, one per stage and replica, hold
        # every parameter's once); ZeRO 2 with that tied head refused by name; stopped at step 6
        # and resumed bitwise.
        gpt2 = self.gpt2_without_dropout()
        tied = f"{{type: gpt2, args: {{pretrained: {gpt2}}}}}"
        for name, model, z in (("lm", LM, "1"), ("lm", LM, "2"), ("gpt2", tied, "1")):
            with self.subTest(name, zero=z):
                plain = os.path.join(self.dir, name + "-z0")
                if not os.path.isdir(plain):
                    self.train(name + "-z0", *PP, "2", world=4, model=model)
                zero, out = self.train(f"{name}-z{z}", *PP, "2", "--distributed.zero", z,
                                       world=4, model=model)
                self.assert_same(plain, zero, f"ZeRO {z} against none, DP 2 x PP 2")
                step = os.path.join(zero, "checkpoints", "step-12")
                merged, files = {}, sorted(f for f in os.listdir(step) if f.startswith("optim"))
                self.assertEqual(len(files), 4, files)
                for f in files:
                    part = torch.load(os.path.join(step, f))["state"]
                    self.assertFalse(set(part) & set(merged), f)  # each parameter's once
                    merged.update(part)
                whole = {}
                plain_step = os.path.join(plain, "checkpoints", "step-12")
                for f in os.listdir(plain_step):
                    if f.startswith("optim"):
                        whole.update(torch.load(os.path.join(plain_step, f))["state"])
                self.assertEqual(sorted(merged), sorted(whole))
                for i in whole:
                    self.assertTrue(torch.equal(merged[i]["exp_avg"], whole[i]["exp_avg"]), i)
        _, out = self.train("gpt2-z2", *PP, "2", "--distributed.zero", "2", world=4, model=tied,
                            expect=None)
        self.assertIn("distributed.zero: 2 with distributed.pipeline_parallel and a head tied to "
                      "the embeddings of another stage is not built yet", out)
        half, _ = self.train("lm-half", *PP, "2", "--distributed.zero", "2",
                             "--train.max_length", "6 steps", world=4)
        _, out = self.train("lm-half", *PP, "2", "--distributed.zero", "2", world=4)
        self.assertIn("resumed from", out)
        self.assert_same(os.path.join(self.dir, "lm-z2"), half, "ZeRO 2 resumed at step 6")

    def test_reproducible_stages_end_bitwise_one_process_with_dropout(self):
        # distributed.reproducible under pipeline (and tensor) parallelism: each stage's micro-
        # shards summed in shard order, the random draws carried from stage to stage, the cut
        # layers in 4 chunks; dropout on, clipping on, a validation split.
        rep = ["--distributed.reproducible", "4", "--distributed.reproducible_chunks", "4",
               "--train.accumulation_steps", "1", "--train.clip_grad_norm", "0.5"]
        lm = LM.replace("dropout: 0.0", "dropout: 0.1")
        one, _ = self.train("one", *rep, model=lm)
        for name, more, world in (("pp2", [], 2), ("dp2pp2-zero1", ["--distributed.zero", "1"], 4),
                                  ("tp2pp2", ["--distributed.tensor_parallel", "2"], 4)):
            run_dir, _ = self.train(name, *rep, *PP, "2", *more, world=world, model=lm)
            self.assert_same(one, run_dir, name)
        # Saved under PP 2 at step 6, resumed under TP 2: the one-process run's bits.
        self.train("moved", *rep, *PP, "2", "--train.max_length", "6 steps", world=2, model=lm)
        moved, out = self.train("moved", *rep, "--distributed.tensor_parallel", "2", world=2,
                                model=lm)
        self.assertIn("resumed from", out)
        self.assert_same(one, moved, "PP 2 then TP 2")

    def test_what_it_cannot_run_is_refused_by_key(self):
        cases = [
            ([], 3, "distributed.pipeline_parallel: 2 does not divide the job's 3 processes"),
            (["--distributed.zero", "3"], 2,
             "distributed.zero: 3 with distributed.pipeline_parallel: 2 is not built yet"),
            (["--objective.metrics", "[{type: accuracy}]"], 2,
             "distributed.pipeline_parallel: objective.metrics are not built yet"),
            (["--model", "{type: mlp, args: {sizes: [16, 48]}}"], 2,
             "distributed.pipeline_parallel: model mlp runs whole"),
            (["--distributed.pipeline_cuts", "[4]"], 2,
             "distributed.pipeline_cuts.0: 4 is not a unit after the previous cut"),
            (["--distributed.pipeline_parallel", "5"], 5,
             "distributed.pipeline_parallel: 5 stages, but the model runs 4 units"),
            (["--callbacks", "[{type: generate, args: {prompts: [a]}}]"], 2,
             "callbacks: generate does not run under distributed.pipeline_parallel"),
            (["--distributed.reproducible", "4", "--train.accumulation_steps", "1", "--model",
              "{type: gpt2, args: {pretrained: %s}}" % os.path.join(self.hf_folders(), "gpt2")],
             2,
             "distributed.reproducible with distributed.pipeline_parallel and a head tied"),
        ]
        for i, (more, world, said) in enumerate(cases):
            with self.subTest(said):
                run_dir, out = self.train(f"refused{i}", *PP, "2", *more, world=world,
                                          expect=None)
                self.assertIn(said, out)
                self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)


if __name__ == "__main__":
    common.main()
