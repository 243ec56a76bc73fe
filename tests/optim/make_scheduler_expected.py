#!/usr/bin/python3
"""Writes scheduler_expected.json: the learning rate PyTorch 1.13 uses at each optimizer step.

Run with /usr/bin/python3 (torch 1.13): `/usr/bin/python3 tests/optim/make_scheduler_expected.py`.
transformers is not installed, so its get_*_schedule_with_warmup lambdas are written out below
from their published definitions (transformers/optimization.py) and fed to LambdaLR, exactly as
transformers does. `lr[i]` is the lr of the i-th optimizer step, i.e. after i scheduler steps.
Each case's `args` is the unitrain `scheduler.args` section that should reproduce it.
"""
import json
import math
import os

import torch
from torch.optim import lr_scheduler as S

BASE_LR = 0.1
STEPS = 60


# --- transformers' schedules (published definitions) ---------------------------------------
def constant_with_warmup(num_warmup_steps):
    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1.0, num_warmup_steps))
        return 1.0
    return f


def linear_with_warmup(num_warmup_steps, num_training_steps):
    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - step) /
                   float(max(1, num_training_steps - num_warmup_steps)))
    return f


def linear_with_warmup_min_ratio(num_warmup_steps, num_training_steps, min_lr_ratio):
    # unitrain's extension: the linear decay ends at min_lr_ratio instead of 0.
    base = linear_with_warmup(num_warmup_steps, num_training_steps)

    def f(step):
        if step < num_warmup_steps:
            return base(step)
        return min_lr_ratio + (1.0 - min_lr_ratio) * base(step)
    return f


def cosine_with_warmup(num_warmup_steps, num_training_steps, num_cycles=0.5):
    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
    return f


def cosine_with_min_lr_with_warmup(num_warmup_steps, num_training_steps, num_cycles, min_lr_rate):
    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress))
        factor = factor * (1 - min_lr_rate) + min_lr_rate
        return max(0, factor)
    return f


def cosine_with_hard_restarts_with_warmup(num_warmup_steps, num_training_steps, num_cycles=1):
    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        if progress >= 1.0:
            return 0.0
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))
    return f


def polynomial_decay_with_warmup(lr_init, num_warmup_steps, num_training_steps, lr_end=1e-7,
                                 power=1.0):
    assert lr_init > lr_end

    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        elif step > num_training_steps:
            return lr_end / lr_init
        else:
            lr_range = lr_init - lr_end
            decay_steps = num_training_steps - num_warmup_steps
            pct_remaining = 1 - (step - num_warmup_steps) / decay_steps
            decay = lr_range * pct_remaining**power + lr_end
            return decay / lr_init
    return f


def inverse_sqrt(num_warmup_steps, timescale=None):
    if timescale is None:
        timescale = num_warmup_steps or 10_000

    def f(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        shift = timescale - num_warmup_steps
        return 1.0 / math.sqrt((step + shift) / timescale)
    return f


# --- running a PyTorch scheduler ------------------------------------------------------------
def fresh_optimizer():
    p = torch.nn.Parameter(torch.zeros(1))
    return torch.optim.SGD([p], lr=BASE_LR)


def run(make_scheduler, metrics=None):
    opt = fresh_optimizer()
    sched = make_scheduler(opt)
    lrs = []
    for i in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
    return lrs


def lambda_case(fn):
    return lambda opt: S.LambdaLR(opt, fn)


def plateau_metrics():
    # Falls, stalls, improves a little (below and above the threshold), stalls again.
    seq = [1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.79995, 0.8, 0.7, 0.7, 0.7, 0.7, 0.7, 0.6]
    while len(seq) < STEPS:
        seq.append(0.6 + 0.01 * (len(seq) % 3))
    return seq


def cases():
    out = []

    def add(name, type_, args, make, total_steps=STEPS, metrics=None):
        out.append({"name": name, "type": type_, "args": args, "total_steps": total_steps,
                    "metrics": metrics, "lr": run(make, metrics)})

    add("constant", "constant", {}, lambda_case(constant_with_warmup(0)))
    add("constant_warmup", "constant", {"warmup": "10 steps"},
        lambda_case(constant_with_warmup(10)))
    add("step", "step", {"step_size": "7 steps", "gamma": 0.5},
        lambda o: S.StepLR(o, step_size=7, gamma=0.5))
    add("multistep", "multistep", {"milestones": [10, 25, 40], "gamma": 0.3},
        lambda o: S.MultiStepLR(o, milestones=[10, 25, 40], gamma=0.3))
    add("exponential", "exponential", {"gamma": 0.95}, lambda o: S.ExponentialLR(o, gamma=0.95))
    add("linear", "linear", {"warmup": "10 steps", "total": "50 steps"},
        lambda_case(linear_with_warmup(10, 50)))
    add("linear_whole_run", "linear", {"warmup": "5 steps"},
        lambda_case(linear_with_warmup(5, STEPS)))
    add("linear_min_lr", "linear", {"warmup": "10 steps", "min_lr_ratio": 0.1},
        lambda_case(linear_with_warmup_min_ratio(10, STEPS, 0.1)))
    add("cosine", "cosine", {"warmup": "10 steps"}, lambda_case(cosine_with_warmup(10, STEPS)))
    add("cosine_cycles", "cosine", {"warmup": "6 steps", "total": "50 steps", "num_cycles": 1.25},
        lambda_case(cosine_with_warmup(6, 50, 1.25)))
    add("cosine_min_lr", "cosine", {"warmup": "10 steps", "total": "50 steps", "min_lr_ratio": 0.1},
        lambda_case(cosine_with_min_lr_with_warmup(10, 50, 0.5, 0.1)))
    add("cosine_restarts", "cosine_restarts", {"warmup": "5 steps", "total": "55 steps",
                                               "cycles": 3},
        lambda_case(cosine_with_hard_restarts_with_warmup(5, 55, 3)))
    add("polynomial", "polynomial", {"warmup": "10 steps", "total": "50 steps", "power": 2.0,
                                     "lr_end": 1e-4},
        lambda_case(polynomial_decay_with_warmup(BASE_LR, 10, 50, 1e-4, 2.0)))
    add("polynomial_default", "polynomial", {},
        lambda_case(polynomial_decay_with_warmup(BASE_LR, 0, STEPS)))
    add("inverse_sqrt", "inverse_sqrt", {"warmup": "10 steps"},
        lambda_case(inverse_sqrt(10)))
    add("inverse_sqrt_no_warmup", "inverse_sqrt", {}, lambda_case(inverse_sqrt(0)))
    add("inverse_sqrt_timescale", "inverse_sqrt", {"warmup": "4 steps", "timescale": "20 steps"},
        lambda_case(inverse_sqrt(4, 20)))
    # OneCycleLR with base lr = max_lr; unitrain scales the lr only (cycle_momentum=False).
    add("one_cycle", "one_cycle", {},
        lambda o: S.OneCycleLR(o, max_lr=BASE_LR, total_steps=STEPS, cycle_momentum=False))
    add("one_cycle_three_phase", "one_cycle",
        {"pct_start": 0.25, "div_factor": 10.0, "final_div_factor": 100.0, "anneal": "linear",
         "three_phase": True},
        lambda o: S.OneCycleLR(o, max_lr=BASE_LR, total_steps=STEPS, pct_start=0.25,
                               div_factor=10.0, final_div_factor=100.0, anneal_strategy="linear",
                               three_phase=True, cycle_momentum=False))
    add("cosine_annealing", "cosine_annealing", {"t_max": "20 steps", "eta_min_ratio": 0.1},
        lambda o: S.CosineAnnealingLR(o, T_max=20, eta_min=0.1 * BASE_LR))
    add("cosine_annealing_whole_run", "cosine_annealing", {},
        lambda o: S.CosineAnnealingLR(o, T_max=STEPS))
    m = plateau_metrics()
    add("reduce_on_plateau", "reduce_on_plateau",
        {"factor": 0.5, "patience": 2, "cooldown": 1, "min_lr": 0.01},
        lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2, cooldown=1,
                                      min_lr=0.01), metrics=m)
    add("reduce_on_plateau_max_abs", "reduce_on_plateau",
        {"mode": "max", "factor": 0.7, "patience": 1, "threshold": 0.05, "threshold_mode": "abs",
         "min_lr_ratio": 0.2},
        lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.7, patience=1, threshold=0.05,
                                      threshold_mode="abs", min_lr=0.2 * BASE_LR),
        metrics=[-x for x in m])
    return out


def main():
    result = {"torch": torch.__version__, "base_lr": BASE_LR, "steps": STEPS, "cases": cases()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scheduler_expected.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("wrote", path, len(result["cases"]), "cases")


if __name__ == "__main__":
    main()
