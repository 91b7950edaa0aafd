#!/usr/bin/env python3
"""Plain PyTorch (eager, CPU, float64 or float32) training of the network a `normscope train` run trains.

normscope writes one run's initial weights, architecture, optimizer, per-update learning rates
and every batch with

    normscope train --preset pre --branch transformer --task teacher-lm --depth 4 --width 32 \
        --heads 4 --batch 8 --seq 16 --steps 60 --seeds 0 --dump-init run.json

This script builds the same model from ordinary `torch.nn` modules, loads those weights, feeds
the same batches in the same order, trains with `torch.optim.Adam` / `AdamW` / `SGD` (and
`torch.nn.utils.clip_grad_norm_` when the run clips) and prints the training loss of every
update, the loss of update s's batch *before* update s, as normscope logs `train_loss`
(`normscope train --log-every 1`). `tests/it/train_torch.rs` compares the two curves;
`normscope-bench --train` times this script against normscope.

Usage:

    torch_train_reference.py [--threads T] [--dtype float64|float32] [--json | --bench] DUMP [DUMP ...]

`--dtype` (default float64) is the dtype of the model, the batches and the optimizer state;
with float32 every number of the (float64) dump is rounded to the nearest float32 as it is
loaded, as `normscope train --precision f32` rounds the same draws, so the two start from the
same weights (`normscope-bench --train` times both dtypes).

Default output: comment lines starting with `#` (the torch version, then one per dump), and
one line `step loss` per update, the loss printed with `repr` (the shortest digits that read
back as the same double, at most 17 significant).
`--json`: one JSON object {"torch", "dtype", "threads", "runs": [{"preset", "seed", "steps",
"seconds", "losses", "evals": [[update, evaluation loss], ...]}], "seconds", "steps"}: the
evaluation loss over the dump's evaluation batches in `model.eval()` (normscope's
`eval_loss`) at update 0, every "eval.every" updates and after the last. `--bench`: the same
without the losses. "seconds" is the wall time of the training loops alone, with their
evaluations after update 0 (building the model, loading the JSON and the evaluation at update
0 are not timed); the runs are trained one after the other. When other work shares the cores, PyTorch's
OpenMP threads (which spin at barriers) can slow down a hundredfold: time on a quiet machine,
and compare losses with `--threads 1` (`tests/it/train_torch.rs` does).

The dump (format "normscope-train-init-v1", documented in normscope's `crates/core/src/train/dump.rs`):

    { "format", "preset", "seed",
      "model": { "width", "heads", "eps", "groups", "affine",
                 "norm": "layer"|"rms"|"batch"|"instance"|"group"|"dyt"|"identity",
                 "io": {"kind": "tokens", "vocab", "seq"} | {"kind": "vectors", "d_in", "d_out"},
                 "blocks": [ { "branch": {"kind": "linear"} | {"kind": "mlp", "activation"}
                                        | {"kind": "attention", "uniform", "causal", "seq"},
                               "n_in", "n_br", "n_out": bool, "in_scale": number|null,
                               "skip": number|"learnable", "lambda": number|"learnable" } ],
                 "final_norm": bool },
      "params": [ {"layer", "name", "shape": [rows, cols], "decay", "data": row-major} ],
      "optimizer": {"name": "sgd"|"adam"|"adamw", ...}, "clip": number|null,
      "lrs": [lr of update 1, 2, ...],
      "batches": [ {"inputs", "targets", "weights"} | {"x", "y", "size"} ],
      "eval": {"every", "batches": [...]} }

The model (normscope's `crates/core/src/train/model.rs` and `pass.rs`). normscope stores activations as
d x n matrices whose columns are tokens, sequence-major (token t of sequence b is column
b * seq + t); here they are (batch, seq, d) tensors (vectors: (size, d)), the same numbers
transposed. Per block, with the norms N (LayerNorm with biased variance and eps inside the
square root, RMSNorm, BatchNorm1d, InstanceNorm1d, GroupNorm over (N, C, L), or DyT; an
optional learnable gain, and bias for all but RMSNorm; DyT's alpha always learnable):

    x_0 = E[:, token] + P[:, position]      (tokens)   or   x_0 = W_in x   (vectors)
    u = s * N_in(x)          (s = in_scale, absent when null; N_in may be absent)
    o = F(u)                 (no biases anywhere in F)
    b = N_br(o)
    z = skip * x + lambda * b       (skip: a number or Admin's learnable d-vector omega;
                                     lambda: a number or ReZero's learnable scalar)
    x_next = N_out(z)
    f = H N_final(x_L)

F is `W u` (linear), `W2 phi(W1 u)` with phi ReLU or exact (erf) GELU (mlp), or multi-head
softmax self-attention: Q = Wq u, K = Wk u, V = Wv u, head h the features h*dh..(h+1)*dh,
scores q_i . k_j / sqrt(dh) within each sequence, the causal mask, softmax over keys,
O = A V, F = Wo O (uniform attention: Wq = Wk = 0, A the mean over the visible tokens).
Loss: tokens, sum_t w_t CE_t / sum_t w_t (softmax cross-entropy); vectors, the mean squared
error over every entry.

A matrix in the dump maps columns to rows, as `torch.nn.Linear.weight`, so it loads as is; the
token and position embeddings (d x vocab, d x seq) load transposed into `torch.nn.Embedding`;
gains, biases and omega (d x 1) load as vectors; lambda (1 x 1) as a one-element vector.

Encoder-decoder dumps (format "normscope-train-encdec-v1", `normscope train --arch
encoder-decoder --layers N --task reverse-pairs ... --dump-init FILE`): "model" has "layers": N,
"io": {"kind": "pairs", "vocab", "src", "tgt"}, and "encoder" and "decoder", each
{"blocks": [...], "final_norm"} with blocks as above plus the cross-attention branch
{"kind": "cross-attention", "seq", "memory_seq"}; batches are {"source", "inputs", "targets",
"weights"}. The model (normscope's `crates/core/src/train/seq2seq/`):

    m = N_final_enc(encoder blocks(E_s[source] + P_s))         (2N blocks: attention, MLP)
    y = N_final_dec(decoder blocks(E_t[inputs] + P_t; m))      (3N blocks: causal attention,
                                                                cross-attention to m, MLP)
    f = H y

where cross-attention takes Q = Wq u from its block's input u and K = Wk m, V = Wv m from the
same pair's encoder output, every query seeing every source token; its weights are named
cross.wq, cross.wk, cross.wv, cross.wo. Parameter layers: 0 the source embeddings, 1..2N the
encoder blocks, 2N+1 the encoder's output norm, 2N+2 the target embeddings, 2N+3..5N+2 the
decoder blocks, 5N+3 the decoder's output norm and the head.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

ENCDEC_FORMAT = "normscope-train-encdec-v1"
FORMATS = ("normscope-train-init-v1", ENCDEC_FORMAT)


class DyT(nn.Module):
    """Dynamic Tanh as its reference code writes it (github.com/jiachenzhu/DyT,
    `dynamic_tanh.py`: `alpha = ones(1) * alpha_init_value` with `alpha_init_value = 0.5`,
    `weight = ones(d)`, `bias = zeros(d)`): `weight * tanh(alpha x) + bias` on the last
    dimension; without affine, `tanh(alpha x)` with `alpha` still learnable."""

    def __init__(self, d, affine, alpha0=0.5):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1) * alpha0)
        self.weight = nn.Parameter(torch.ones(d)) if affine else None
        self.bias = nn.Parameter(torch.zeros(d)) if affine else None

    def forward(self, x):
        y = torch.tanh(self.alpha * x)
        return y * self.weight + self.bias if self.weight is not None else y


class ChannelsFirst(nn.Module):
    """A PyTorch norm that reads (N, C, L) (`BatchNorm1d`, `InstanceNorm1d`, `GroupNorm`)
    applied to this script's (batch, seq, d) tensors, transposed there and back; vectors
    (size, d) go in as (N, C)."""

    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    @property
    def weight(self):
        return self.norm.weight

    @property
    def bias(self):
        return self.norm.bias

    def forward(self, x):
        if x.dim() == 2:
            return self.norm(x)
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


def make_norm(model):
    """The norm of a slot, affine if asked: `torch.nn.LayerNorm`, `RMSNorm`, `BatchNorm1d`
    (momentum 0.1: running statistics in training mode, used in `eval()`), `InstanceNorm1d`,
    `GroupNorm` (the dump's groups) or DyT."""
    kind, d, eps, affine = model["norm"], model["width"], model["eps"], model["affine"]
    if kind == "layer":
        return nn.LayerNorm(d, eps=eps, elementwise_affine=affine, bias=affine)
    if kind == "rms":
        return nn.RMSNorm(d, eps=eps, elementwise_affine=affine)
    if kind == "batch":
        return ChannelsFirst(nn.BatchNorm1d(d, eps=eps, affine=affine))
    if kind == "instance":
        return ChannelsFirst(nn.InstanceNorm1d(d, eps=eps, affine=affine))
    if kind == "group":
        return ChannelsFirst(nn.GroupNorm(model["groups"], d, eps=eps, affine=affine))
    if kind == "dyt":
        return DyT(d, affine)
    raise ValueError(f"a norm slot with norm kind {kind!r}")


def norm_params(n, prefix):
    """A norm slot's parameters by their dump names (`alpha`, `gain`, `bias`)."""
    out = {}
    if n is None:
        return out
    for name, attr in (("alpha", "alpha"), ("gain", "weight"), ("bias", "bias")):
        t = getattr(n, attr, None)
        if t is not None:
            out[f"{prefix}.{name}"] = t
    return out


class Linear(nn.Module):
    """F(u) = W u."""

    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d, bias=False)

    def forward(self, u):
        return self.w(u)

    def dump_params(self):
        return {"w": self.w.weight}


class Mlp(nn.Module):
    """F(u) = W2 phi(W1 u), phi ReLU or the exact (erf) GELU; hidden width from the dump."""

    def __init__(self, d, hidden, activation):
        super().__init__()
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        self.phi = {"relu": F.relu, "gelu": lambda h: F.gelu(h, approximate="none")}[activation]

    def forward(self, u):
        return self.w2(self.phi(self.w1(u)))

    def dump_params(self):
        return {"w1": self.w1.weight, "w2": self.w2.weight}


class Attention(nn.Module):
    """Multi-head self-attention within each sequence, without biases; `uniform` has no
    queries and keys (every visible token weighs the same)."""

    def __init__(self, d, heads, uniform, causal):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.uniform, self.causal = uniform, causal
        if not uniform:
            self.wq = nn.Linear(d, d, bias=False)
            self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, u):
        b, s, d = u.shape

        def split(t):  # (b, s, d) -> (b, heads, s, dh)
            return t.view(b, s, self.heads, self.dh).transpose(1, 2)

        v = split(self.wv(u))
        visible = torch.ones(s, s, dtype=torch.bool)
        if self.causal:
            visible = visible.tril()
        if self.uniform:
            a = visible.to(u.dtype)
            a = a / a.sum(-1, keepdim=True)
        else:
            q, k = split(self.wq(u)), split(self.wk(u))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))
            a = scores.masked_fill(~visible, float("-inf")).softmax(-1)
        o = (a @ v).transpose(1, 2).reshape(b, s, d)
        return self.wo(o)

    def dump_params(self):
        out = {} if self.uniform else {"wq": self.wq.weight, "wk": self.wk.weight}
        out.update({"wv": self.wv.weight, "wo": self.wo.weight})
        return out


class CrossAttention(nn.Module):
    """Multi-head softmax attention from the stream (queries) to a memory (keys and values)
    of the same pair, without biases or mask."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, u, memory):
        b, s, d = u.shape
        t = memory.shape[1]

        def split(x, n):  # (b, n, d) -> (b, heads, n, dh)
            return x.view(b, n, self.heads, self.dh).transpose(1, 2)

        q, k, v = split(self.wq(u), s), split(self.wk(memory), t), split(self.wv(memory), t)
        a = ((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))).softmax(-1)
        o = (a @ v).transpose(1, 2).reshape(b, s, d)
        return self.wo(o)

    def dump_params(self):
        return {"cross.wq": self.wq.weight, "cross.wk": self.wk.weight,
                "cross.wv": self.wv.weight, "cross.wo": self.wo.weight}


class Block(nn.Module):
    """One residual block: x -> N_out(skip * x + lambda * N_br(F(s * N_in(x)))); F of a
    cross-attention block also reads the memory."""

    def __init__(self, spec, model, hidden):
        super().__init__()
        d = model["width"]

        def norm(slot):
            return make_norm(model) if spec[slot] else None

        self.n_in, self.n_br, self.n_out = norm("n_in"), norm("n_br"), norm("n_out")
        self.in_scale = spec["in_scale"]
        br = spec["branch"]
        if br["kind"] == "linear":
            self.branch = Linear(d)
        elif br["kind"] == "mlp":
            self.branch = Mlp(d, hidden, br["activation"])
        elif br["kind"] == "attention":
            self.branch = Attention(d, model["heads"], br["uniform"], br["causal"])
        elif br["kind"] == "cross-attention" and "memory_seq" in br:
            self.branch = CrossAttention(d, model["heads"])
        else:
            raise ValueError(f"unsupported branch {br}")
        self.omega = nn.Parameter(torch.ones(d)) if spec["skip"] == "learnable" else None
        self.skip = None if self.omega is not None else spec["skip"]
        self.lam = nn.Parameter(torch.zeros(1)) if spec["lambda"] == "learnable" else None
        self.lam_value = None if self.lam is not None else spec["lambda"]

    def forward(self, x, memory=None):
        u = self.n_in(x) if self.n_in is not None else x
        if self.in_scale is not None:
            u = u * self.in_scale
        o = self.branch(u, memory) if isinstance(self.branch, CrossAttention) else self.branch(u)
        b = self.n_br(o) if self.n_br is not None else o
        skip = self.omega if self.omega is not None else self.skip
        lam = self.lam if self.lam is not None else self.lam_value
        z = x * skip + b * lam
        return self.n_out(z) if self.n_out is not None else z

    def dump_params(self):
        out = dict(self.branch.dump_params())
        for slot in ("n_in", "n_br", "n_out"):
            out.update(norm_params(getattr(self, slot), slot))
        if self.omega is not None:
            out["omega"] = self.omega
        if self.lam is not None:
            out["lambda"] = self.lam
        return out


class Model(nn.Module):
    """Input map, the blocks, the final norm and the head."""

    def __init__(self, model, hidden):
        super().__init__()
        d, io = model["width"], model["io"]
        self.tokens = io["kind"] == "tokens"
        if self.tokens:
            self.embedding = nn.Embedding(io["vocab"], d)
            self.positions = nn.Embedding(io["seq"], d)
            outputs = io["vocab"]
        else:
            self.w_in = nn.Linear(io["d_in"], d, bias=False)
            outputs = io["d_out"]
        self.blocks = nn.ModuleList(Block(spec, model, hidden) for spec in model["blocks"])
        self.final_norm = (
            make_norm(model) if model["final_norm"] else None
        )
        self.head = nn.Linear(d, outputs, bias=False)

    def forward(self, inputs):
        if self.tokens:
            x = self.embedding(inputs) + self.positions(torch.arange(inputs.shape[1]))
        else:
            x = self.w_in(inputs)
        for block in self.blocks:
            x = block(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.head(x)

    def dump_param(self, layer, name):
        """`(tensor, transposed)` of the dump's parameter `name` at `layer` (0 the input map,
        1..L the blocks, L + 1 the final norm and head)."""
        top = len(self.blocks) + 1
        if layer == 0:
            table = {"embedding": ("embedding", True), "positions": ("positions", True),
                     "w_in": ("w_in", False)}
            attr, transposed = table[name]
            return getattr(self, attr).weight, transposed
        if layer == top:
            if name == "head":
                return self.head.weight, False
            return norm_params(self.final_norm, "final")[name], False
        return self.blocks[layer - 1].dump_params()[name], False


class Stack(nn.Module):
    """One stack of an encoder-decoder model: token and position embeddings, the blocks, the
    output norm."""

    def __init__(self, spec, model, hidden, seq):
        super().__init__()
        d = model["width"]
        self.embedding = nn.Embedding(model["io"]["vocab"], d)
        self.positions = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(b, model, hidden) for b in spec["blocks"])
        self.final_norm = (
            make_norm(model) if spec["final_norm"] else None
        )

    def forward(self, ids, memory=None):
        x = self.embedding(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x, memory)
        return self.final_norm(x) if self.final_norm is not None else x

    def dump_param(self, layer, name):
        """`(tensor, transposed)` of parameter `name` at the stack's own layer (0 the
        embeddings, 1..L the blocks, L + 1 the output norm)."""
        if layer == 0:
            return getattr(self, name).weight, True
        if layer == len(self.blocks) + 1:
            return norm_params(self.final_norm, "final")[name], False
        return self.blocks[layer - 1].dump_params()[name], False


class EncoderDecoder(nn.Module):
    """The encoder, the decoder reading its output through cross-attention, the head."""

    def __init__(self, model, hidden):
        super().__init__()
        io = model["io"]
        self.layers = model["layers"]
        self.encoder = Stack(model["encoder"], model, hidden, io["src"])
        self.decoder = Stack(model["decoder"], model, hidden, io["tgt"])
        self.head = nn.Linear(model["width"], io["vocab"], bias=False)

    def forward(self, source, inputs):
        return self.head(self.decoder(inputs, self.encoder(source)))

    def dump_param(self, layer, name):
        """`(tensor, transposed)` of the dump's parameter `name` at `layer` (0..2N+1 the
        encoder's, 2N+2..5N+3 the decoder's, the head at 5N+3)."""
        first = 2 * self.layers + 2
        if layer == 5 * self.layers + 3 and name == "head":
            return self.head.weight, False
        if layer < first:
            return self.encoder.dump_param(layer, name)
        return self.decoder.dump_param(layer - first, name)


def hidden_width(dump):
    """The MLP hidden width, read off the first MLP's W1 in the dump (d if there is none)."""
    for p in dump["params"]:
        if p["name"] == "w1":
            return p["shape"][0]
    return dump["model"]["width"]


def build(dump):
    """The model with the dump's weights, and the parameter list in the dump's order with
    each parameter's AdamW decay flag."""
    kind = EncoderDecoder if dump["format"] == ENCDEC_FORMAT else Model
    model = kind(dump["model"], hidden_width(dump))
    ordered = []
    with torch.no_grad():
        for p in dump["params"]:
            tensor, transposed = model.dump_param(p["layer"], p["name"])
            rows, cols = p["shape"]
            data = torch.tensor(p["data"], dtype=torch.get_default_dtype()).view(rows, cols)
            if transposed:
                data = data.T
            if tensor.numel() != data.numel():
                raise ValueError(f"{p['name']} at layer {p['layer']}: shape {p['shape']} vs {tuple(tensor.shape)}")
            tensor.copy_(data.reshape(tensor.shape))
            ordered.append((tensor, p["decay"]))
    mine = {id(t) for t in model.parameters()}
    loaded = {id(t) for t, _ in ordered}
    if mine != loaded or len(loaded) != len(ordered):
        raise ValueError("the dump's parameters do not match the model's one to one")
    return model, ordered


def make_optimizer(spec, ordered):
    """torch.optim's optimizer for the dump's settings (the single-tensor CPU path, which
    normscope's `crates/core/src/train/optim/` follows); AdamW decays only the flagged parameters."""
    name = spec["name"]
    if name == "sgd":
        return torch.optim.SGD([t for t, _ in ordered], lr=0.0, momentum=spec["momentum"], foreach=False)
    betas = (spec["beta1"], spec["beta2"])
    if name == "adam":
        return torch.optim.Adam([t for t, _ in ordered], lr=0.0, betas=betas, eps=spec["eps"], foreach=False)
    if name == "adamw":
        groups = [
            {"params": [t for t, decay in ordered if decay], "weight_decay": spec["weight_decay"]},
            {"params": [t for t, decay in ordered if not decay], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=0.0, betas=betas,
                                 eps=spec["eps"], foreach=False)
    raise ValueError(f"unknown optimizer {name!r}")


def weighted_cross_entropy(b):
    """The loss of a token batch: sum_t w_t CE_t / sum_t w_t over its targets."""
    targets = torch.tensor(b["targets"], dtype=torch.long)
    weights = torch.tensor(b["weights"], dtype=torch.get_default_dtype())

    def loss(f):
        ce = F.cross_entropy(f.reshape(targets.numel(), -1), targets, reduction="none")
        return (weights * ce).sum() / weights.sum()
    return loss


def batch_tensors(io, b):
    """One batch as `(model inputs, loss function, weight in an average over batches)`."""
    if io["kind"] == "pairs":
        source = torch.tensor(b["source"], dtype=torch.long).view(-1, io["src"])
        inputs = torch.tensor(b["inputs"], dtype=torch.long).view(-1, io["tgt"])
        return (source, inputs), weighted_cross_entropy(b), sum(b["weights"])
    if io["kind"] == "tokens":
        inputs = torch.tensor(b["inputs"], dtype=torch.long).view(-1, io["seq"])
        return (inputs,), weighted_cross_entropy(b), sum(b["weights"])
    size = b["size"]
    inputs = torch.tensor(b["x"], dtype=torch.get_default_dtype()).view(-1, size).T.contiguous()
    y = torch.tensor(b["y"], dtype=torch.get_default_dtype()).view(-1, size).T.contiguous()

    def loss(f, y=y):
        return F.mse_loss(f, y)
    return (inputs,), loss, float(y.numel())


def batches(dump):
    """Every training batch as `(model inputs, loss function)` tensors, built before any
    timing."""
    io = dump["model"]["io"]
    return [batch_tensors(io, b)[:2] for b in dump["batches"]]


def eval_set(dump):
    """The evaluation batches (`batch_tensors`), and the updates after which to evaluate."""
    io = dump["model"]["io"]
    ev = dump.get("eval", {"every": 0, "batches": []})
    return [batch_tensors(io, b) for b in ev["batches"]], ev["every"]


def evaluate(model, data):
    """The weighted mean loss over the evaluation batches in evaluation mode (BatchNorm on its
    running statistics), as normscope's `eval_loss`; back in training mode after."""
    if not data:
        return None
    model.eval()
    with torch.no_grad():
        total = sum(loss_of(model(*inputs)).item() * w for inputs, loss_of, w in data)
    model.train()
    return total / sum(w for _, _, w in data)


def train(dump):
    """Trains from a dump; returns (losses per update, seconds of the training loop,
    [(update, evaluation loss)] at update 0, every `eval.every` updates and after the last)."""
    model, ordered = build(dump)
    data = batches(dump)
    held_out, every = eval_set(dump)
    evals = [(0, evaluate(model, held_out))] if held_out else []
    params = [t for t, _ in ordered]
    opt = make_optimizer(dump["optimizer"], ordered)
    clip = dump["clip"]
    losses = []
    start = time.perf_counter()
    steps = len(dump["lrs"])
    for s, (lr, (inputs, loss_of)) in enumerate(zip(dump["lrs"], data), start=1):
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model(*inputs))
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip, foreach=False)
        opt.step()
        losses.append(loss.item())
        if held_out and (s % every == 0 or s == steps):
            evals.append((s, evaluate(model, held_out)))
    return losses, time.perf_counter() - start, evals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dumps", nargs="+", help="normscope train --dump-init files")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--json", action="store_true", help="one JSON object with the losses")
    ap.add_argument("--bench", action="store_true", help="one JSON object with the timings only")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="dtype of the model, batches and optimizer state (default float64)")
    a = ap.parse_args()
    torch.set_default_dtype(getattr(torch, a.dtype))
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    runs = []
    for path in a.dumps:
        with open(path) as f:
            dump = json.load(f)
        if dump.get("format") not in FORMATS:
            sys.exit(f"{path}: not a normscope-train-init-v1 or {ENCDEC_FORMAT} dump")
        losses, seconds, evals = train(dump)
        runs.append({"preset": dump["preset"], "seed": dump["seed"], "steps": len(losses),
                     "seconds": seconds, "losses": losses, "evals": evals})
    if a.json or a.bench:
        if a.bench:
            for r in runs:
                del r["losses"]
                del r["evals"]
        print(json.dumps({"torch": torch.__version__, "dtype": a.dtype, "threads": torch.get_num_threads(),
                          "runs": runs, "seconds": sum(r["seconds"] for r in runs),
                          "steps": sum(r["steps"] for r in runs)}))
        return
    print(f"# torch {torch.__version__} {a.dtype} threads {torch.get_num_threads()}")
    for r in runs:
        print(f"# preset {r['preset']} seed {r['seed']} steps {r['steps']} seconds {r['seconds']:.3f}")
        for s, loss in enumerate(r["losses"], start=1):
            print(s, repr(loss))


if __name__ == "__main__":
    main()
