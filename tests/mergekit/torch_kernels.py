"""mergekit's tensor kernels other than generalized task arithmetic, in torch (for
torch_reference.py, whose docstring says what this is for and which torch it describes).

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit, LGPL-3.0) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95: mergekit/merge_methods/linear.py, slerp.py,
model_stock.py, passthrough.py, nearswap.py, sce.py (with generalized_task_arithmetic.py's
get_mask), multislerp.py, nuslerp.py, karcher.py; easy_define.py for how nearswap, sce and
multislerp receive their inputs and parameters. ram, ramplus_tl and arcee_fusion are in
torch_ram_fusion.py (dispatched from here).

Every kernel takes the input tensors as mergekit's tasks receive them (already converted to
the configuration's dtype at load) and performs mergekit's torch operations in its order, on
the same operand kinds (a Python number, a 0-dim tensor or a tensor): the dtype each result
has, and every rounding, are torch's own, except where a bfloat16/float16 tensor is
multiplied or divided by a scalar (a Python number, or karcher's float32 norms): there
mul_scalar and div_scalar compute as torch 2 does (torch_ops.py). The *_merge(job, values,
base) wrappers read the parameters and refuse exactly what reference.py's wrappers refuse. A
kernel returns its tensor, or (tensor, Ties) where it sorts (sce): which coordinates depend
on the order torch gives equal values (see split_ties).
"""
from dataclasses import dataclass

import numpy as np
import torch

import reference as R
import torch_ram_fusion
from torch_ops import acos, clamp, cos, div_scalar, half_safe, mean, mul_scalar, sin

# numpy >= 2 (NEP 50) keeps a Python float weak: in slerp, theta_0 * t is float32 there, and
# float64 under numpy 1.x's value-based casting (and with it sin(theta_0 - theta_t) and the
# two coefficients, rounded to float32 only when they scale the float32 vectors).
SLERP_NEP50 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


# ---------------------------------------------------------------- ties

def split_ties(values, lo, hi):
    """Boolean array (values' shape): the coordinates whose equal-valued class is split by
    keeping the ascending sorted positions [lo, hi), part of the class kept and part dropped,
    so that which of them are kept is up to the order the sort gives equal values."""
    flat = values.detach().reshape(-1).double().numpy()
    order = np.sort(flat)
    first = np.searchsorted(order, flat, side="left")
    last = np.searchsorted(order, flat, side="right")
    inside = (first >= lo) & (last <= hi)
    outside = (last <= lo) | (first >= hi)
    return ~(inside | outside).reshape(tuple(values.shape))


@dataclass
class Ties:
    """Which coordinates of a merged tensor depend on torch's order among equal values."""
    direct: np.ndarray    # bool: its own kept/dropped status depends on it
    whole: bool = False   # through a rescale factor or sce's weights, every coordinate does

    def mask(self):
        return np.ones_like(self.direct) if self.whole and self.direct.any() else self.direct

    def add(self, other):
        if other is not None:
            self.direct = self.direct | other.direct
            self.whole = self.whole or (other.whole and bool(other.direct.any()))


# ---------------------------------------------------------------- linear, passthrough

def linear(tensors, weights, normalize):
    """LinearMergeTask.execute: stacked (torch promotes mixed dtypes), weights as a tensor of
    that dtype, (weights * tensors).sum(0), divided by the weights' sum."""
    stacked = torch.stack(tensors, dim=0)
    w = torch.tensor(weights, dtype=stacked.dtype)
    while w.dim() < stacked.dim():
        w.unsqueeze_(-1)
    res = (w * stacked).sum(dim=0)
    if normalize:
        res = res / w.sum(dim=0)
    return res


def linear_merge(job, values, base):
    weights = [float(R.model_param(job, m, n, "weight", required=True))
               for m, n in job.sources]
    return linear([values[m] for m, _ in job.sources], weights,
                  R.global_param(job, "normalize", True))


def passthrough_merge(job, values, base):
    if len(job.sources) != 1:
        raise R.Unsupported("passthrough", "passthrough takes exactly one model per tensor")
    model, in_name = job.sources[0]
    scale = R.model_param(job, model, in_name, "scale", None)
    return values[model] if scale is None else mul_scalar(values[model], float(scale))


# ---------------------------------------------------------------- slerp (numpy float32)

def _np_normalize(v, eps):
    norm = np.linalg.norm(v)
    return v / norm if norm > eps else v


def slerp(t, v0, v1, dot_threshold=0.9995, eps=1e-8, nep50=None):
    """slerp.py's slerp on torch tensors: both to float32 numpy arrays (.float().numpy()),
    then numpy's float32 arithmetic with numpy's promotion of the Python float t (nep50:
    numpy >= 2's; default: the running numpy's). Returns a float32 tensor."""
    nep50 = SLERP_NEP50 if nep50 is None else nep50
    a, b = v0.detach().float().numpy(), v1.detach().float().numpy()
    a_copy, b_copy = np.copy(a), np.copy(b)
    dot = np.sum(_np_normalize(a, eps) * _np_normalize(b, eps))
    if np.abs(dot) > dot_threshold:
        return torch.from_numpy((1 - t) * a_copy + t * b_copy)
    theta_0 = np.arccos(dot)
    sin_theta_0 = np.sin(theta_0)
    theta_t = theta_0 * (np.float32(t) if nep50 else t)
    s0 = np.sin(theta_0 - theta_t) / sin_theta_0
    s1 = np.sin(theta_t) / sin_theta_0
    return torch.from_numpy(s0 * a_copy + s1 * b_copy)


def slerp_merge(job, values, base):
    """SlerpTask: the base first; the result cast to the base's dtype."""
    others = [m for m, _ in job.sources if m != base]
    if base is None or len(others) != 1 or len(job.sources) != 2:
        raise R.Unsupported("slerp", "slerp merges exactly one model with the base_model")
    t = float(R.global_param(job, "t", required=True))
    return slerp(t, values[base], values[others[0]]).to(values[base].dtype)


# ---------------------------------------------------------------- model_stock

def model_stock(w0, ws, filter_wise=False):
    """ModelStockMergeTask.execute: offsets from the base (flattened, or per row with
    filter_wise), mean pairwise cosine, t = N c / (1 + (N - 1) c), t * mean + (1 - t) * w0."""
    out_shape = w0.shape
    if filter_wise:
        if w0.dim() == 1:
            w0, ws = w0.unsqueeze(0), [w.unsqueeze(0) for w in ws]
    else:
        w0, ws = w0.view(-1), [w.view(-1) for w in ws]
    offsets = [w - w0 for w in ws]
    cos_thetas = []
    for i, oi in enumerate(offsets):
        for oj in offsets[i + 1:]:
            norm_product = torch.norm(oi, dim=-1) * torch.norm(oj, dim=-1)
            cos_thetas.append(clamp((oi * oj).sum(dim=-1) / clamp(norm_product, 1e-6), -1, 1))
    cos_theta = mean(torch.stack(cos_thetas), 0).unsqueeze(-1)
    n = len(ws)
    t = mul_scalar(cos_theta, n) / (1 + mul_scalar(cos_theta, n - 1))
    w_avg = div_scalar(sum(ws), len(ws))
    return (t * w_avg + (1 - t) * w0).reshape(out_shape)


def model_stock_merge(job, values, base):
    filter_wise = R.global_param(job, "filter_wise", False)
    if filter_wise and "model_stock_filter_wise" not in R.ENABLED_NEW_METHODS:
        raise R.Unsupported("filter_wise", "model_stock with filter_wise: true is not supported")
    ws = [values[m] for m, _ in job.sources if m != base]
    if base is None or base not in values or len(ws) < 2:
        raise R.Unsupported("model_stock", "model_stock needs a base_model and two or more "
                                           "other models")
    return model_stock(values[base], ws, bool(filter_wise))


# ---------------------------------------------------------------- nearswap, sce

def nearswap_merge(job, values, base):
    """nearswap.py: weight = clamp(t / clamp(|a - b|, 1e-6), 0, 1); w b + (1 - w) a. torch's
    `number / tensor` is Tensor.__rtruediv__: tensor.reciprocal() * number."""
    R.need_base("nearswap", values, base)
    t = float(R.global_param(job, "t", required=True))
    others = R.non_base(job, base)
    if not others:
        return values[base]
    if len(others) != 1:
        raise R.Unsupported("nearswap", "nearswap merges exactly one model with the base_model")
    a, b = values[base], values[others[0][0]]
    weight = clamp(mul_scalar(clamp(torch.abs(a - b), 1e-6).reciprocal(), t), 0, 1)
    return weight * b + (1 - weight) * a


def get_mask(delta, method="sum", mask_dtype=None):
    """generalized_task_arithmetic.get_mask: where each (weighted) delta's sign agrees with
    the majority sign (of the sum, or of the count of signs), 0 >= counting as +1."""
    mask_dtype = delta.dtype if mask_dtype is None else mask_dtype
    sign = delta.sign().to(mask_dtype)
    total = delta.sum(dim=0) if method == "sum" else sign.sum(dim=0)
    majority = mul_scalar((total >= 0).to(mask_dtype), 2) - 1
    return sign == majority


def sce_mask(tvs, density, mask_dtype):
    """sce.py's sce_mask, and the coordinates whose kept status depends on topk's order among
    equal variances (through the weights, means over the masked task vectors, every
    coordinate's value then depends on it). Where
    mergekit keeps nothing (density <= 0, k = 0) its mask has the task vectors' stacked shape,
    which broadcasts the result to a wrong shape of the same values; as reference.py, the
    mask here has one task vector's shape."""
    shape = tuple(tvs.shape[1:])
    none = np.zeros(shape, dtype=bool)
    if density <= 0:
        return torch.zeros(shape, dtype=mask_dtype), none
    if density >= 1:
        return torch.ones(shape, dtype=mask_dtype), none
    var = torch.var(tvs, dim=0, unbiased=False)
    k = int(torch.count_nonzero(var) * density)
    if k == 0:
        return torch.zeros(shape, dtype=mask_dtype), none
    flat = var.abs().view(-1)
    # float16: topk of the float32 values (no float16 topk here), the same order by value
    indices = torch.topk(flat.float() if flat.dtype == torch.float16 else flat, k=k,
                         largest=True).indices
    mask = torch.zeros_like(var, dtype=mask_dtype)
    mask.view(-1)[indices] = 1
    return mask, split_ties(var.abs(), flat.numel() - k, flat.numel())


def sce(base, tensors, int8_mask=False, select_topk=1.0):
    """sce.py's sce_merge: task vectors, variance top-k mask, sum sign consensus, weights by
    mean square (divided by their sum as a Python float)."""
    ties = Ties(np.zeros(tuple(base.shape), dtype=bool), whole=True)
    if not tensors:
        return base, ties
    mask_dtype = torch.int8 if int8_mask else base.dtype
    tvs = torch.stack([t - base for t in tensors], dim=0)
    if select_topk < 1:
        mask, ties.direct = sce_mask(tvs, select_topk, mask_dtype)
        tvs = tvs * mask.unsqueeze(0)
    erase = get_mask(tvs, "sum", mask_dtype)
    weights = mean(tvs ** 2, list(range(1, tvs.dim())))
    weight_sum = torch.sum(weights).item()
    if abs(weight_sum) < 1e-6:
        weights = div_scalar(torch.ones_like(weights), weights.shape[0])
    else:
        weights = div_scalar(weights, weight_sum)
    while weights.dim() < tvs.dim():
        weights = weights.unsqueeze(-1)
    erased = weights * erase
    merged = (tvs * erased).sum(dim=0)
    return base + merged / clamp(torch.sum(erased, dim=0), 1e-6), ties


def sce_merge(job, values, base):
    R.need_base("sce", values, base)
    int8_mask = bool(R.global_param(job, "int8_mask", False))
    select_topk = float(R.global_param(job, "select_topk", 1.0))
    return sce(values[base], [values[m] for m, _ in R.non_base(job, base)], int8_mask,
               select_topk)


# ---------------------------------------------------------------- multislerp, nuslerp

def multislerp(tensors, weight, base=None, normalize_weights=True, eps=1e-8):
    """multislerp.py: the weighted mean of the unit (task) vectors, normalised, moved along
    the weighted tangent, scaled by the weighted mean norm."""
    if len(tensors) == 1:
        return tensors[0]
    x = torch.stack(tensors, dim=0)
    if base is not None:
        x -= base
    flat = x.view(x.shape[0], -1)
    w = torch.tensor(weight, dtype=x.dtype)
    if normalize_weights:
        w = w / w.sum()
    norms = torch.norm(flat, dim=-1, keepdim=True)
    units = flat / (norms + eps)
    mean = (units * w.view(-1, 1)).sum(0)
    mean_norm = torch.norm(mean)
    if mean_norm < eps:
        if x.shape[0] != 2:
            raise R.Unsupported("multislerp", "multislerp: the weighted mean of the unit "
                                              "vectors is zero (antipodal inputs)")
        res = (x[0] * w[0] + x[1] * w[1]).view(x.shape[1:])
        return res + base if base is not None else res
    mean = mean / mean_norm
    dots = (units * mean).sum(-1, keepdim=True)
    tangent = (units - dots * mean) * w.view(-1, 1)
    tan = tangent.sum(0)
    tan_norm = torch.norm(tan) + eps
    result = mean * cos(tan_norm) + tan * (sin(tan_norm) / tan_norm)
    result = (result * (norms.squeeze(-1) * w).sum()).view(x.shape[1:])
    return result + base if base is not None else result


def multislerp_merge(job, values, base):
    others = R.non_base(job, base)
    weights = [float(R.model_param(job, m, n, "weight", required=True)) for m, n in others]
    if not others:
        raise R.Unsupported("multislerp", "multislerp needs a model besides the base_model")
    normalize = bool(R.global_param(job, "normalize_weights", True))
    if len(others) > 1 and normalize and np.asarray(weights, dtype=np.float64).sum() == 0:
        raise R.Unsupported("weight", "multislerp: the weights sum to zero")
    return multislerp([values[m] for m, _ in others], weights, values.get(base), normalize,
                      float(R.global_param(job, "eps", 1e-8)))


def nuslerp(t, v0, v1, dim=-1, flatten=False, eps=1e-8):
    """nuslerp.py's nuslerp: slerp of the vectors along the last dim (dim 0 moved last, or
    the whole tensor flattened); (nearly) colinear vectors interpolated linearly."""
    out_shape = v0.shape

    def unit(x):
        return x / clamp(torch.norm(x, dim=-1, keepdim=True), 1e-7)

    if flatten:
        v0, v1 = v0.view(-1), v1.view(-1)
    elif dim != -1:
        v0, v1 = v0.transpose(dim, -1), v1.transpose(dim, -1)
    cos_theta = torch.sum(unit(v0) * unit(v1), dim=-1, keepdim=True)
    theta = acos(clamp(cos_theta, -1, 1))
    sin_theta = sin(theta)
    colinear = (sin_theta.abs() < eps).squeeze()
    res = (sin(mul_scalar(theta, 1 - t)) * v0 + sin(mul_scalar(theta, t)) * v1) / sin_theta
    res[colinear] = mul_scalar(v0[colinear], 1 - t) + mul_scalar(v1[colinear], t)
    if dim != -1 and not flatten:
        res = res.transpose(dim, -1)
    return res.view(out_shape)


def nuslerp_merge(job, values, base):
    """NuSlerpTask.execute: t = w1 / (w0 + w1) (0.5 when |w0 + w1| < 1e-6), the first and
    second model in merge order; with a base, of the task vectors, added to it."""
    if len(job.sources) == 1:
        return values[job.sources[0][0]]
    if base is not None and (len(job.sources) != 3 or base not in values):
        raise R.Unsupported("nuslerp", "nuslerp merges two models besides the base_model")
    others = R.non_base(job, base)
    if len(others) != 2:
        raise R.Unsupported("nuslerp", "nuslerp merges exactly two models (and a base_model)")
    w = [float(R.model_param(job, m, n, "weight", required=True)) for m, n in others]
    t = 0.5 if abs(sum(w)) < 1e-6 else w[1] / sum(w)
    dim = 0 if R.global_param(job, "nuslerp_row_wise", False) else -1
    flatten = bool(R.global_param(job, "nuslerp_flatten", True))
    v0, v1 = values[others[0][0]], values[others[1][0]]
    if base is None:
        return nuslerp(t, v0, v1, dim, flatten)
    b = values[base]
    return b + nuslerp(t, v0 - b, v1 - b, dim, flatten)


# ---------------------------------------------------------------- karcher

def _karcher_step(u, alphas, units, tol):
    """One iteration's tangent T: sum of a (theta / sin theta) (u_i - dot u) over the units
    farther than tol from u; dot and theta are 0-dim tensors of u's dtype."""
    tangent = torch.zeros_like(u)
    for a, ui in zip(alphas, units):
        dot = clamp(half_safe(torch.dot, u.flatten(), ui.flatten()), -1.0, 1.0)
        theta = acos(dot)
        if theta.item() < tol:
            continue
        tangent += mul_scalar(theta / sin(theta), a) * (ui - dot * u)
    return tangent


def karcher(tensors, alphas, max_iter=10, tol=1e-5):
    """karcher.py's karcher_merge_tensors: norms in float32 (0-dim tensors, or Python floats
    by .item(); a division by either reads it in float32, as torch 2 does), units in each
    input's dtype, the mean iterated in the first unit's dtype, scaled by sum(alpha_i n_i)."""
    if len(tensors) == 1:
        return tensors[0]
    norms, units = [], []
    for t in tensors:
        n = torch.linalg.norm(t.float())
        norms.append(n.item())
        units.append(torch.zeros_like(t) if n.item() == 0.0 else div_scalar(t, n).to(t.dtype))
    valid = [i for i, n in enumerate(norms) if n > tol]
    if not valid:
        return torch.zeros_like(tensors[0])
    alpha_sum = sum(alphas[i] for i in valid)
    valid_alphas = [alphas[i] / alpha_sum for i in valid]
    valid_units = [units[i] for i in valid]
    u = torch.zeros_like(valid_units[0])
    for a, ui in zip(valid_alphas, valid_units):
        u += mul_scalar(ui, a)
    norm_u = torch.linalg.norm(u.float()).item()
    u = valid_units[0].clone() if norm_u < tol else div_scalar(u, norm_u).to(u.dtype)
    for _ in range(max_iter):
        tangent = _karcher_step(u, valid_alphas, valid_units, tol)
        norm_t = torch.linalg.norm(tangent.float())
        if norm_t.item() < tol:
            break
        step = div_scalar(tangent, norm_t)   # T / norm_T, norm_T a float32 0-dim tensor
        u = (torch.cos(norm_t) * u + torch.sin(norm_t) * step).to(u.dtype)
        u_norm = torch.linalg.norm(u.float())
        if u_norm.item() > tol:
            u = div_scalar(u, u_norm).to(u.dtype)
    s = 0.0
    for a, n in zip(alphas, norms):
        s += a * n
    return mul_scalar(u, s)


def karcher_merge(job, values, base):
    """KarcherTask: every input (the base too) with alpha 1/n, in merge order."""
    max_iter = R.global_param(job, "max_iter", 10)
    if not float(max_iter).is_integer():   # pydantic's int: whole numbers only
        raise R.Unsupported("max_iter", f"karcher: max_iter {max_iter!r} is not an integer")
    tol = float(R.global_param(job, "tol", 1e-5))
    tensors = [values[m] for m, _ in job.sources]
    return karcher(tensors, [1.0 / len(tensors)] * len(tensors), int(float(max_iter)), tol)


KERNELS = {"linear": linear_merge, "slerp": slerp_merge, "model_stock": model_stock_merge,
           "passthrough": passthrough_merge, "nearswap": nearswap_merge, "sce": sce_merge,
           "multislerp": multislerp_merge, "nuslerp": nuslerp_merge, "karcher": karcher_merge,
           **torch_ram_fusion.KERNELS}


def merge_tensor(method, job, values, base):
    """(merged tensor, ties or None) of one output tensor by a method other than the
    generalized task arithmetic family."""
    if method not in KERNELS:
        raise R.Unsupported(method, f"{method} has no torch kernel here")
    out = KERNELS[method](job, values, base)
    return out if isinstance(out, tuple) else (out, None)
