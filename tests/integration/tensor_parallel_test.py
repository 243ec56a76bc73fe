"""Tensor parallelism with the real binary (distributed.tensor_parallel): a transformer_lm cut
over 2 processes trains as one process does, and as data parallelism does beside it; its
checkpoints hold the model's whole tensors, so a run resumes bitwise at its plan and goes on at
another; what it cannot run is refused by key before anything is written."""
import json
import os
import re

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
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 0.001, args: {{weight_decay: 0.01, eps: 1.0e-6}}}}
train: {{max_length: 30 steps, log_every: 1 steps, threads: 1}}
checkpoint: {{enabled: true, every: 10 steps}}
log: {{trackers: [console, jsonl]}}
"""
LM = ("{type: transformer_lm, args: {vocab: 48, d_model: 32, layers: 2, heads: 4, seq_len: 16, "
      "dropout: 0.0}}")
# A Hugging Face llama folder of make_folders.py (grouped-query attention: 4 heads, 2 key/value
# heads; untied head; or tied with biases, stored in bf16).
LLAMA = "{{type: llama, args: {{pretrained: {folder}}}}}"

# Adam's eps is 1e-6, not its default 1e-8: a gradient whose size is rounding noise (the key
# bias's is zero in exact arithmetic, as softmax ignores a constant added to a row's scores; a
# few weights' are nearly so) divided by a square root of the same noise makes a step of lr's
# size. With eps 1e-8 one process with accumulation_steps 2 (the same sums in another order) ends
# 7e-6 from one with 1 here, and a CPU with other kernels went past 1e-5: the noise of the
# sums, not the plan. eps 1e-6 keeps those steps of noise's size, and every value within 1e-5.


class TensorParallel(common.PlanRuns):
    CONFIG = CONFIG
    MODEL = LM

    def losses(self, run_dir):
        return [e["train/loss"] for e in common.read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                if "train/loss" in e]

    def weights(self, run_dir, step=30):
        return torch.load(os.path.join(run_dir, "checkpoints", f"step-{step}", "model.pt"))

    def assert_close(self, a, b, what):
        wa, wb = self.weights(a), self.weights(b)
        self.assertEqual(list(wa), list(wb), what)
        for k in wa:
            self.assertEqual(wa[k].shape, wb[k].shape, f"{what}: {k}")
            self.assertLess((wa[k] - wb[k]).abs().max().item(), 1e-5, f"{what}: {k}")
        la, lb = self.losses(a), self.losses(b)
        self.assertEqual(len(la), len(lb))
        self.assertLess(max(abs(p - q) for p, q in zip(la, lb)), 1e-5, what)

    def test_plans_train_as_one_process_and_as_data_parallelism(self):
        one, _ = self.train("one")
        tp2, out = self.train("tp2", "--distributed.tensor_parallel", "2", world=2)
        self.assertIn("tensor parallel: 2 processes a tensor group, 1 data-parallel replica", out)
        self.assert_close(one, tp2, "TP 2 against one process")
        # The optimizer's state is whole too: Adam's moments of every parameter, full shapes.
        sa = torch.load(os.path.join(one, "checkpoints", "step-30", "optimizer.pt"))["state"]
        sb = torch.load(os.path.join(tp2, "checkpoints", "step-30", "optimizer.pt"))["state"]
        self.assertEqual(sorted(sa), sorted(sb))
        for i in sa:
            self.assertEqual(sa[i]["exp_avg"].shape, sb[i]["exp_avg"].shape)
        dp2, _ = self.train("dp2", world=2)
        dp2tp2, _ = self.train("dp2tp2", "--distributed.tensor_parallel", "2", world=4)
        self.assert_close(dp2, dp2tp2, "DP 2 x TP 2 against DP 2")

    def test_a_checkpoint_resumes_bitwise_at_its_plan_and_goes_on_at_another(self):
        tp = ["--distributed.tensor_parallel", "2"]
        straight, _ = self.train("straight", *tp, world=2)
        half, _ = self.train("half", *tp, "--train.max_length", "20 steps", world=2)
        other = os.path.join(self.dir, "other")
        os.system(f"cp -r {half} {other}")
        _, out = self.train("half", *tp, world=2)
        self.assertIn("resumed from", out)
        a, b = self.weights(straight), self.weights(half)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        self.assertEqual(self.losses(straight), self.losses(half))
        # The TP 2 checkpoint of step 20 in one process: the curve of the one-process run.
        one, _ = self.train("one")
        _, out = self.train("other")
        self.assertIn("resumed from", out)
        self.assert_close(one, other, "TP 2 until step 20, then one process")

    def test_a_hugging_face_llama_trains_as_in_one_process(self):
        folders = self.hf_folders()
        for folder in ("llama", "llama_tied_bias"):
            with self.subTest(folder):
                model = LLAMA.format(folder=os.path.join(folders, folder))
                runs = {}
                for name, world, more in (("one", 1, []),
                                          ("tp2", 2, ["--distributed.tensor_parallel", "2"])):
                    cfg, runs[name] = self.config(f"{folder}-{name}", model)
                    words = ["train", cfg] + more
                    if world > 1:
                        words = ["launch", "--nproc-per-node", str(world), "--"] + words
                    code, out = run(words)
                    self.assertEqual(code, 0, out)
                a, b = self.weights(runs["one"]), self.weights(runs["tp2"])
                self.assertEqual(list(a), list(b))
                for k in a:
                    self.assertEqual(a[k].shape, b[k].shape, k)
                    # Every value within 1e-5 but for a rare one (at most 1 in 1000, within
                    # 1e-4): the bf16-stored folders hold a few weights whose gradient stays near
                    # the noise of the sums even with eps 1e-6 (one of 3840 in up_proj, 1.1e-5
                    # here; 6e-5 with eps 1e-8).
                    d = (a[k] - b[k]).abs()
                    self.assertLess(d.max().item(), 1e-4, k)
                    self.assertLessEqual((d > 1e-5).sum().item(), d.numel() // 1000, k)
                la, lb = self.losses(runs["one"]), self.losses(runs["tp2"])
                self.assertLess(max(abs(p - q) for p, q in zip(la, lb)), 1e-5)

    def test_zero_shards_each_parts_optimizer_state_over_the_replicas(self):
        # DP 2 x TP 2 with distributed.zero 1 and 2: each replica keeps the optimizer state of
        # half the parameters (its tensor group's parts, owners drawn from the whole tensors'
        # sizes so that a group's processes agree), the same run bitwise; each replica's group
        # writes its partition of whole tensors, together the run's optimizer.pt; a run stopped
        # at step 20 resumes bitwise, and in one process.
        tp = ["--distributed.tensor_parallel", "2"]
        plain, out0 = self.train("zero0", *tp, world=4)
        state = torch.load(os.path.join(plain, "checkpoints", "step-30", "optimizer.pt"))["state"]
        held = lambda out: int(re.search(r"optimizer state on rank 0: (\d+) bytes", out).group(1))
        for zero in ("1", "2"):
            with self.subTest(zero=zero):
                run_dir, out = self.train("zero" + zero, *tp, "--distributed.zero", zero, world=4)
                a, b = self.weights(plain), self.weights(run_dir)
                for k in a:
                    self.assertTrue(torch.equal(a[k], b[k]), k)
                self.assertEqual(self.losses(plain), self.losses(run_dir))
                self.assertLess(held(out), 0.6 * held(out0))
                merged = {}
                for r in (0, 1):
                    merged.update(torch.load(os.path.join(
                        run_dir, "checkpoints", "step-30", f"optimizer-rank-{r}.pt"))["state"])
                self.assertEqual(sorted(merged), sorted(state))
                for i in state:
                    self.assertTrue(torch.equal(merged[i]["exp_avg_sq"], state[i]["exp_avg_sq"]))
        half, _ = self.train("zero-half", *tp, "--distributed.zero", "2",
                             "--train.max_length", "20 steps", world=4)
        other = os.path.join(self.dir, "zero-other")
        os.system(f"cp -r {half} {other}")
        _, out = self.train("zero-half", *tp, "--distributed.zero", "2", world=4)
        self.assertIn("resumed from", out)
        a, b = self.weights(plain), self.weights(half)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        _, out = self.train("zero-other")  # one process: the global batch kept
        self.assertIn("resumed from", out)
        self.assert_close(plain, other, "DP 2 x TP 2 with ZeRO 2 until step 20, then one process")

    def test_bf16_true_steps_float32_masters_of_the_parts(self):
        # train.precision bf16-true under TP 2: each process's float32 masters of its parts are
        # what the optimizer steps; the checkpoint holds them whole (float32, the one-process
        # names and shapes, Adam's moments too), resumes bitwise at its plan and in one process.
        bf16 = ["--train.precision", "bf16-true"]
        tp = ["--distributed.tensor_parallel", "2"]
        one, _ = self.train("bf16-one", *bf16)
        tp2, _ = self.train("bf16-tp2", *bf16, *tp, world=2)
        a, b = self.weights(one), self.weights(tp2)
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertEqual((a[k].shape, a[k].dtype), (b[k].shape, b[k].dtype), k)
            self.assertEqual(b[k].dtype, torch.float32, k)
            # bfloat16's rounding of other partial sums: within 1e-2 (2.2e-3 measured).
            self.assertLess((a[k] - b[k]).abs().max().item(), 1e-2, k)
        sa = torch.load(os.path.join(one, "checkpoints", "step-30", "optimizer.pt"))["state"]
        sb = torch.load(os.path.join(tp2, "checkpoints", "step-30", "optimizer.pt"))["state"]
        self.assertEqual(sorted(sa), sorted(sb))
        for i in sa:
            self.assertEqual(sa[i]["exp_avg"].shape, sb[i]["exp_avg"].shape)
            self.assertEqual(sb[i]["exp_avg"].dtype, torch.float32)
        half, _ = self.train("bf16-half", *bf16, *tp, "--train.max_length", "20 steps", world=2)
        other = os.path.join(self.dir, "bf16-other")
        os.system(f"cp -r {half} {other}")
        _, out = self.train("bf16-half", *bf16, *tp, world=2)
        self.assertIn("resumed from", out)
        c = self.weights(half)
        for k in b:
            self.assertTrue(torch.equal(b[k], c[k]), k)
        _, out = self.train("bf16-other", *bf16)
        self.assertIn("resumed from", out)

    def test_a_hugging_face_gpt2_trains_as_in_one_process(self):
        # Conv1D's [in, out] weights cut by columns (c_attn's q, k and v each, c_fc) and rows
        # (the c_proj layers): make_folders.py's gpt2 (tied head), its dropout off; and a fresh
        # one from its config.json with an untied head and a vocabulary of 97, which no T
        # divides: cut as evenly as it goes (49 and 48 rows).
        gpt2 = self.gpt2_without_dropout()
        with open(os.path.join(gpt2, "config.json")) as f:
            config = json.load(f)
        odd = os.path.join(self.dir, "odd.json")
        with open(odd, "w") as f:
            json.dump(dict(config, vocab_size=97, tie_word_embeddings=False), f)
        for name, model in (("tied", f"{{type: gpt2, args: {{pretrained: {gpt2}}}}}"),
                            ("odd", f"{{type: gpt2, args: {{config: {odd}}}}}")):
            with self.subTest(name):
                one, _ = self.train(f"gpt2-{name}-one", model=model)
                tp2, out = self.train(f"gpt2-{name}-tp2", "--distributed.tensor_parallel", "2",
                                      world=2, model=model)
                a, b = self.weights(one), self.weights(tp2)
                self.assertEqual(list(a), list(b))
                for k in a:
                    self.assertEqual(a[k].shape, b[k].shape, k)
                    d = (a[k] - b[k]).abs()
                    # The attention's key bias (c_attn.bias's middle third): its gradient is
                    # zero in exact arithmetic, Adam steps its rounding noise: within 1e-4.
                    if k.endswith("attn.c_attn.bias"):
                        self.assertLess(d.max().item(), 1e-4, k)
                        d = torch.cat([d[:32], d[64:]])
                    self.assertLess(d.max().item(), 1e-5, k)
                la, lb = self.losses(one), self.losses(tp2)
                self.assertLess(max(abs(p - q) for p, q in zip(la, lb)), 1e-5)

    def test_lora_adapters_are_cut_with_their_layers(self):
        # model.lora on every linear layer of make_folders.py's llama under TP 2: each adapter
        # drawn whole and cut with its layer (a column-parallel layer's lora_B by rows, a
        # row-parallel one's lora_A by columns), the same adapters and curve as one process;
        # the checkpoint (the adapters alone, whole, with the frozen base's fingerprint of the
        # whole tensors) goes on in one process, and exports the same PEFT folder.
        folders = self.hf_folders()
        model = ("{type: llama, args: {pretrained: %s}, lora: {r: 4, alpha: 8, "
                 "target_modules: all-linear}}" % os.path.join(folders, "llama"))
        tp = ["--distributed.tensor_parallel", "2"]
        one, _ = self.train("lora-one", model=model)
        tp2, out = self.train("lora-tp2", *tp, world=2, model=model)
        self.assertIn("model.lora: adapters of rank 4 on 14 layers", out)
        self.assert_close(one, tp2, "LoRA under TP 2 against one process")
        self.assertEqual(len(self.weights(tp2)), 28)  # lora_A and lora_B of 14 layers
        frozen = [open(os.path.join(r, "checkpoints", "step-30", "frozen_weights.json")).read()
                  for r in (one, tp2)]
        self.assertEqual(frozen[0], frozen[1])
        half = os.path.join(self.dir, "lora-half")
        self.train("lora-half", *tp, "--train.max_length", "20 steps", world=2, model=model)
        _, out = self.train("lora-half", model=model)
        self.assertIn("resumed from", out)
        self.assert_close(one, half, "LoRA under TP 2 until step 20, then one process")
        exported = []
        for r in (one, tp2):
            code, out = run(["export", r, "--format", "hf", "--out", r + "-peft"])
            self.assertEqual(code, 0, out)
            with open(os.path.join(r + "-peft", "adapter_config.json")) as f:
                exported.append(json.load(f))
        self.assertEqual(exported[0], exported[1])

    def test_two_machines_a_tensor_group_inside_each_replicas_across(self):
        # Network namespaces joined by a veth pair, 2 workers in each: ranks 0+1 (machine 0) and
        # 2+3 (machine 1) are tensor groups, the replicas talk across machines. The same run as
        # DP 2 x TP 2 on one machine, bitwise (the same sums in the same order).
        here, _ = self.train("here", "--distributed.tensor_parallel", "2", world=4)
        cfg, run_dir = self.config("machines")
        with common.Machines(self, "10.79.0") as machines:
            procs = [machines.launch(node, [
                "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                "--master-addr", machines.addrs[0], "--master-port", "29587", "--", "train", cfg,
                "--distributed.tensor_parallel", "2", "--distributed.timeout", "60"])
                for node in (0, 1)]
            outs = [p.communicate(timeout=600)[0] for p in procs]
        for p, out in zip(procs, outs):
            self.assertEqual(p.returncode, 0, out)
        self.assertIn("tensor parallel: 2 processes a tensor group, 2 data-parallel replicas",
                      outs[0])
        a, b = self.weights(here), self.weights(run_dir)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        self.assertEqual(self.losses(here), self.losses(run_dir))

    def test_reproducible_chunks_make_every_plan_bitwise_one_process(self):
        # distributed.reproducible over plans: the cut layers in 4 fixed chunks whatever T, with
        # clipping; one process, TP 2 and DP 2 x TP 2 end with the same bits, and a run saved
        # under TP 2 goes on bitwise on one process.
        rep = ["--distributed.reproducible", "4", "--distributed.reproducible_chunks", "4",
               "--train.clip_grad_norm", "0.5", "--data.loader.batch_size", "4"]
        tp = ["--distributed.tensor_parallel", "2"]
        one, _ = self.train("one", *rep)
        tp2, _ = self.train("tp2", *rep, *tp, world=2)
        dp2tp2, _ = self.train("dp2tp2", *rep, *tp, world=4)
        half, _ = self.train("half", *rep, *tp, "--train.max_length", "20 steps", world=2)
        os.system(f"cp -r {half} {os.path.join(self.dir, 'on-one')}")
        on_one, out = self.train("on-one", *rep)
        self.assertIn("resumed from", out)
        for other, what in ((tp2, "TP 2"), (dp2tp2, "DP 2 x TP 2"), (on_one, "TP 2 then one")):
            wa, wb = self.weights(one), self.weights(other)
            for k in wa:
                self.assertTrue(torch.equal(wa[k], wb[k]), f"{what}: {k}")
            self.assertEqual(self.losses(one)[-10:], self.losses(other)[-10:], what)
        # gpt2 (Conv1D, a tied head, attention dropout from each chunk's stream) and a llama of
        # grouped-query attention (2 key/value heads: 2 chunks), from their folders.
        gpt2 = "{{type: gpt2, args: {{pretrained: {}}}}}".format(
            os.path.join(self.hf_folders(), "gpt2"))
        llama = LLAMA.format(folder=os.path.join(self.hf_folders(), "llama"))
        for model, chunks in ((gpt2, "4"), (llama, "2")):
            more = rep[:3] + [chunks] + rep[4:]
            a, _ = self.train(f"one-{chunks}", *more, model=model)
            b, _ = self.train(f"tp2-{chunks}", *more, *tp, world=2, model=model)
            wa, wb = self.weights(a), self.weights(b)
            for k in wa:
                self.assertTrue(torch.equal(wa[k], wb[k]), f"{model}: {k}")

    def test_what_it_cannot_run_is_refused_by_key(self):
        tp = ["--distributed.tensor_parallel", "2"]
        cases = [
            (["--model.args.heads", "1"], 2, "model.args.heads (1) is not divisible by "
                                             "distributed.tensor_parallel (2)"),
            (["--distributed.zero", "3"], 4, "distributed.zero: 3 with distributed.tensor_parallel"),
            ([], 3, "distributed.tensor_parallel: 2 does not divide the job's 3 processes"),
            (["--model", "{type: mlp, args: {sizes: [16, 48]}}"], 2,
             "the model has no layers cut over a tensor group"),
            (["--objective.metrics", "[{type: accuracy}]"], 2,
             "objective.metrics.0: the metric accuracy takes the model's whole logits"),
            (["--distributed.reproducible", "2"], 2,
             "distributed.reproducible with distributed.tensor_parallel: 2 needs "
             "distributed.reproducible_chunks"),
            (["--distributed.reproducible", "2", "--distributed.reproducible_chunks", "3"], 2,
             "distributed.reproducible_chunks: 3 is not divisible by "
             "distributed.tensor_parallel: 2"),
            (["--distributed.reproducible", "2", "--distributed.reproducible_chunks", "8"], 2,
             "model.args.heads (4) is not divisible by distributed.reproducible_chunks (8)"),
            (["--distributed.reproducible_chunks", "2"], 2,
             "distributed.reproducible_chunks: 2 without distributed.reproducible"),
        ]
        for i, (more, world, said) in enumerate(cases):
            with self.subTest(said):
                run_dir, out = self.train(f"refused{i}", *tp, *more, world=world, expect=None)
                self.assertIn(said, out)
                self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)


if __name__ == "__main__":
    common.main()
