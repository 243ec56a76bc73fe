"""The GPU tests: the real binary on a CUDA device. On a machine without one (or a LibTorch
without CUDA) they do not run: the script says "no GPU here" with the number of tests and exits
77, which CTest counts as Skipped (never as passed). Run where a GPU is:
  ctest -R gpu.gpu_test --output-on-failure
or directly: python3 tests/gpu/gpu_test.py build/unitrain build
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import common  # noqa: E402
from common import run, read_jsonl, write  # noqa: E402

DIGITS_MLP = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 256, 256, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  normalize: {{enabled: true}}
  loader: {{batch_size: 64, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 1.0e-3}}
train: {{max_length: 6 epochs, log_every: 10 steps, device: cuda, deterministic: true}}
checkpoint: {{every: 20 steps, keep_last: 100}}
"""


def accuracy(run_dir):
    rows = [e for e in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "val/accuracy" in e]
    return rows[-1]["val/accuracy"]


class Gpu(common.Case):
    def digits(self, name, *args):
        run_dir = os.path.join(self.dir, name)
        cfg = write(os.path.join(self.dir, name + ".yaml"),
                    DIGITS_MLP.format(run_dir=run_dir, data=common.DIGITS))
        code, out = run(["train", cfg] + list(args))
        self.assertEqual(code, 0, out)
        return run_dir, out

    def test_demo_trains_on_the_gpu(self):
        run_dir = os.path.join(self.dir, "fashion")
        code, out = run(["train", "examples/fashion_mnist/cnn.yaml", "--run_dir", run_dir,
                         "--train.device", "cuda"], cwd=common.SOURCE, timeout=1700)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"device: cuda:0 \(")  # the GPU's name and memory follow
        self.assertRegex(out, r"done: .*peak cuda:0 memory \d+ MB")
        m = re.search(r"test/acc ([0-9.]+)", out)
        self.assertIsNotNone(m, out)
        self.assertGreaterEqual(float(m.group(1)), 0.88, out)

    def test_mixed_precision_learns(self):
        for precision in ("bf16-mixed", "fp16-mixed"):
            with self.subTest(precision=precision):
                run_dir, out = self.digits(precision, "--train.precision", precision)
                self.assertGreaterEqual(accuracy(run_dir), 0.9, out)
                scaler = os.path.join(run_dir, "checkpoints", "last", "loss_scaler.json")
                # fp16 runs through the GradScaler path (its state is checkpointed), bf16 needs none.
                self.assertEqual(os.path.exists(scaler), precision == "fp16-mixed", out)

    def test_checkpoint_saved_on_the_gpu_resumes_exactly(self):
        import torch
        full, _ = self.digits("full")
        steps = sorted(d for d in os.listdir(os.path.join(full, "checkpoints"))
                       if d.startswith("step-"))
        middle = os.path.join(full, "checkpoints", steps[len(steps) // 2])
        part, out = self.digits("part", "--checkpoint.resume", middle)
        self.assertIn("resumed from", out)
        a = torch.load(os.path.join(full, "checkpoints", "last", "model.pt"))
        b = torch.load(os.path.join(part, "checkpoints", "last", "model.pt"))
        for k in a:  # train.deterministic: true — bitwise on the same GPU
            self.assertTrue(torch.equal(a[k], b[k]), k)
        self.assertEqual(str(a[k].device), "cpu")  # checkpoints hold CPU tensors

    def test_eval_and_export_read_a_gpu_checkpoint_on_the_cpu(self):
        run_dir, _ = self.digits("trained")
        cfg = os.path.join(run_dir, "config.yaml")
        code, gpu_out = run(["eval", cfg, "--checkpoint", "last"])
        self.assertEqual(code, 0, gpu_out)
        code, cpu_out = run(["eval", cfg, "--checkpoint", "last", "--train.device", "cpu"])
        self.assertEqual(code, 0, cpu_out)
        acc = lambda out: float(re.search(r"accuracy ([0-9.]+)", out).group(1))
        self.assertAlmostEqual(acc(gpu_out), acc(cpu_out), places=3)

    def test_launch_one_process_per_gpu_with_zero(self):
        # unitrain launch with a process per GPU and ZeRO-2: with two GPUs or more the ranks
        # join over NCCL (one GPU per rank; NCCL refuses two ranks on one GPU); with one GPU the
        # launched process trains alone on it.
        import torch
        gpus = torch.cuda.device_count()
        run_dir = os.path.join(self.dir, "launched")
        cfg = write(os.path.join(self.dir, "launched.yaml"),
                    DIGITS_MLP.format(run_dir=run_dir, data=common.DIGITS))
        code, out = run(["launch", "--nproc-per-node", str(gpus), "--", "train", cfg,
                         "--distributed.zero", "2"])
        self.assertEqual(code, 0, out)
        if gpus > 1:
            self.assertRegex(out, rf"data parallel: rank 0 of {gpus} \(.*, nccl\)")
        self.assertRegex(out, r"device: cuda:0 \(")
        self.assertGreaterEqual(accuracy(run_dir), 0.9, out)

    def test_an_nccl_group_of_one_process_trains_as_the_process_alone(self):
        # One launched process that names its backend forms a group of one: NCCL's whole path
        # (buckets reduced in backward, ZeRO-1's partition, the step's decisions) on one GPU,
        # ending as the process that trains alone (deterministic: the same bits).
        import torch
        finals = {}
        for backend in ("auto", "nccl"):
            run_dir = os.path.join(self.dir, "group-of-one-" + backend)
            cfg = write(run_dir + ".yaml", DIGITS_MLP.format(run_dir=run_dir, data=common.DIGITS))
            code, out = run(["launch", "--nproc-per-node", "1", "--", "train", cfg,
                             "--distributed.backend", backend, "--distributed.zero", "1",
                             "--train.max_length", "2 epochs"])
            self.assertEqual(code, 0, out)
            self.assertEqual("data parallel: rank 0 of 1" in out, backend == "nccl", out)
            if backend == "nccl":
                self.assertRegex(out, r"data parallel: rank 0 of 1 \(.*, nccl\)")
            finals[backend] = torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))
        for k in finals["auto"]:
            self.assertTrue(torch.allclose(finals["auto"][k], finals["nccl"][k], rtol=1e-5,
                                           atol=1e-7), k)

    def test_two_ranks_on_one_gpu_over_gloo_end_as_one_process(self):
        # NCCL takes one GPU per rank; Gloo reduces CUDA tensors too. Two processes on cuda:0
        # with half the batch each end as one process with the whole batch: plain data
        # parallelism, ZeRO-1 and ZeRO-3 (the LM's units are what ZeRO-3 shards).
        import torch
        data = self.tokens()
        finals = {}
        for name, world, extra in (("one", 1, []), ("dp", 2, []),
                                   ("zero1", 2, ["--distributed.zero", "1"]),
                                   ("zero3", 2, ["--distributed.zero", "3"])):
            run_dir = os.path.join(self.dir, "ranks-" + name)
            cfg = write(run_dir + ".yaml", TOKENS_LM.format(run_dir=run_dir, data=data))
            args = ["train", cfg, "--train.device", "cuda:0", "--model.args.dropout", "0.0",
                    "--data.loader.batch_size", str(8 // world)] + extra
            if world > 1:
                args = ["launch", "--nproc-per-node", "2", "--master-port",
                        str(29620 + len(finals)), "--"] + args + ["--distributed.backend", "gloo"]
            code, out = run(args)
            self.assertEqual(code, 0, out)
            if world > 1:
                self.assertRegex(out, r"data parallel: rank 0 of 2 \(.*gloo\)")
            finals[name] = torch.load(os.path.join(run_dir, "checkpoints", "last", "model.pt"))
        for name in ("dp", "zero1", "zero3"):
            for k in finals["one"]:
                self.assertTrue(torch.allclose(finals["one"][k], finals[name][k], rtol=1e-4,
                                               atol=1e-6), f"{name} {k}")

    def test_cuda_graphs_train_as_the_uncaptured_step(self):
        # Replayed steps equal the uncaptured run's to the float32 rounding of the learning
        # rate the captured update reads (and a cosine schedule with warmup moves it every step):
        # the digits MLP with clipping in fp32, the LM with dropout (the CUDA generator's
        # offsets advance with each replay) in bf16-mixed; a refused setting names its key.
        import torch
        data = self.tokens()
        for name, precision in (("mlp", "fp32"), ("lm", "bf16-mixed")):
            finals, losses = [], []
            for graphs in ("false", "true"):
                run_dir = os.path.join(self.dir, f"graphs-{name}-{graphs}")
                args = ["--train.cuda_graphs", graphs, "--train.precision", precision,
                        "--data.loader.drop_last", "true", "--train.clip_grad_norm", "1.0",
                        "--train.log_every", "1 step", "--scheduler.type", "cosine",
                        "--scheduler.args.warmup", "5 steps"]
                if name == "mlp":
                    run_dir, out = self.digits(f"graphs-{graphs}", *args)
                else:
                    cfg = write(run_dir + ".yaml", TOKENS_LM.format(run_dir=run_dir, data=data))
                    code, out = run(["train", cfg, "--train.max_length", "40 steps"] + args)
                    self.assertEqual(code, 0, out)
                finals.append(torch.load(os.path.join(run_dir, "checkpoints", "last",
                                                      "model.pt")))
                losses.append([e["train/loss"] for e in
                               read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
                               if "train/loss" in e])
            self.assertEqual(len(losses[0]), len(losses[1]))
            tolerance = 1e-4 if precision == "fp32" else 2e-2
            for a, b in zip(losses[0], losses[1]):
                self.assertLess(abs(a - b), tolerance * max(1.0, abs(a)), (name, losses))
            for k in finals[0]:
                worst = ((finals[0][k] - finals[1][k]).abs().max()
                         / finals[0][k].abs().max().clamp(min=1e-12)).item()
                self.assertLess(worst, tolerance, f"{name} {k}")
        # A captured run resumed from a middle checkpoint: its eager steps update as the
        # replays do, so it ends as the run that never stopped (deterministic: bitwise).
        full = os.path.join(self.dir, "graphs-true")
        steps = sorted(d for d in os.listdir(os.path.join(full, "checkpoints"))
                       if d.startswith("step-"))
        middle = os.path.join(full, "checkpoints", steps[len(steps) // 2])
        part, out = self.digits("graphs-resumed", "--train.cuda_graphs", "true",
                                "--data.loader.drop_last", "true", "--train.clip_grad_norm",
                                "1.0", "--train.log_every", "1 step", "--scheduler.type",
                                "cosine", "--scheduler.args.warmup", "5 steps",
                                "--checkpoint.resume", middle)
        self.assertIn("resumed from", out)
        a = torch.load(os.path.join(full, "checkpoints", "last", "model.pt"))
        b = torch.load(os.path.join(part, "checkpoints", "last", "model.pt"))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        run_dir = os.path.join(self.dir, "graphs-refused")
        cfg = write(run_dir + ".yaml", TOKENS_LM.format(run_dir=run_dir, data=data))
        code, out = run(["train", cfg, "--train.cuda_graphs", "true",
                         "--train.accumulation_steps", "2"])
        self.assertEqual(code, 2, out)
        self.assertIn("train.cuda_graphs: true cannot capture", out)
        self.assertIn("train.accumulation_steps", out)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)

    def tokens(self):
        import torch
        data = os.path.join(self.dir, "tokens.bin")
        if not os.path.exists(data):
            g = torch.Generator().manual_seed(0)
            with open(data, "wb") as f:
                f.write(torch.randint(50, (4000,), generator=g, dtype=torch.int32).numpy()
                        .astype("<u2").tobytes())
        return data

    def test_activation_checkpointing_is_bitwise_on_the_gpu(self):
        # The recomputation replays the CUDA generator (dropout's masks) and autocast's state.
        import torch
        data = self.tokens()
        for precision in ("fp32", "bf16-mixed"):
            finals = []
            for ac in ("false", "true"):
                run_dir = os.path.join(self.dir, f"lm-{precision}-{ac}")
                cfg = write(run_dir + ".yaml", TOKENS_LM.format(run_dir=run_dir, data=data))
                code, out = run(["train", cfg, "--train.precision", precision,
                                 "--model.activation_checkpointing.enabled", ac])
                self.assertEqual(code, 0, out)
                finals.append(torch.load(os.path.join(run_dir, "checkpoints", "last",
                                                      "model.pt")))
            for k in finals[0]:
                self.assertTrue(torch.equal(finals[0][k], finals[1][k]), f"{precision} {k}")


TOKENS_LM = """
run_dir: {run_dir}
seed: 3
model:
  type: transformer_lm
  args: {{vocab: 50, d_model: 64, layers: 3, heads: 4, seq_len: 32, dropout: 0.1}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data}, seq_len: 32}}}}
  loader: {{batch_size: 8, workers: 0, shuffle: true}}
optimizer: {{type: adamw, lr: 3.0e-3}}
train: {{max_length: 10 steps, device: cuda, deterministic: true}}
"""


def gpu_here():
    """(True, "") when unitrain trains on cuda here, else (False, why)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        cfg = write(os.path.join(d, "probe.yaml"),
                    DIGITS_MLP.format(run_dir=os.path.join(d, "run"), data=common.DIGITS))
        code, out = run(["train", cfg, "--train.max_length", "1 steps", "--checkpoint.every", "null"])
    if code == 0:
        return True, ""
    if code == 2 and "asks for a GPU" in out:
        return False, out.strip().splitlines()[-1]
    sys.exit(f"the GPU probe failed (exit {code}):\n{out}")


if __name__ == "__main__":
    common.BIN = os.path.abspath(sys.argv[1])
    ok, why = gpu_here()
    if not ok:
        count = len([n for n in dir(Gpu) if n.startswith("test_")])
        print(f"no GPU here: {count} GPU tests not run ({why})")
        sys.exit(77)
    common.main()
