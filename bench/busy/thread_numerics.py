"""bench/busy/thread_numerics: which of LibTorch's CPU operations give other bits with another
intra-op thread count, and whether unitrain's loader threads change a run's numbers.

  /usr/bin/python3 bench/busy/thread_numerics.py [build/unitrain]

Part 1 (Debian's PyTorch, the same LibTorch and OpenBLAS unitrain links): each operation run
with 1 thread and with 2, 3, 4 (torch.set_num_threads), results compared bit for bit; prints
those that differ (largest difference) and those that do not.
Part 2 (with a unitrain binary): the same digits MLP (64-512-512-10, dropout, an L2 term,
accumulation 2) trained with
data.loader.workers 0, 2 and 4 (prefetch 2 and 8) at train.threads 2, and with 0 workers at threads 1;
prints which final weights are bitwise equal. docs/performance.md ("A busy machine") has the
results.
"""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F


def operations(threads):
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    out = {}
    a, b = torch.randn(32, 256, generator=g), torch.randn(256, 256, generator=g)
    out["matrix product 32x256 @ 256x256"] = a @ b
    a, b = torch.randn(256, 784, generator=g), torch.randn(784, 1024, generator=g)
    out["matrix product 256x784 @ 784x1024"] = a @ b
    v = torch.randn(1 << 20, generator=g)
    out["sum of 100,000 floats"] = v[:100000].sum()
    out["sum of 1,000 floats"] = v[:1000].sum()
    out["sum of 2^20 floats"] = v.sum()
    out["mean of 100,000 floats"] = v[:100000].mean()
    out["L2 norm of 2^20 floats"] = v.norm()
    m = torch.randn(4096, 256, generator=g)
    out["sum over rows, 4096x256 (a bias gradient)"] = m.sum(0)
    out["sum over columns, 4096x256"] = m.sum(1)
    logits, y = torch.randn(4096, 10, generator=g), torch.randint(0, 10, (4096,), generator=g)
    out["cross entropy, 4096x10"] = F.cross_entropy(logits, y)
    out["MSE, 4096x10"] = F.mse_loss(logits, torch.zeros_like(logits))
    out["softmax, 4096x10"] = logits.softmax(-1)
    out["layer norm, 4096x256"] = F.layer_norm(m, (256,))
    W = torch.randn(256, 784, generator=g, requires_grad=True)
    bias = torch.randn(256, generator=g, requires_grad=True)
    F.linear(torch.randn(64, 784, generator=g), W, bias).relu().sum().backward()
    out["linear 784->256, batch 64: weight gradient"] = W.grad
    out["linear 784->256, batch 64: bias gradient"] = bias.grad
    x = torch.randn(64, 1, 28, 28, generator=g, requires_grad=True)
    w = torch.randn(32, 1, 5, 5, generator=g, requires_grad=True)
    c = F.conv2d(x, w)
    out["conv2d 1->32 5x5, batch 64: forward"] = c.detach()
    c.square().mean().backward()
    out["conv2d: weight gradient"] = w.grad
    out["conv2d: input gradient"] = x.grad
    emb = torch.randn(1000, 64, generator=g, requires_grad=True)
    F.embedding(torch.randint(0, 1000, (4096,), generator=g), emb).sum().backward()
    out["embedding gradient, 4096 lookups"] = emb.grad
    p, grad = torch.randn(1 << 20, generator=g), torch.randn(1 << 20, generator=g)
    m1 = torch.zeros_like(p).mul_(0.9).add_(grad, alpha=0.1)
    m2 = torch.zeros_like(p).mul_(0.999).addcmul_(grad, grad, value=0.001)
    out["Adam's update, elementwise, 2^20"] = p - 1e-3 * m1 / (m2.sqrt() + 1e-8)
    torch.manual_seed(5)
    out["dropout mask, 4096x256"] = F.dropout(m, 0.1, True)
    return out


def part1():
    one = operations(1)
    differ = set()
    for t in (2, 3, 4):
        other = operations(t)
        for k in one:
            if not torch.equal(one[k], other[k]):
                differ.add(k)
                print(f"threads 1 vs {t}: {k}: max difference "
                      f"{(one[k] - other[k]).abs().max().item():.2e}")
    print("the same bits at 1, 2, 3 and 4 threads:", "; ".join(k for k in one if k not in differ))


CONFIG = """
run_dir: {run_dir}
seed: 3
model: {{type: mlp, args: {{sizes: [64, 512, 512, 10], dropout: 0.2}}}}
objective: {{losses: [{{type: cross_entropy}}], regularizers: [{{type: l2, weight: 1.0e-4}}]}}
data:
  train: {{type: csv, args: {{path: /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz, header: false, target: "64"}}}}
  normalize: {{enabled: true}}
  loader: {{batch_size: 32, shuffle: true}}
optimizer: {{type: adamw, lr: 2.0e-3}}
scheduler: {{type: cosine}}
train: {{max_length: 3 epochs, accumulation_steps: 2, log_every: 20 steps}}
"""


def part2(binary):
    tmp = tempfile.mkdtemp(prefix="unitrain-thread-numerics-")
    cfg = os.path.join(tmp, "run.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    weights = {}
    for name, args in [("workers 0, threads 2", ["--data.loader.workers", "0"]),
                       ("workers 2, prefetch 2, threads 2", ["--data.loader.workers", "2",
                                                             "--data.loader.prefetch", "2"]),
                       ("workers 4, prefetch 8, threads 2", ["--data.loader.workers", "4",
                                                             "--data.loader.prefetch", "8"]),
                       ("workers 0, threads 1", ["--data.loader.workers", "0",
                                                 "--train.threads", "1"])]:
        run_dir = os.path.join(tmp, name.replace(" ", "").replace(",", "-"))
        with open(cfg, "w") as f:
            f.write(CONFIG.format(run_dir=run_dir))
        threads = [] if "--train.threads" in args else ["--train.threads", "2"]
        subprocess.run([binary, "train", cfg] + args + threads, check=True, env=env,
                       capture_output=True)
        out = os.path.join(run_dir, "w.pt")
        subprocess.run([binary, "export", os.path.join(run_dir, "config.yaml"), "--checkpoint",
                        "last", "--out", out], check=True, env=env, capture_output=True)
        weights[name] = torch.load(out)
    first = next(iter(weights))
    for name, w in weights.items():
        diff = max((w[k] - weights[first][k]).abs().max().item() for k in w)
        print(f"{name}: {'bitwise equal to' if diff == 0 else f'{diff:.2e} from'} {first}")


if __name__ == "__main__":
    part1()
    if len(sys.argv) > 1:
        part2(os.path.abspath(sys.argv[1]))
