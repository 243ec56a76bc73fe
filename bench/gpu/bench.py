"""bench/gpu: unitrain against a plain PyTorch loop and PyTorch Lightning (eager, and with
torch.compile) on the same model, data, batch, precision and optimizer, on one device.

  python3 bench/gpu/bench.py --unitrain build/unitrain --device cuda --out OUT [--only gpt,cnn]
  python3 bench/gpu/bench.py --unitrain build/unitrain --device cpu --out OUT   # small sizes

Workloads (--device cuda; the CPU mode runs smaller ones, to check the harness itself):
  gpt  a GPT-2-small-shaped transformer_lm (d 768, 12 layers, 12 heads, context 1024, vocab
       50304, dropout 0), bf16-mixed, AdamW, batch 8 of random tokens: tokens/s, model FLOP
       utilisation, peak GPU memory
  cnn  the Fashion-MNIST demo's CNN, fp32, Adam, batch 64 of the real training images: images/s
  mlp  the digits MLP 64-256-256-10, fp32, AdamW, batch 64 of digits: steps/s (tiny steps: what
       one step costs besides its kernels)
Runners:
  unitrain        `unitrain train` on the YAML a user would write (its data through its loader:
                  pinned host batches copied without blocking); windows between its training
                  log events (metrics.jsonl's times, each taken after the event's one read of
                  the device), peak memory from its `done:` line
  plain           the fastest loop a Python user writes by hand: data resident on the device,
                  batches by a random permutation, zero_grad(set_to_none) / forward / loss /
                  backward / step
  lightning       Lightning's Trainer (eager) on the same module and device-resident batches
  lightning+compile  the same with the module under torch.compile (the upper reference)
On the CPU every runner uses one thread (the harness is checked there, not the CPU's speed).
Then unitrain again with each speed feature switched (VARIANTS: fused Adam off, losses read every
step, unpinned batches, TF32 matrix products, the CNN in channels-last layout), in the column
"vs unitrain".
Every runner is a process of its own. Each runs `windows` windows of `every` steps; the first
`warm` windows are warm-up (start, allocator, autotuning, compilation) and are dropped; the rate
is the median of the rest, each window timed from a device synchronisation to the next.
Writes OUT/results.json and OUT/table.md, and prints the table.
"""
import argparse
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
FASHION_LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
RUNNERS = ["unitrain", "plain", "lightning", "lightning+compile"]

# unitrain again with one speed feature switched off (or on, where off is the default): each
# feature measured on and off in the same call. Rows "unitrain: <name>".
# "cuda_graphs" needs a GPU: on the CPU its row says so.
GRAPHS = ("cuda_graphs", ["--train.cuda_graphs", "true"])
VARIANTS = {
    "gpt": [GRAPHS,
            ("fused Adam off", ["--optimizer.args.fused", "false"]),
            ("losses read every step", ["--train.loss_reads", "immediate"]),
            ("unpinned batches", ["--data.loader.pin_memory", "false"])],
    "cnn": [GRAPHS,
            ("channels_last", ["--model.args.channels_last", "true"]),
            ("matmul_precision high", ["--train.matmul_precision", "high"]),
            ("fused Adam off", ["--optimizer.args.fused", "false"]),
            ("unpinned batches", ["--data.loader.pin_memory", "false"])],
    "mlp": [GRAPHS,
            ("losses read every step", ["--train.loss_reads", "immediate"]),
            ("fused Adam off", ["--optimizer.args.fused", "false"])],
}

# Dense bf16 peak of the GPUs this may run on (vendor datasheets), for model FLOP utilisation.
PEAK_BF16 = [("H200", 989e12), ("H100 PCIe", 756e12), ("H100", 989e12), ("A100", 312e12),
             ("L40S", 362e12), ("L4", 121e12)]

# Sizes by device: (cuda, cpu). `every` steps a window, `windows` windows, `warm` dropped.
WORKLOADS = {
    "gpt": {
        "cuda": dict(vocab=50304, d=768, layers=12, heads=12, ctx=1024, batch=8, every=10,
                     windows=8, warm=2, precision="bf16-mixed"),
        "cpu": dict(vocab=512, d=64, layers=2, heads=4, ctx=64, batch=8, every=10, windows=5,
                    warm=1, precision="bf16-mixed"),
    },
    "cnn": {
        "cuda": dict(batch=64, every=100, windows=8, warm=2, precision="fp32"),
        "cpu": dict(batch=64, every=20, windows=5, warm=1, precision="fp32"),
    },
    "mlp": {
        "cuda": dict(batch=64, every=500, windows=8, warm=2, precision="fp32"),
        "cpu": dict(batch=64, every=100, windows=5, warm=1, precision="fp32"),
    },
}


# ---------------------------------------------------------------------------------------------
# The models, as unitrain's built-ins compute them (models/transformer_lm, cnn, mlp).

def models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            if hasattr(F, "scaled_dot_product_attention"):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # PyTorch 1.x
                s = (q @ k.transpose(-2, -1)) / (q.size(-1) ** 0.5)
                s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1),
                                  float("-inf"))
                y = torch.softmax(s, -1) @ v
            return self.out(y.transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attention = Attention(d, heads)
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.proj(F.gelu(self.fc(self.norm2(x))))

    class Gpt(nn.Module):
        def __init__(self, vocab, d, layers, heads, ctx):
            super().__init__()
            self.token_embedding = nn.Embedding(vocab, d)
            self.position_embedding = nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens):
            pos = torch.arange(tokens.size(1), device=tokens.device)
            x = self.token_embedding(tokens) + self.position_embedding(pos)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    sys.path.insert(0, os.path.join(SOURCE, "bench", "ddp"))
    from reference import Cnn  # unitrain's built-in cnn

    def mlp():
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))

    return Gpt, Cnn, mlp


def gpt_flops_per_token(s):
    """Training FLOPs per token (PaLM's appendix: 6 per weight touched per token, plus the
    attention's score and value products); the position embedding does no products."""
    d, layers, ctx, vocab = s["d"], s["layers"], s["ctx"], s["vocab"]
    weights = layers * 12 * d * d + vocab * d  # blocks' matrices, the head; (embedding: a gather)
    return 6 * weights + 12 * layers * d * ctx


# ---------------------------------------------------------------------------------------------
# Data: written once, read by every runner.

def prepare_data(work, device):
    import numpy
    paths = {}
    s = WORKLOADS["gpt"][device]
    tokens = numpy.random.default_rng(0).integers(0, s["vocab"], size=4_000_000 if device == "cuda"
                                                  else 200_000, dtype=numpy.uint16)
    paths["tokens"] = os.path.join(work, "tokens.bin")
    tokens.tofile(paths["tokens"])
    return paths


def load_fashion():
    import numpy
    sys.path.insert(0, os.path.join(SOURCE, "bench"))
    from python_loop import idx  # the IDX reader bench/python_loop.py has
    x = idx(FASHION).reshape(-1, 1, 28, 28)
    return x.astype(numpy.float32) / 255.0, idx(FASHION_LABELS).astype(numpy.int64)


def load_digits():
    import numpy
    with gzip.open(DIGITS, "rt") as f:
        rows = numpy.loadtxt(f, delimiter=",", dtype=numpy.float32)
    x, y = rows[:, :64], rows[:, 64].astype(numpy.int64)
    return (x - x.mean(0)) / (x.std(0) + 1e-8), y  # data.normalize: per feature


# ---------------------------------------------------------------------------------------------
# The Python runners (each in a process of its own: `bench.py --worker RUNNER --workload W`).

def python_worker(runner, workload, device, data):
    import numpy
    import torch
    import torch.nn.functional as F
    s = WORKLOADS[workload][device]
    torch.manual_seed(1)
    if device == "cpu":
        torch.set_num_threads(1)  # as unitrain's train.threads: 1 in the CPU mode
    dev = torch.device(device)
    Gpt, Cnn, mlp = models()
    if workload == "gpt":
        model = Gpt(s["vocab"], s["d"], s["layers"], s["heads"], s["ctx"])
        stream = torch.from_numpy(numpy.fromfile(data["tokens"], numpy.uint16).astype(numpy.int64))
        stream = stream.to(dev)
        offsets = torch.arange(s["ctx"] + 1, device=dev)

        def batch():
            starts = torch.randint(0, stream.numel() - s["ctx"] - 1, (s["batch"], 1), device=dev)
            w = stream[starts + offsets]
            return w[:, :-1], w[:, 1:]

        def loss_of(m, x, y):
            return F.cross_entropy(m(x).flatten(0, 1), y.flatten())
        opt_of = lambda p: torch.optim.AdamW(p, lr=3e-4, weight_decay=0.1)  # noqa: E731
    else:
        x_all, y_all = load_fashion() if workload == "cnn" else load_digits()
        x_all, y_all = torch.from_numpy(x_all).to(dev), torch.from_numpy(y_all).to(dev)
        model = Cnn() if workload == "cnn" else mlp()
        order = {"perm": None, "at": 0}

        def batch():  # an epoch's random permutation, batch by batch (the last partial dropped)
            if order["perm"] is None or order["at"] + s["batch"] > len(order["perm"]):
                order["perm"], order["at"] = torch.randperm(len(x_all), device=dev), 0
            rows = order["perm"][order["at"]:order["at"] + s["batch"]]
            order["at"] += s["batch"]
            return x_all[rows], y_all[rows]

        def loss_of(m, x, y):
            return F.cross_entropy(m(x), y)
        opt_of = ((lambda p: torch.optim.Adam(p, lr=1e-3)) if workload == "cnn"
                  else (lambda p: torch.optim.AdamW(p, lr=2e-3, weight_decay=0.01)))
    model = model.to(dev)
    bf16 = s["precision"] == "bf16-mixed"
    steps = s["every"] * s["windows"]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    marks = []
    if runner == "plain":
        opt = opt_of(model.parameters())
        sync()
        marks.append(time.perf_counter())
        for step in range(steps):
            x, y = batch()
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
                loss = loss_of(model, x, y)
            loss.backward()
            opt.step()
            if (step + 1) % s["every"] == 0:
                sync()
                marks.append(time.perf_counter())
    else:
        marks = lightning_fit(runner, model, batch, loss_of, opt_of, s, steps, device, sync)
    windows = [b - a for a, b in zip(marks, marks[1:])]
    peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None
    return {"window_s": windows, "peak_mb": peak}


def lightning_fit(runner, model, batch, loss_of, opt_of, s, steps, device, sync):
    import torch
    try:
        import lightning as L
    except ImportError:
        import pytorch_lightning as L

    class Batches(torch.utils.data.IterableDataset):  # device-resident batches, as `plain`'s
        def __iter__(self):
            for _ in range(steps):
                yield batch()

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = torch.compile(model) if runner == "lightning+compile" else model

        def training_step(self, b, i):
            return loss_of(self.model, *b)

        def configure_optimizers(self):
            return opt_of(self.parameters())

    marks = []

    class Windows(L.Callback):
        def on_train_batch_start(self, trainer, module, b, i):
            if i == 0:
                sync()
                marks.append(time.perf_counter())

        def on_train_batch_end(self, trainer, module, out, b, i):
            if (i + 1) % s["every"] == 0:
                sync()
                marks.append(time.perf_counter())

    trainer = L.Trainer(accelerator="gpu" if device == "cuda" else "cpu", devices=1,
                        precision="bf16-mixed" if s["precision"] == "bf16-mixed" else "32-true",
                        max_steps=steps, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, callbacks=[Windows()])
    trainer.fit(Module(), torch.utils.data.DataLoader(Batches(), batch_size=None))
    return marks


# ---------------------------------------------------------------------------------------------
# unitrain

def save(results, facts, a):
    """Writes table.md and results.json in a.out from the rows measured so far; the table."""
    text = table(results, facts, a.device)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"facts": facts, "workloads": {w: WORKLOADS[w][a.device] for w in results},
                   "results": results}, f, indent=1)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text)
    return text


def unitrain_yaml(workload, device, run_dir, data):
    s = WORKLOADS[workload][device]
    steps = s["every"] * s["windows"]
    common = (f"run_dir: {run_dir}\nseed: 1\ncheckpoint: {{enabled: false}}\n"
              f"train: {{max_length: {steps} steps, log_every: {s['every']} steps, "
              f"device: {device}, precision: {s['precision']}"
              + (", threads: 1" if device == "cpu" else "") + "}\n")
    if workload == "gpt":
        return common + f"""
model: {{type: transformer_lm, args: {{vocab: {s['vocab']}, d_model: {s['d']}, layers: {s['layers']},
  heads: {s['heads']}, seq_len: {s['ctx']}, dropout: 0.0}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: tokens, args: {{path: {data['tokens']}, seq_len: {s['ctx']}, vocab_size: {s['vocab']}}}}}
  loader: {{batch_size: {s['batch']}, shuffle: true, drop_last: true}}
optimizer: {{type: adamw, lr: 3.0e-4, args: {{weight_decay: 0.1}}}}
"""
    if workload == "cnn":
        return common + f"""
model: {{type: cnn, args: {{in_channels: 1, image_size: [28, 28], channels: [32, 64], hidden: 128,
  classes: 10}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: idx, args: {{images: {FASHION}, labels: {FASHION_LABELS}}}}}
  loader: {{batch_size: {s['batch']}, shuffle: true, drop_last: true}}
optimizer: {{type: adam, lr: 1.0e-3}}
"""
    return common + f"""
model: {{type: mlp, args: {{sizes: [64, 256, 256, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: csv, args: {{path: {DIGITS}, header: false, target: "64"}}}}
  normalize: {{enabled: true}}
  loader: {{batch_size: {s['batch']}, shuffle: true, drop_last: true}}
optimizer: {{type: adamw, lr: 2.0e-3, args: {{weight_decay: 0.01}}}}
"""


def unitrain_run(binary, workload, device, work, data, timeout, args=()):
    run_dir = tempfile.mkdtemp(prefix="unitrain-" + workload + "-", dir=work)
    cfg = run_dir + ".yaml"
    with open(cfg, "w") as f:
        f.write(unitrain_yaml(workload, device, run_dir, data))
    p = subprocess.run([binary, "train", cfg] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"unitrain exited {p.returncode}: {out[-2000:]}")
    # Each training log event's time is read after its one wait for the device (the logged
    # losses): windows from one to the next. (No callback: a callback's on_step_end reads the
    # loss every step, a wait for the device per step.)
    times = [0.0]
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if "train/loss" in e:
                times.append(e["time"])
    windows = [b - a for a, b in zip(times, times[1:])]
    m = re.search(r"peak cuda:\d+ memory (\d+) MB", out)
    return {"window_s": windows, "peak_mb": float(m.group(1)) if m else None,
            "first_lines": [l for l in out.splitlines() if "device:" in l or "matmul" in l][:3]}


# ---------------------------------------------------------------------------------------------

def rate_of(result, workload, s):
    kept = result["window_s"][s["warm"]:]
    if not kept:
        raise RuntimeError(f"{len(result['window_s'])} windows, all warm-up")
    per_step = statistics.median(kept) / s["every"]
    if workload == "gpt":
        return s["batch"] * s["ctx"] / per_step  # tokens/s
    if workload == "cnn":
        return s["batch"] / per_step  # images/s
    return 1.0 / per_step  # steps/s


UNITS = {"gpt": "tokens/s", "cnn": "images/s", "mlp": "steps/s"}


def versions(device):
    import torch
    v = {"python": platform.python_version(), "torch": torch.__version__,
         "machine": platform.node(), "cpus": os.cpu_count()}
    if device == "cuda":
        v["gpu"] = torch.cuda.get_device_name(0)
        v["cuda"] = torch.version.cuda
    for name in ("lightning", "pytorch_lightning"):
        try:
            v[name] = __import__(name).__version__
            break
        except ImportError:
            pass
    return v


def peak_flops(gpu):
    for name, flops in PEAK_BF16:
        if name in gpu:
            return flops
    return None


def table(results, facts, device):
    lines = [f"device: {facts.get('gpu', 'cpu')}; " + ", ".join(
        f"{k} {v}" for k, v in facts.items() if k != "gpu"), ""]
    lines.append("| workload | runner | rate | vs lightning | vs plain | vs unitrain | MFU | peak MB "
                 "| note |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    peak = peak_flops(facts.get("gpu", ""))
    for workload in WORKLOADS:
        rows = results.get(workload)
        if not rows:
            continue
        s = WORKLOADS[workload][device]
        for runner in rows:
            r = rows.get(runner)
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {workload} | {runner} | — | | | | | | {r['error']} |")
                continue
            rel = []
            for base in ("lightning", "plain", "unitrain"):
                b = rows.get(base, {})
                rel.append(f"{r['rate'] / b['rate']:.2f}x" if "rate" in b and base != runner
                           else "")
            mfu = ""
            if workload == "gpt" and peak:
                mfu = f"{100 * r['rate'] * gpt_flops_per_token(s) / peak:.1f}%"
            pk = f"{r['peak_mb']:.0f}" if r.get("peak_mb") else ""
            lines.append(f"| {workload} | {runner} | {r['rate']:.1f} {UNITS[workload]} | "
                         f"{rel[0]} | {rel[1]} | {rel[2]} | {mfu} | {pk} | {r.get('note', '')} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unitrain", default=os.path.join(SOURCE, "build", "unitrain"))
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-gpu-out"))
    ap.add_argument("--only", default="gpt,cnn,mlp")
    ap.add_argument("--runners", default=",".join(RUNNERS))
    ap.add_argument("--timeout", type=float, default=240, help="seconds a run may take")
    ap.add_argument("--no-variants", action="store_true",
                    help="unitrain only as configured, not also with each feature switched")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:  # one Python runner, in its own process: its result as the last line
        print(json.dumps(python_worker(a.worker, a.workload, a.device, json.loads(a.data))))
        return 0
    os.makedirs(a.out, exist_ok=True)
    facts = versions(a.device)
    have_lightning = "lightning" in facts or "pytorch_lightning" in facts
    import torch
    have_compile = hasattr(torch, "compile")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as work:
        data = prepare_data(work, a.device)
        # Every workload's runners first, then the variant rows: should the call's time run
        # out, what it loses is variants.
        order = [(w, r) for w in a.only.split(",") for r in a.runners.split(",")]
        if "unitrain" in a.runners.split(",") and not a.no_variants:
            order += [(w, "unitrain: " + name) for w in a.only.split(",")
                      for name, _ in VARIANTS[w]]
        for workload, runner in order:
            s = WORKLOADS[workload][a.device]
            rows = results.setdefault(workload, {})
            if runner.startswith("lightning") and not have_lightning:
                rows[runner] = {"error": "Lightning is not installed here"}
                continue
            if runner == "unitrain: " + GRAPHS[0] and a.device != "cuda":
                rows[runner] = {"error": "CUDA graphs need a GPU"}
                continue
            if runner == "lightning+compile" and not have_compile:
                rows[runner] = {"error": f"torch.compile is not in PyTorch {torch.__version__}"}
                continue
            t0 = time.time()
            try:
                if runner.startswith("unitrain"):
                    args = dict(VARIANTS[workload]).get(runner[len("unitrain: "):], [])
                    r = unitrain_run(a.unitrain, workload, a.device, work, data, a.timeout,
                                     args)
                else:
                    p = subprocess.run(
                        [sys.executable, __file__, "--worker", runner, "--workload", workload,
                         "--device", a.device, "--data", json.dumps(data)],
                        capture_output=True, text=True, timeout=a.timeout)
                    if p.returncode != 0:
                        raise RuntimeError(f"exit {p.returncode}: "
                                           + (p.stdout + p.stderr)[-1500:].replace("\n", " "))
                    r = json.loads(p.stdout.strip().splitlines()[-1])
                r["rate"] = rate_of(r, workload, s)
            except subprocess.TimeoutExpired:
                r = {"error": f"over {a.timeout:.0f} s"}
            except Exception as e:  # noqa: BLE001  (the table says what failed)
                r = {"error": str(e)[:300].replace("|", "/")}
            r["seconds"] = round(time.time() - t0, 1)
            rows[runner] = r
            save(results, facts, a)  # the rows so far, should the call's time run out
            print(f"{workload} {runner}: " + (f"{r['rate']:.1f} {UNITS[workload]}"
                  if "rate" in r else r["error"]) + f" ({r['seconds']} s)", flush=True)
    print(save(results, facts, a))
    failed = [f"{w}/{r}" for w, rows in results.items() for r, v in rows.items()
              if "error" in v
              and not v["error"].startswith(("Lightning is not", "torch.compile", "CUDA graphs"))]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
