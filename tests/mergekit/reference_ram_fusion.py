"""The float64 kernels of ram, ramplus_tl and arcee_fusion, for reference.py (which reads
their parameters, refuses what they cannot merge and re-exports them).

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit, LGPL-3.0) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95: mergekit/merge_methods/ram.py (ram_merge,
ramplus_tl_merge, _prepare_ram_vectors) and arcee_fusion.py (DynamicThresholdFusion,
ArceeFusionMergeTask).

Where compatbench differs from mergekit, on purpose: arcee_fusion takes its quantiles over
all of a tensor's values, also above 10^6 values (mergekit sorts 10^6 of them sampled with
torch.randperm there), with mergekit's index formula for n = all values.
"""
import numpy as np


# ---------------------------------------------------------------- ram.py

def ram_vectors(tensors, base_value, epsilon):
    """_prepare_ram_vectors: the task vectors flattened (one row per model), which of them
    exceed epsilon (|tau| > epsilon), and per coordinate the count of models that do."""
    tv = np.stack([t - base_value for t in tensors]).reshape(len(tensors), -1)
    nonzero = np.abs(tv) > epsilon
    return tv, nonzero, nonzero.sum(axis=0)


def ram(base_value, tensors, epsilon=1e-5):
    """ram_merge: per coordinate, the task vectors above epsilon: one of them is added as it
    is, several are averaged, none leaves the base."""
    if not tensors:
        return base_value
    tv, nonzero, counts = ram_vectors(tensors, base_value, epsilon)
    tvz = tv * nonzero
    merged = (tvz * (counts == 1) + tvz * (counts > 1) / np.maximum(counts, 1)).sum(axis=0)
    return base_value + merged.reshape(base_value.shape)


def ramplus_lambda(nonzero, counts, r=0.1, alpha=0.2, epsilon=1e-5):
    """ramplus_tl_merge's lambda_ per model: 1 + r clip(rho, 0, alpha), rho = the model's
    shared count (coordinates it changes with others) over its unique count clamped to at
    least epsilon. (torch: float32; here float64. With epsilon <= 0 and a model that changes
    nothing, 0 / 0: NaN, as in torch.)"""
    shared = (nonzero & (counts > 1)).sum(axis=1)
    unique = (nonzero & (counts == 1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = shared / np.maximum(unique, epsilon)
    return 1 + r * np.clip(rho, 0, alpha)


def ramplus_tl(base_value, tensors, r=0.1, alpha=0.2, epsilon=1e-5):
    """ramplus_tl_merge: as ram, each model's unique coordinates scaled by its lambda_."""
    if not tensors:
        return base_value
    tv, nonzero, counts = ram_vectors(tensors, base_value, epsilon)
    lam = ramplus_lambda(nonzero, counts, r, alpha, epsilon)
    tvz = tv * nonzero
    with np.errstate(invalid="ignore"):   # a NaN lambda_ (above) makes the result NaN
        merged = (tvz * (counts == 1) * lam[:, None]
                  + tvz * (counts > 1) / np.maximum(counts, 1)).sum(axis=0)
    return base_value + merged.reshape(base_value.shape)


# ---------------------------------------------------------------- arcee_fusion.py

def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def quantile_index(q, n):
    """approximate_quantiles' index of quantile q among n sorted values:
    (q * (n - 1)).long(), q a float32 tensor: the product rounded to float32, truncated."""
    return int(np.float32(q) * np.float32(n - 1))


def fusion_threshold(importance):
    """calculate_dynamic_threshold: median + 1.5 (q3 - q1), the quantiles
    sorted[quantile_index(q, n)] of all n values (mergekit: of 10^6 sampled above 10^6)."""
    flat = np.sort(importance.ravel())
    median, q1, q3 = (flat[quantile_index(q, flat.size)] for q in (0.5, 0.25, 0.75))
    return median + 1.5 * (q3 - q1)


def fusion_importance(base_value, other, eps=1e-8):
    """_compute_importance: |b - a| times KL(softmax(b) + eps || softmax(a) + eps) along the
    last dim (a 1-D tensor: one number)."""
    p, q = softmax(other) + eps, softmax(base_value) + eps
    kl = np.sum(p * np.log(p / q), axis=-1)
    return np.abs(other - base_value) * kl[..., None]


def arcee_fusion(base_value, other):
    """ArceeFusionMergeTask.execute on the base and the other model: the delta kept where
    the importance is at least the dynamic threshold."""
    importance = fusion_importance(base_value, other)
    mask = importance >= fusion_threshold(importance)
    return base_value + (other - base_value) * mask
