#!/usr/bin/env python3
"""Plain PyTorch (eager, CPU, autograd) version of normscope's reference workload.

What a user would otherwise write: presets pre, post, deepnorm; ReLU-MLP branches with hidden
ratio 4; d = 512 width, n = 128 tokens, L = 32 blocks, 8 networks per preset; a forward pass
that records per-layer stream statistics (||x_l||^2, token correlation) and the per-token
decomposition x_l = sum_j C_lj B_j (coefficients and branch weights), then one backward pass
for a random output gradient giving grad_sq (per layer) and weight_grad_sq (last matrix of
every block). float64 (default) or float32 (--dtype), Xavier-normal weights, LayerNorm without
affine, eps = 1e-5.

Usage: torch_reference.py --threads T [--dtype float64|float32]
                          [--width 512 --tokens 128 --depth 32 --samples 8]
Prints one JSON line: {"seconds": ..., "flops": ..., "torch": version, "threads": T,
"dtype": ...}.
"""
import argparse
import json
import math
import time

import torch


def layer_norm(z, eps):
    zc = z - z.mean(dim=-1, keepdim=True)
    inv = torch.rsqrt((zc * zc).mean(dim=-1, keepdim=True) + eps)
    return zc * inv, inv


def network(preset, d, n, depth, ratio, gen, eps, dtype):
    h = ratio * d
    alpha, beta = 1.0, 1.0
    if preset == "deepnorm":
        alpha, beta = depth ** 0.25, (4 * depth) ** -0.25
    std1 = math.sqrt(2.0 / (d + h)) * beta
    ws = []
    for _ in range(depth):
        w1 = (torch.randn(h, d, generator=gen, dtype=dtype) * std1).requires_grad_()
        w2 = (torch.randn(d, h, generator=gen, dtype=dtype) * std1).requires_grad_()
        ws.append((w1, w2))
    x = torch.randn(n, d, generator=gen, dtype=dtype)
    stats = []
    xs = [x.requires_grad_()]
    coef = torch.ones(n, 1, dtype=dtype)                  # C_{l,j} per token (n x sources)
    sq = [(x.detach() ** 2).sum(-1)]                        # |B_j|^2 per token
    for l in range(depth):
        w1, w2 = ws[l]
        xp = xs[-1]
        u, _ = layer_norm(xp, eps) if preset == "pre" else (xp, None)
        b = torch.relu(u @ w1.T) @ w2.T
        z = alpha * xp + b
        if preset == "pre":
            x = z
            coef = torch.cat([coef, torch.ones(n, 1, dtype=dtype)], 1)
        else:
            x, inv = layer_norm(z, eps)
            inv = inv.detach()
            coef = torch.cat([coef * alpha, torch.ones(n, 1, dtype=dtype)], 1) * inv
        x.retain_grad()
        xs.append(x)
        with torch.no_grad():
            bd = b.detach()
            sq.append((bd ** 2).sum(-1))
            e = (x.detach() ** 2).sum()
            s = x.detach().sum(0)
            corr = ((s * s).sum() - e) / ((n - 1) * e)
            weights = (coef ** 2 * torch.stack(sq, 1)).sum(0) / e
            stats.append((e / (n * d), corr, coef.mean(0), weights))
    out = layer_norm(xs[-1], eps)[0] if preset == "pre" else xs[-1]
    g = torch.randn(n, d, generator=gen, dtype=dtype)
    (out * g).sum().backward()
    grad_sq = [float((x.grad ** 2).sum() / (n * d)) for x in xs[1:]]
    wgrad = [float((w2.grad ** 2).sum() / (n * d * d)) for _, w2 in ws]
    return stats, grad_sq, wgrad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--depth", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    ratio = 4
    dtype = getattr(torch, a.dtype)
    t0 = time.perf_counter()
    for preset in ["pre", "post", "deepnorm"]:
        for _ in range(a.samples):
            network(preset, a.width, a.tokens, a.depth, ratio, gen, 1e-5, dtype)
    secs = time.perf_counter() - t0
    flops = 3 * a.samples * a.depth * 12 * ratio * a.width ** 2 * a.tokens
    print(json.dumps({"seconds": secs, "flops": flops, "torch": torch.__version__, "threads": a.threads,
                      "dtype": a.dtype}))


if __name__ == "__main__":
    main()
