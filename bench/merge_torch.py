"""mergekit's per-tensor kernels in torch, timed on bench/llm_set.sh's BF16 set: what a
mergekit user's merge costs in arithmetic alone (loading and writing not counted, so a lower
bound on mergekit's own time), beside which bench/merge.sh prints `compatbench merge`'s.

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95: merge_methods/generalized_task_arithmetic.py
(GTATask.execute, get_mask), sparsify.py (magnitude, bernoulli, della_magprune,
rescaled_masked_tensor), slerp.py (numpy float32), model_stock.py. Each input is converted
to BF16 first, as mergekit's LoadTensor does with `dtype: bfloat16`; torch runs on THREADS
threads (torch.set_num_threads), the core count compatbench's ranks get.

    /usr/bin/python3 bench/merge_torch.py DIR THREADS METHOD...   (ta ties dare_ties slerp
                                                                   stock della)
prints one line per method: "METHOD SECONDS".
"""
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mergekit"))
from compatnets.safetensors import load  # noqa: E402
from torch_reference import combine  # noqa: E402


def rescaled(tensor, mask, rescale):
    """sparsify.py's rescaled_masked_tensor (L1)."""
    masked = tensor * mask
    if not rescale:
        return masked
    before, after = tensor.abs().sum(), masked.abs().sum()
    if before < 1e-7 or after < 1e-7:
        return masked
    return masked * (before / after)


def magnitude(tensor, density):
    k = int(density * tensor.numel())
    mask = torch.zeros_like(tensor)
    w = tensor.abs().view(-1)
    if w.device.type == "cpu":
        w = w.float()
    mask.view(-1)[torch.argsort(w, descending=True)[:k]] = 1
    return rescaled(tensor, mask, False)


def bernoulli(tensor, density):
    work = tensor if tensor.dtype == torch.bfloat16 else tensor.float()
    mask = torch.bernoulli(torch.full_like(work, density))
    return rescaled(work, mask, True).to(tensor.dtype)


def della(tensor, density, epsilon=0.15):
    work = tensor if tensor.dtype == torch.bfloat16 else tensor.float()
    ranks = torch.argsort(work.abs(), dim=1).argsort(dim=1).to(work.dtype) + 1
    lo = ranks.min(dim=1, keepdim=True).values
    hi = ranks.max(dim=1, keepdim=True).values
    norm = ((ranks - lo) / (hi - lo)).clamp(0, 1)
    probs = (density - epsilon) + norm * 2 * epsilon
    return rescaled(work, torch.bernoulli(probs), True).to(tensor.dtype)


def gta(base, xs, sparsify, consensus, normalize):
    """GTATask.execute: task vectors, sparsified, then mixed under unit weights as
    tests/mergekit/torch_reference.py's combine mixes them (sign consensus by get_mask's
    "sum", normalised by the weights that took part)."""
    deltas = []
    for x in xs:
        delta = x - base
        if sparsify is not None:
            delta = sparsify(delta if delta.dim() > 1 else delta.unsqueeze(0)).view(base.shape)
        deltas.append(delta)
    return combine(deltas, [1.0] * len(xs), base, consensus, False, normalize, 1.0)


def slerp(t, v0, v1, dot_threshold=0.9995, eps=1e-8):
    """slerp.py: in numpy float32."""
    a, b = v0.float().numpy(), v1.float().numpy()
    a_copy, b_copy = np.copy(a), np.copy(b)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    dot = np.sum((a / na if na > eps else a) * (b / nb if nb > eps else b))
    if np.abs(dot) > dot_threshold:
        return torch.from_numpy((1 - t) * a_copy + t * b_copy).to(v0.dtype)
    theta_0 = np.arccos(dot)
    sin_theta_0 = np.sin(theta_0)
    theta_t = theta_0 * t
    s0 = np.sin(theta_0 - theta_t) / sin_theta_0
    s1 = np.sin(theta_t) / sin_theta_0
    return torch.from_numpy(s0 * a_copy + s1 * b_copy).to(v0.dtype)


def model_stock(w0, ws):
    """model_stock.py, not filter-wise, in plain torch 2 operations (torch_kernels.py's
    model_stock computes torch 2's scalar products through float32 on this torch 1.13, extra
    conversions a mergekit user does not pay)."""
    shape = w0.shape
    w0, ws = w0.view(-1), [w.view(-1) for w in ws]
    offsets = [w - w0 for w in ws]
    cos = []
    for i, oi in enumerate(offsets):
        for oj in offsets[i + 1:]:
            norms = torch.norm(oi, dim=-1) * torch.norm(oj, dim=-1)
            cos.append(((oi * oj).sum(dim=-1) / norms.clamp(min=1e-6)).clamp(-1, 1))
    c = torch.stack(cos).mean(dim=0).unsqueeze(-1)
    n = len(ws)
    t = (n * c) / (1 + (n - 1) * c)
    return (t * (sum(ws) / n) + (1 - t) * w0).reshape(shape)


KERNELS = {
    "ta": lambda b, xs: gta(b, xs, None, False, True),
    "ties": lambda b, xs: gta(b, xs, lambda d: magnitude(d, 0.2), True, True),
    "dare_ties": lambda b, xs: gta(b, xs, lambda d: bernoulli(d, 0.5), True, False),
    "della": lambda b, xs: gta(b, xs, lambda d: della(d, 0.5), True, True),
    "slerp": lambda b, xs: slerp(0.5, b, xs[-1]),
    "stock": lambda b, xs: model_stock(b, xs),
}


def main(argv):
    folder, threads, methods = argv[1], int(argv[2]), argv[3:]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    paths = [os.path.join(folder, "base.safetensors"), os.path.join(folder, "ft0.safetensors"),
             os.path.join(folder, "ft1")]
    models = [load(p) for p in paths]
    for method in methods:
        seconds = 0.0
        for name in models[0]:
            base, *xs = (torch.from_numpy(m[name]).to(torch.bfloat16) for m in models)
            start = time.perf_counter()
            KERNELS[method](base, xs)
            seconds += time.perf_counter() - start
        print(f"{method} {seconds:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
