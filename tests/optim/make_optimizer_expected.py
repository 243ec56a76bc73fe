#!/usr/bin/python3
"""Writes optimizer_expected.json: parameters after each step of each optimizer, by PyTorch 1.13.

Run with /usr/bin/python3 (torch 1.13): `/usr/bin/python3 tests/optim/make_optimizer_expected.py`.
The problem is fixed (constants below, float64): a linear layer `weight` (3x4), `bias` (3) and a
1-d `scale` (3), loss = mean((X @ (weight * scale[:, None]).T + bias - Y)^2) + 0.05 * sum(weight^4).
Each case's `section` is the unitrain `optimizer` section that should reproduce it; with
`no_decay_bias_norm: true` the bias and the 1-d scale go to a second group with weight_decay 0.
"""
import json
import os

import torch

STEPS = 4

WEIGHT = [[0.5, -0.3, 0.8, 0.1], [-0.6, 0.2, 0.4, -0.9], [0.3, 0.7, -0.2, 0.5]]
BIAS = [0.1, -0.2, 0.3]
SCALE = [1.0, 0.9, 1.1]
X = [[1.0, 0.5, -1.0, 2.0], [0.3, -0.7, 0.8, 0.1], [-1.2, 0.4, 0.6, -0.5],
     [0.9, 1.1, -0.3, 0.2], [0.0, -0.4, 1.5, 0.7]]
Y = [[1.0, 0.0, -1.0], [0.5, 0.2, 0.1], [-0.3, 0.8, 0.4], [0.2, -0.6, 1.0], [0.7, 0.3, -0.2]]


def loss_fn(weight, bias, scale):
    x = torch.tensor(X, dtype=torch.float64)
    y = torch.tensor(Y, dtype=torch.float64)
    w = weight * scale[:, None]
    return ((x @ w.t() + bias - y) ** 2).mean() + 0.05 * (weight ** 4).sum()


def make(type_, params, groups, lr, args):
    a = dict(args)
    if type_ == "sgd":
        return torch.optim.SGD(groups, lr=lr, **a)
    if type_ in ("adam", "adamw"):
        if "betas" in a:
            a["betas"] = tuple(a["betas"])
        cls = torch.optim.Adam if type_ == "adam" else torch.optim.AdamW
        return cls(groups, lr=lr, **a)
    if type_ == "adagrad":
        return torch.optim.Adagrad(groups, lr=lr, **a)
    if type_ == "rmsprop":
        return torch.optim.RMSprop(groups, lr=lr, **a)
    if type_ == "lbfgs":
        if a.get("line_search_fn") == "none":
            a["line_search_fn"] = None
        return torch.optim.LBFGS(params, lr=lr, **a)
    raise ValueError(type_)


def run(section):
    weight = torch.tensor(WEIGHT, dtype=torch.float64, requires_grad=True)
    bias = torch.tensor(BIAS, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor(SCALE, dtype=torch.float64, requires_grad=True)
    params = [weight, bias, scale]
    args = section.get("args", {})
    if section.get("no_decay_bias_norm"):
        groups = [{"params": [weight]}, {"params": [bias, scale], "weight_decay": 0.0}]
    else:
        groups = [{"params": params}]
    opt = make(section["type"], params, groups, section["lr"], args)

    def closure():
        opt.zero_grad()
        loss = loss_fn(weight, bias, scale)
        loss.backward()
        return loss

    history = []
    for _ in range(STEPS):
        opt.step(closure)
        history.append({"weight": weight.detach().tolist(), "bias": bias.detach().tolist(),
                        "scale": scale.detach().tolist()})
    return history


CASES = [
    ("sgd_momentum", {"type": "sgd", "lr": 0.05,
                      "args": {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}}),
    ("sgd_nesterov", {"type": "sgd", "lr": 0.05, "args": {"momentum": 0.8, "nesterov": True}}),
    ("sgd_no_decay", {"type": "sgd", "lr": 0.05, "no_decay_bias_norm": True,
                      "args": {"weight_decay": 0.5}}),
    ("adam", {"type": "adam", "lr": 0.01,
              "args": {"betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}}),
    ("adamw", {"type": "adamw", "lr": 0.02, "args": {"betas": [0.85, 0.995], "weight_decay": 0.05}}),
    ("adamw_defaults", {"type": "adamw", "lr": 0.02}),
    ("adamw_no_decay", {"type": "adamw", "lr": 0.02, "no_decay_bias_norm": True,
                        "args": {"weight_decay": 0.3, "amsgrad": True}}),
    ("adagrad", {"type": "adagrad", "lr": 0.1,
                 "args": {"lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1,
                          "eps": 1e-8}}),
    ("rmsprop", {"type": "rmsprop", "lr": 0.01,
                 "args": {"alpha": 0.9, "eps": 1e-6, "weight_decay": 0.05, "momentum": 0.5,
                          "centered": True}}),
    ("rmsprop_plain", {"type": "rmsprop", "lr": 0.01, "args": {"alpha": 0.95}}),
    ("lbfgs", {"type": "lbfgs", "lr": 0.5, "args": {"max_iter": 5, "history_size": 3}}),
    ("lbfgs_strong_wolfe", {"type": "lbfgs", "lr": 1.0,
                            "args": {"max_iter": 6, "max_eval": 10, "history_size": 4,
                                     "tolerance_grad": 1e-9, "tolerance_change": 1e-11,
                                     "line_search_fn": "strong_wolfe"}}),
]


def main():
    cases = [{"name": n, "section": s, "params": run(s)} for n, s in CASES]
    result = {"torch": torch.__version__, "steps": STEPS,
              "initial": {"weight": WEIGHT, "bias": BIAS, "scale": SCALE}, "x": X, "y": Y,
              "cases": cases}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer_expected.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("wrote", path, len(cases), "cases")


if __name__ == "__main__":
    main()
