#!/usr/bin/env python3
"""PyTorch's norms (float64, CPU) on the inputs `tests/it/norms_torch.rs` gives, for the check
of normscope's norm kernels (`crates/core/src/norms/`).

Input (JSON file, first argument): {"d", "sequences", "seq", "groups", "alpha", "z", "g"}, with
`z` and `g` as d lists of n = sequences * seq numbers (normscope's d x n matrices, column
`s * seq + t` holding token t of sequence s). Each is laid out as PyTorch's (N, C, L) =
(sequences, d, seq) and run through

    torch.nn.BatchNorm1d(d)            training mode (batch statistics; running stats updated)
    torch.nn.InstanceNorm1d(d)         defaults: affine=False, track_running_stats=False
    torch.nn.GroupNorm(groups, d)      defaults: affine=True (weight 1, bias 0)
    DyT: weight * tanh(alpha * x) + bias, alpha a scalar parameter, weight 1, bias 0
         (github.com/jiachenzhu/DyT, dynamic_tanh.py)

all with their default eps (1e-5). For each: the output y and the input gradient of
<g, y> (PyTorch's autograd), as d lists of n numbers; BatchNorm also gives its running_mean
and running_var after the step, DyT the gradient of alpha.

Output (stdout): one JSON object {"torch": version, "batch": {...}, "instance": {...},
"group": {...}, "dyt": {...}}.
"""
import json
import sys

import torch

torch.set_default_dtype(torch.float64)


def to_ncl(m, d, sequences, seq):
    return torch.tensor(m).reshape(d, sequences, seq).permute(1, 0, 2).contiguous()


def to_dn(t, d):
    return t.permute(1, 0, 2).reshape(d, -1).tolist()


def run(module, x, g, d, extra=()):
    x = x.clone().requires_grad_(True)
    y = module(x)
    (y * g).sum().backward()
    out = {"y": to_dn(y.detach(), d), "dz": to_dn(x.grad, d)}
    for name, value in extra:
        out[name] = value()
    return out


def main():
    with open(sys.argv[1]) as f:
        inp = json.load(f)
    d, sequences, seq = inp["d"], inp["sequences"], inp["seq"]
    x = to_ncl(inp["z"], d, sequences, seq)
    g = to_ncl(inp["g"], d, sequences, seq)

    bn = torch.nn.BatchNorm1d(d)
    bn.train()
    batch = run(bn, x, g, d, [("running_mean", lambda: bn.running_mean.tolist()),
                              ("running_var", lambda: bn.running_var.tolist())])
    instance = run(torch.nn.InstanceNorm1d(d), x, g, d)
    group = run(torch.nn.GroupNorm(inp["groups"], d), x, g, d)

    alpha = torch.nn.Parameter(torch.ones(1) * inp["alpha"])
    weight = torch.ones(d, 1)
    bias = torch.zeros(d, 1)
    dyt = run(lambda t: weight * torch.tanh(alpha * t) + bias, x, g, d,
              [("alpha_grad", lambda: alpha.grad.item())])

    json.dump({"torch": torch.__version__, "batch": batch, "instance": instance,
               "group": group, "dyt": dyt}, sys.stdout)


if __name__ == "__main__":
    main()
