"""mergekit's ram, ramplus_tl and arcee_fusion kernels in torch, in the dtype (for
torch_kernels.py, which dispatches them; torch_reference.py's docstring says what this is
for and which torch it describes).

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit, LGPL-3.0) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95: mergekit/merge_methods/ram.py and
arcee_fusion.py; easy_define.py for how ram and ramplus_tl receive their inputs (the base
apart, the other models in merge order here: mergekit iterates a set) and their parameters
(global ones).

Each kernel performs mergekit's torch operations in its order, on the same operand kinds, so
that each result's dtype and every rounding are torch's own:
  - ram: the task vectors stacked (torch promotes mixed dtypes), |tau| > epsilon (epsilon
    rounded to the dtype, as every comparison with a number), shared values divided by
    their int64 count (converted to the dtype); the result has the inputs' (promoted) dtype;
  - ramplus_tl: rho = shared / unique.clamp(min=epsilon) and lambda_ are float32 (an int64
    tensor clamped by a float is float32), and `unique values * lambda_` promotes the merged
    task vector, and so the result, to float32;
  - arcee_fusion: softmax, log and the KL sum in the dtype, the quantiles by torch.sort of
    the flattened importance, indexed at (q * (n - 1)).long() with q a float32 tensor, the
    threshold `median + 1.5 * iqr` (0-dim tensors of the dtype; the product as torch 2
    computes it, torch_ops.mul_scalar), the mask `(importance >= threshold).float()`:
    `delta * mask` promotes to float32, and the result `base + masked_delta` is float32
    (SaveTensor casts it only to `out_dtype`). compatbench sorts all n values, also above
    10^6 (mergekit: 10^6 values sampled by torch.randperm). Equal values at a quantile's
    position do not change the value taken there, so no coordinate depends on torch's order
    among equal values (no tie mask). The KL of two nearly equal softmaxes magnifies the
    last float32 place of torch's exp (its own vectorised one) into the importance, so near
    the threshold a mask decision can depend on it (dtype_check.py allows a few);
  - this torch lacks float16 softmax and log on CPU: computed on float32 values and rounded
    to float16 (torch_ops.half_safe; newer torch computes them in float32 internally).
"""
import torch
import torch.nn.functional as F

import reference as R
from torch_ops import half_safe, mul_scalar


# ---------------------------------------------------------------- ram.py

def ram_vectors(tensors, base, epsilon):
    """_prepare_ram_vectors: tv_flat, nonzero_mask, contrib_counts (int64, 1 x n),
    overlap_mask and unique_mask."""
    task_vectors = torch.stack([t - base for t in tensors], dim=0)
    tv_flat = task_vectors.view(len(tensors), -1)
    nonzero = tv_flat.abs() > epsilon
    counts = nonzero.sum(dim=0, keepdim=True)
    return tv_flat, nonzero, counts, counts > 1, counts == 1


def ram(base, tensors, epsilon=1e-5):
    """ram_merge: unique values as they are, shared ones averaged, summed over the models."""
    if not tensors:
        return base
    tv_flat, nonzero, counts, overlap, unique = ram_vectors(tensors, base, epsilon)
    tvz = tv_flat * nonzero
    merged = ((tvz * unique) + (tvz * overlap / counts.clamp(min=1))).sum(dim=0, keepdim=True)
    return base + merged.reshape_as(base)


def ramplus_lambda(nonzero, overlap, unique, r=0.1, alpha=0.2, epsilon=1e-5):
    """ramplus_tl_merge's lambda_ (float32, one per model)."""
    shared_counts = (nonzero & overlap).sum(dim=1)
    unique_counts = (nonzero & unique).sum(dim=1)
    rho = shared_counts / unique_counts.clamp(min=epsilon)
    return 1 + r * rho.clamp(min=0, max=alpha)


def ramplus_tl(base, tensors, r=0.1, alpha=0.2, epsilon=1e-5):
    """ramplus_tl_merge: as ram, the unique values times their model's lambda_."""
    if not tensors:
        return base
    tv_flat, nonzero, counts, overlap, unique = ram_vectors(tensors, base, epsilon)
    lam = ramplus_lambda(nonzero, overlap, unique, r, alpha, epsilon)
    tvz = tv_flat * nonzero
    merged = ((tvz * unique * lam.unsqueeze(-1))
              + (tvz * overlap / counts.clamp(min=1))).sum(dim=0, keepdim=True)
    return base + merged.reshape_as(base)


def ram_merge(job, values, base):
    R.need_base("ram", values, base)
    epsilon = float(R.global_param(job, "epsilon", 1e-5))
    return ram(values[base], [values[m] for m, _ in R.non_base(job, base)], epsilon)


def ramplus_tl_merge(job, values, base):
    R.need_base("ramplus_tl", values, base)
    r, alpha, epsilon = (float(R.global_param(job, name, default)) for name, default in
                         (("r", 0.1), ("alpha", 0.2), ("epsilon", 1e-5)))
    return ramplus_tl(values[base], [values[m] for m, _ in R.non_base(job, base)], r, alpha,
                      epsilon)


# ---------------------------------------------------------------- arcee_fusion.py

def approximate_quantiles(tensor, q):
    """DynamicThresholdFusion.approximate_quantiles over all values (see the docstring)."""
    sorted_tensor, _ = torch.sort(tensor.reshape(-1))
    return sorted_tensor[(q * (sorted_tensor.numel() - 1)).long()]


def fusion_threshold(importance):
    """calculate_dynamic_threshold: median + 1.5 * iqr, a 0-dim tensor of the dtype."""
    median = approximate_quantiles(importance, torch.tensor([0.5]))[0]
    q1, q3 = approximate_quantiles(importance, torch.tensor([0.25, 0.75]))
    return median + mul_scalar(q3 - q1, 1.5)


def fusion_importance(params, base_params, eps=1e-8):
    """_compute_importance: |params - base| * KL(softmax(params) + eps || softmax(base) +
    eps) along the last dim."""
    diff = (params - base_params).abs()
    p = half_safe(lambda x: F.softmax(x, dim=-1), params) + eps
    q = half_safe(lambda x: F.softmax(x, dim=-1), base_params) + eps
    kl_div = torch.sum(p * half_safe(torch.log, p / q), dim=-1)
    return diff * kl_div.unsqueeze(-1)


def arcee_fusion(base, other):
    """ArceeFusionMergeTask.execute on the base and the other model: float32 (the mask)."""
    importance = fusion_importance(other, base)
    fusion_mask = (importance >= fusion_threshold(importance)).float()
    delta = other - base
    return base + delta * fusion_mask


def arcee_fusion_merge(job, values, base):
    """The one input as it is; else the base and exactly one other model (refused as
    reference.arcee_fusion_merge refuses)."""
    if base is None:
        raise R.Unsupported("base_model", "arcee_fusion needs a base_model")
    if len(job.sources) == 1:
        return values[job.sources[0][0]]
    if len(job.sources) != 2 or base not in values:
        raise R.Unsupported("arcee_fusion", "arcee_fusion merges exactly one model with the "
                                            "base_model")
    (other, _), = R.non_base(job, base)
    return arcee_fusion(values[base], values[other])


KERNELS = {"ram": ram_merge, "ramplus_tl": ramplus_tl_merge, "arcee_fusion": arcee_fusion_merge}
