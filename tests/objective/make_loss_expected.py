#!/usr/bin/env python3
"""Writes loss_expected.json: unitrain's losses and regularizers computed by PyTorch 1.13.

Run with the system Python that has torch 1.13:  /usr/bin/python3 make_loss_expected.py
Each case stores its inputs (float32 values, exact in JSON), the loss args, the expected value
and the gradient of the loss with respect to the prediction. Sequence cases are computed with
PyTorch's own [B, C, T] layout so they check unitrain's [B, T, C] flattening independently.
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(1234)


def tensor_json(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "data": t.flatten().tolist()}


def case(name, kind, type_, args, pred, target, fn):
    pred = pred.detach().clone().requires_grad_(True)
    value = fn(pred, target)
    value.backward()
    return {"name": name, "kind": kind, "type": type_, "args": args,
            "pred": tensor_json(pred.detach()), "target": tensor_json(target),
            "expected": value.item(), "grad": pred.grad.flatten().tolist()}


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


cases = []
logits = randn(4, 5)
y = torch.tensor([0, 3, 4, 1])
cases.append(case("ce_basic", "loss", "cross_entropy", {}, logits, y,
                  lambda p, t: F.cross_entropy(p, t)))
cases.append(case("ce_smoothing", "loss", "cross_entropy", {"label_smoothing": 0.1}, logits, y,
                  lambda p, t: F.cross_entropy(p, t, label_smoothing=0.1)))
y_ign = torch.tensor([0, -100, 4, -100])
cases.append(case("ce_ignore_smoothing", "loss", "cross_entropy", {"label_smoothing": 0.2},
                  logits, y_ign, lambda p, t: F.cross_entropy(p, t, label_smoothing=0.2)))
cases.append(case("ce_custom_ignore", "loss", "cross_entropy", {"ignore_index": 3}, logits, y,
                  lambda p, t: F.cross_entropy(p, t, ignore_index=3)))
cases.append(case("ce_float_class_indices", "loss", "cross_entropy", {}, logits,
                  y.to(torch.float32), lambda p, t: F.cross_entropy(p, t.long())))
cases.append(case("ce_column_target", "loss", "cross_entropy", {}, logits, y.view(4, 1),
                  lambda p, t: F.cross_entropy(p, t.view(4))))
probs = torch.softmax(randn(4, 5), dim=1)
cases.append(case("ce_probabilities", "loss", "cross_entropy", {}, logits, probs,
                  lambda p, t: F.cross_entropy(p, t)))
seq = randn(2, 3, 6)  # [B, T, V]
tok = torch.tensor([[1, 5, -100], [0, 2, 2]])
cases.append(case("ce_sequence", "loss", "cross_entropy", {}, seq, tok,
                  lambda p, t: F.cross_entropy(p.permute(0, 2, 1), t)))
cases.append(case("ce_sequence_smoothing", "loss", "cross_entropy", {"label_smoothing": 0.1},
                  seq, tok,
                  lambda p, t: F.cross_entropy(p.permute(0, 2, 1), t, label_smoothing=0.1)))
logp = torch.log_softmax(randn(4, 5), dim=1)
cases.append(case("nll_basic", "loss", "nll", {}, logp, y, lambda p, t: F.nll_loss(p, t)))
cases.append(case("nll_sequence", "loss", "nll", {}, torch.log_softmax(seq, -1), tok,
                  lambda p, t: F.nll_loss(p.permute(0, 2, 1), t)))

pred = randn(4, 3)
target = randn(4, 3)
cases.append(case("mse_basic", "loss", "mse", {}, pred, target, F.mse_loss))
col = randn(5, 1)
vec = randn(5)
cases.append(case("mse_column_vs_vector", "loss", "mse", {}, col, vec,
                  lambda p, t: F.mse_loss(p.view(5), t)))
cases.append(case("mse_integer_target", "loss", "mse", {}, randn(4), torch.tensor([1, 0, 2, 3]),
                  lambda p, t: F.mse_loss(p, t.float())))
cases.append(case("l1_basic", "loss", "l1", {}, pred, target, F.l1_loss))
wide = 3 * randn(4, 3)
cases.append(case("smooth_l1_default", "loss", "smooth_l1", {}, wide, target,
                  lambda p, t: F.smooth_l1_loss(p, t)))
cases.append(case("smooth_l1_beta", "loss", "smooth_l1", {"beta": 0.5}, wide, target,
                  lambda p, t: F.smooth_l1_loss(p, t, beta=0.5)))
cases.append(case("smooth_l1_beta0", "loss", "smooth_l1", {"beta": 0.0}, wide, target,
                  lambda p, t: F.smooth_l1_loss(p, t, beta=0.0)))
bin_logits = randn(6, 1)
bin_y = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
cases.append(case("bce_basic", "loss", "bce_with_logits", {}, bin_logits, bin_y,
                  lambda p, t: F.binary_cross_entropy_with_logits(p.view(6), t)))
cases.append(case("bce_pos_weight", "loss", "bce_with_logits", {"pos_weight": 2.5}, bin_logits,
                  bin_y, lambda p, t: F.binary_cross_entropy_with_logits(
                      p.view(6), t, pos_weight=torch.tensor(2.5))))

# Regularizers over two tensors: the 'pred' holds both, concatenated; 'target' gives the split.
w1, w2 = randn(3, 4), randn(4)
both = torch.cat([w1.flatten(), w2])
split = torch.tensor([12, 4])
cases.append(case("reg_l1", "regularizer", "l1", {}, both, split,
                  lambda p, t: p[:12].view(3, 4).abs().sum() + p[12:].abs().sum()))
cases.append(case("reg_l2", "regularizer", "l2", {}, both, split,
                  lambda p, t: 0.5 * (p[:12].view(3, 4).pow(2).sum() + p[12:].pow(2).sum())))

# Distillation (after the other cases: their random draws stay as they were). The reference is
# Hinton's term as written with PyTorch's functional kl_div on [N, C] rows.
def distill(temperature):
    def fn(p, t):
        c = p.shape[-1]
        s, q = p.reshape(-1, c) / temperature, t.reshape(-1, c) / temperature
        return F.kl_div(F.log_softmax(s, dim=1), F.softmax(q, dim=1),
                        reduction="batchmean") * temperature * temperature
    return fn


student, teacher = randn(4, 5), 2 * randn(4, 5)
cases.append(case("kl_div_t1", "loss", "kl_div", {}, student, teacher, distill(1.0)))
cases.append(case("kl_div_t4", "loss", "kl_div", {"temperature": 4}, student, teacher,
                  distill(4.0)))
cases.append(case("kl_div_sequence_t2", "loss", "kl_div", {"temperature": 2}, seq,
                  randn(2, 3, 6), distill(2.0)))
# A confident teacher (probabilities that underflow in float32 at T = 1).
sharp = randn(3, 4) * 60
cases.append(case("kl_div_confident_teacher", "loss", "kl_div", {}, randn(3, 4), sharp,
                  distill(1.0)))
cases.append(case("kl_div_confident_teacher_t4", "loss", "kl_div", {"temperature": 4.0},
                  randn(3, 4), sharp, distill(4.0)))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss_expected.json")
with open(path, "w") as f:  # one case per line: readable diffs
    f.write('{"torch_version": %s, "cases": [\n' % json.dumps(torch.__version__))
    f.write(",\n".join(json.dumps(c) for c in cases))
    f.write("\n]}\n")
print(f"wrote {len(cases)} cases to {path}")
