#!/usr/bin/env python3
"""Plain PyTorch (CPU, float32 or float64) training of the seeds of one `normscope train` cell,
one seed after the other (eager loop) and all at once (a `torch.vmap` ensemble).

The dumps are the seeds of one cell (same preset, architecture, optimizer, learning rates and
number of updates; different weights and batches), written by

    for s in 0 1 2 3 4 5 6 7 8 9; do
      normscope train --preset post --depth 12 --width 32 --heads 4 --lr 1e-3 --steps 300 \
          --beta2 0.98 --seeds $s --dump-init dump_$s.json
    done

(format "normscope-train-init-v1", documented in `torch_train_reference.py` and normscope's
`crates/core/src/train/dump.rs`). Two ways of training them, as a competent PyTorch user would:

- `loop`: `torch_train_reference.py`'s model (ordinary `torch.nn` modules) and training loop
  (`train`, imported from that script, not copied), the seeds trained one after the other.
- `vmap`: the per-seed modules (the same builder and weights) stacked with
  `torch.func.stack_module_state`; one seed's loss is `torch.func.functional_call` of the
  model on that seed's batch, and `torch.vmap` maps it over the stacked parameters and the
  stacked batches (seed k trains on dump k's batches), so every update runs all seeds at once.
  Gradients: `--grad backward` (default) backpropagates the sum of the per-seed losses into the
  stacked leaf tensors (the sum's gradient in slice k is seed k's own gradient: the seeds share
  no parameter); `--grad func` uses `torch.vmap(torch.func.grad(loss))` and sets `.grad` by
  hand. One optimizer over the stacked tensors, built by `torch_train_reference.py`'s
  `make_optimizer` (Adam / AdamW / SGD, the single-tensor path, torch's default on CPU, with
  the dump's betas, eps, weight decay and per-update learning rates `lrs`): each is
  elementwise, so it updates every seed's slice as it would update that seed alone. When the
  dump clips, each seed's gradient is clipped by its own total norm (as
  `torch.nn.utils.clip_grad_norm_` computes it: per-tensor 2-norms, their 2-norm, coefficient
  clip / (norm + 1e-6) capped at 1).
  `--compile`: the vmapped loss (and with `--grad backward`, its backward, through
  AOTAutograd) is `torch.compile`d (inductor; on CPU it needs a C++ compiler); the optimizer
  stays eager. The compilation is done by one call (forward and backward) on throwaway copies
  of the stacked parameters before the clock starts: "vmap_seconds" excludes it,
  "compile_seconds" reports that call (far shorter when inductor's on-disk cache already
  holds the kernels, as after a first run).

Usage:

    torch_ensemble.py [--threads T] [--dtype float32|float64] [--mode loop|vmap|both]
                      [--repeats R] [--grad backward|func] [--compile] [--check [--check-steps N]]
                      [--json] DUMP [DUMP ...]

`--dtype` (default float32) is the dtype of the models, the batches and the optimizer state
(float32 rounds every number of the float64 dump to the nearest float32 as it is loaded, as
`torch_train_reference.py` does). `--repeats` (default 3) trains every seed that many times
per mode, from the dump's weights each time.

Output (default, and with `--json`): one JSON object {"torch", "dtype", "threads", "seeds",
"steps", "grad", "compile", "loop_seconds": [...], "vmap_seconds": [...]} (plus
"compile_seconds" with `--compile` and "check" with `--check`), one entry per repeat (the
caller takes the median); a mode not run has an empty list. "loop_seconds" is the sum over the
seeds of the wall time of `torch_train_reference.train`'s training loop (building the model and
loading the JSON are not timed); "vmap_seconds" the wall time of the ensemble's training loop
(stacking the modules and the batches are not timed). Both cover all "steps" updates of all
"seeds" seeds. The loop reads every loss with `.item()` inside its clock, as the reference
does; the ensemble keeps each update's (seeds,) loss tensor and converts them after its clock
stops (on CPU nothing waits on a device either way).

`--check`: the ensemble's per-seed losses against the eager loop's (the first repeat of each;
a mode not asked for is run once for the check). The difference of a loss is
|vmap - loop| / |loop|; it prints (to stderr, lines starting with `#`) and reports under
"check" the largest over the first `--check-steps` updates (default 50) and over all of them.
The two differ only in the order of floating-point sums (batched matrix products, the summed
loss): in float64 the first 50 updates must agree to 1e-10 relative, else the script exits
with status 1; in float32 the difference is reported, not judged (rounding differences grow
as training amplifies them).

Timing: when other work shares the cores, PyTorch's OpenMP threads (which spin at barriers)
can slow down a lot (with `--threads 2` on 2 busy cores, many times over; the environment
variable OMP_WAIT_POLICY=PASSIVE, which makes them sleep instead, limits the damage): time on a
quiet machine, note the load, and repeat.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train_reference as ref  # noqa: E402


def load(path):
    """One dump, its format checked."""
    with open(path) as f:
        dump = json.load(f)
    if dump.get("format") != "normscope-train-init-v1":
        sys.exit(f"{path}: not a normscope-train-init-v1 dump")
    return dump


def same_cell(dumps, paths):
    """Exits unless every dump is a seed of the first one's cell (the ensemble needs one
    architecture, optimizer and learning-rate schedule)."""
    first = dumps[0]
    for d, path in zip(dumps[1:], paths[1:]):
        for key in ("preset", "model", "optimizer", "clip", "lrs"):
            if d[key] != first[key]:
                sys.exit(f"{path}: {key!r} differs from {paths[0]}'s: not a seed of the same cell")
        if len(d["batches"]) != len(first["batches"]):
            sys.exit(f"{path}: {len(d['batches'])} batches, {paths[0]} has {len(first['batches'])}")
        shapes = [(p["layer"], p["name"], p["shape"]) for p in d["params"]]
        if shapes != [(p["layer"], p["name"], p["shape"]) for p in first["params"]]:
            sys.exit(f"{path}: parameters differ from {paths[0]}'s")


def run_loop(dumps):
    """Every seed with `torch_train_reference.train`, one after the other: (per-seed losses,
    the summed seconds of the training loops)."""
    losses, seconds = [], 0.0
    for dump in dumps:
        l, s, _ = ref.train(dump)
        losses.append(l)
        seconds += s
    return losses, seconds


def stacked_batches(dumps):
    """Every update's batch, stacked over the seeds (leading dimension), with the same shapes
    `torch_train_reference.batches` gives one seed: tokens (inputs (S, batch, seq), targets
    (S, batch * seq), weights (S, batch * seq)); vectors (x (S, size, d_in), y (S, size, d_out))."""
    io = dumps[0]["model"]["io"]
    dtype = torch.get_default_dtype()
    out = []
    for step in range(len(dumps[0]["batches"])):
        bs = [d["batches"][step] for d in dumps]
        if io["kind"] == "tokens":
            seq = io["seq"]
            out.append((
                torch.stack([torch.tensor(b["inputs"], dtype=torch.long).view(-1, seq) for b in bs]),
                torch.stack([torch.tensor(b["targets"], dtype=torch.long) for b in bs]),
                torch.stack([torch.tensor(b["weights"], dtype=dtype) for b in bs]),
            ))
        else:
            def cols(b, key):
                return torch.tensor(b[key], dtype=dtype).view(-1, b["size"]).T.contiguous()
            out.append((torch.stack([cols(b, "x") for b in bs]), torch.stack([cols(b, "y") for b in bs])))
    return out


def seed_loss_fn(base, io_kind):
    """One seed's loss as a function of its parameters and its batch (the loss of
    `torch_train_reference.batches`), for `torch.vmap`."""
    if io_kind == "tokens":
        def loss(params, inputs, targets, weights):
            f = torch.func.functional_call(base, params, (inputs,))
            ce = F.cross_entropy(f.reshape(targets.numel(), -1), targets, reduction="none")
            return (weights * ce).sum() / weights.sum()
    else:
        def loss(params, x, y):
            return F.mse_loss(torch.func.functional_call(base, params, (x,)), y)
    return loss


def clip_per_seed(grads, clip):
    """Scales each seed's slice of the stacked gradients by clip_grad_norm_'s coefficient for
    that seed's own total norm."""
    seeds = grads[0].shape[0]
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(seeds, -1), dim=1) for g in grads])
    total = torch.linalg.vector_norm(norms, dim=0)
    coef = (clip / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view((seeds,) + (1,) * (g.dim() - 1)))


class Ensemble:
    """The seeds' modules stacked for `torch.vmap`; `run()` trains a fresh copy of the stacked
    weights and returns (per-seed losses, seconds of the training loop)."""

    def __init__(self, dumps, grad, compile_):
        self.dumps, self.grad, self.compile = dumps, grad, compile_
        first = dumps[0]
        model0, ordered = ref.build(first)
        if list(model0.buffers()):
            raise ValueError("the model has buffers; the ensemble stacks parameters only")
        # (name, decay flag) in the dump's order, as torch_train_reference.build lists them.
        names = {id(t): n for n, t in model0.named_parameters()}
        self.order = [(names[id(t)], decay) for t, decay in ordered]
        self.base = model0.to("meta")
        self.data = stacked_batches(dumps)
        loss = seed_loss_fn(self.base, first["model"]["io"]["kind"])
        if grad == "backward":
            self.step_fn = torch.vmap(loss)
        else:
            self.step_fn = torch.vmap(torch.func.grad(lambda *a: (loss(*a),) * 2, has_aux=True))
        self.compile_seconds = None
        if compile_:
            self.step_fn = torch.compile(self.step_fn)
            warm = self.fresh_params()
            start = time.perf_counter()
            out = self.step_fn(warm, *self.data[0])
            if grad == "backward":
                out.sum().backward()
            self.compile_seconds = time.perf_counter() - start

    def fresh_params(self):
        """The stacked initial weights (new leaf tensors, requires_grad)."""
        models = [ref.build(d)[0] for d in self.dumps]
        params, buffers = torch.func.stack_module_state(models)
        return params

    def run(self):
        params = self.fresh_params()
        opt = ref.make_optimizer(self.dumps[0]["optimizer"], [(params[n], decay) for n, decay in self.order])
        tensors = [params[n] for n, _ in self.order]
        clip = self.dumps[0]["clip"]
        losses = []
        start = time.perf_counter()
        for lr, batch in zip(self.dumps[0]["lrs"], self.data):
            for g in opt.param_groups:
                g["lr"] = lr
            if self.grad == "backward":
                opt.zero_grad(set_to_none=True)
                loss = self.step_fn(params, *batch)
                loss.sum().backward()
            else:
                grads, loss = self.step_fn(params, *batch)
                for n, t in params.items():
                    t.grad = grads[n]
            if clip is not None:
                clip_per_seed([t.grad for t in tensors], clip)
            opt.step()
            losses.append(loss.detach())
        seconds = time.perf_counter() - start
        return torch.stack(losses).T.tolist(), seconds


def max_rel(a, b, steps):
    """The largest |a - b| / |b| over the seeds' first `steps` losses, with where it is."""
    worst = (0.0, None, None)
    for k, (la, lb) in enumerate(zip(a, b)):
        for s, (x, y) in enumerate(zip(la[:steps], lb[:steps]), start=1):
            d = abs(x - y) / abs(y) if y != 0 else abs(x - y)
            if d > worst[0] or worst[1] is None:
                worst = (d, k, s)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dumps", nargs="+", help="normscope train --dump-init files, the seeds of one cell")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                    help="dtype of the models, batches and optimizer state (default float32)")
    ap.add_argument("--mode", choices=["loop", "vmap", "both"], default="both")
    ap.add_argument("--repeats", type=int, default=3, help="timed trainings per mode (default 3)")
    ap.add_argument("--grad", choices=["backward", "func"], default="backward",
                    help="ensemble gradients: .backward() of the summed losses, or vmap(func.grad)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the vmapped loss (off by default)")
    ap.add_argument("--check", action="store_true", help="compare the ensemble's losses with the loop's")
    ap.add_argument("--check-steps", type=int, default=50, help="updates the float64 check judges (default 50)")
    ap.add_argument("--json", action="store_true", help="one JSON object (the default output)")
    a = ap.parse_args()
    torch.set_default_dtype(getattr(torch, a.dtype))
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    dumps = [load(p) for p in a.dumps]
    same_cell(dumps, a.dumps)

    out = {"torch": torch.__version__, "dtype": a.dtype, "threads": torch.get_num_threads(),
           "seeds": len(dumps), "steps": len(dumps[0]["lrs"]), "grad": a.grad, "compile": a.compile,
           "loop_seconds": [], "vmap_seconds": []}
    loop_losses = vmap_losses = None
    if a.mode in ("loop", "both") or a.check:
        for r in range(a.repeats if a.mode in ("loop", "both") else 1):
            losses, seconds = run_loop(dumps)
            loop_losses = loop_losses or losses
            if a.mode in ("loop", "both"):
                out["loop_seconds"].append(seconds)
    if a.mode in ("vmap", "both") or a.check:
        ens = Ensemble(dumps, a.grad, a.compile)
        if a.compile:
            out["compile_seconds"] = ens.compile_seconds
        for r in range(a.repeats if a.mode in ("vmap", "both") else 1):
            losses, seconds = ens.run()
            vmap_losses = vmap_losses or losses
            if a.mode in ("vmap", "both"):
                out["vmap_seconds"].append(seconds)
    failed = False
    if a.check:
        first, k1, s1 = max_rel(vmap_losses, loop_losses, a.check_steps)
        whole, k2, s2 = max_rel(vmap_losses, loop_losses, len(loop_losses[0]))
        bound = 1e-10 if a.dtype == "float64" else None
        failed = bound is not None and not first <= bound
        out["check"] = {"steps": min(a.check_steps, len(loop_losses[0])), "max_rel": first,
                        "max_rel_all": whole, "bound": bound, "ok": not failed}
        print(f"# check {a.dtype}: max relative difference of the losses, vmap vs loop: "
              f"{first:.3e} over the first {out['check']['steps']} updates (seed index {k1}, update {s1}), "
              f"{whole:.3e} over all {len(loop_losses[0])} (seed index {k2}, update {s2})"
              + (f"; bound {bound:g}: {'ok' if not failed else 'FAILED'}" if bound is not None else ""),
              file=sys.stderr)
    print(json.dumps(out))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
