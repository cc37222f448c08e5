"""A numpy reference of mergekit's merge for the subset `compatbench merge` computes.

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit, LGPL-3.0) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95:
  mergekit/config.py          evaluate_setting, ConfigReader.parameter (precedence)
  mergekit/plan.py            normalize_config, plan_module/plan_slice/plan_layer/plan_tensor
  mergekit/merge.py           _model_out_config, _get_donor_model (config.json, donor files)
  mergekit/merge_methods/     registry.py, generalized_task_arithmetic.py, linear.py,
                              slerp.py, model_stock.py, passthrough.py; and, merged when
                              enabled in ENABLED_NEW_METHODS (all are): easy_define.py,
                              nearswap.py, sce.py, multislerp.py, nuslerp.py, karcher.py,
                              model_stock.py's filter_wise, ram.py and arcee_fusion.py (their
                              kernels in reference_ram_fusion.py)
  mergekit/io/tasks.py        SaveTensor (the written dtype: out_dtype, else the result's)
  mergekit/sparsify.py        magnitude, magnitude_outliers, bernoulli, della_magprune
  mergekit/_data/architectures/llama.json   the tensors of a Llama checkpoint

    merge(config_dict, resolve_path) -> Merged(tensors, dtypes, num_hidden_layers, donor,
                                               torch_dtype)

`config_dict` is the parsed YAML; `resolve_path(model_name)` gives the checkpoint folder of
a name in it. The result's tensors are float64 and unrounded; `dtypes` gives each one's
output safetensors dtype: `out_dtype`, else the dtype of the tensor mergekit's method
returns (the inputs as loaded, converted to `dtype` when it is set, promoted as torch
promotes them: see result_dtype). A configuration outside the subset raises Unsupported,
whose `key` is the method or key name the refusal is about.

Where compatbench differs from mergekit, on purpose:
  - everything is computed in float64 from the stored values and rounded once to the output
    dtype (mergekit converts the inputs to `dtype` first and computes in it);
  - DARE's and DELLA's random masks come from compatbench's seeded hash (mask_uniforms),
    not torch's RNG;
  - a task-arithmetic-family model without a `weight` gets 1.0 (mergekit requires one);
  - ties in |tau| go to the lower flat index (torch's argsort/sort are not stable);
  - magnitude pruning that keeps k = int(density * n) = 0 coordinates keeps none
    (mergekit asserts k > 0);
  - in the methods added later (ENABLED_NEW_METHODS): the inputs that
    easy_define.py takes from a set (nearswap, sce, multislerp, ram, ramplus_tl) are in
    merge order (only rounding depends on it); multislerp's normalize_weights with weights
    summing to 0 (mergekit divides by 0) is refused; arcee_fusion takes its quantiles over
    all of a tensor's values, also above 10^6 values (mergekit sorts 10^6 of them sampled
    at random there).
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from compatnets.safetensors import read, shard_files
# the kernels of ram, ramplus_tl and arcee_fusion (re-exported: R.ram, R.arcee_fusion, ...)
from reference_ram_fusion import (arcee_fusion, fusion_importance, fusion_threshold,  # noqa: F401
                                  quantile_index, ram, ram_vectors, ramplus_lambda,
                                  ramplus_tl, softmax)

MERGEKIT_COMMIT = "a6e402884ba9bc30da7f23e8304a35f19485de95"

# Generalized task arithmetic (registry.py): consensus, sparsification, normalize, rescale.
GTA_METHODS = {
    "task_arithmetic": (None, None, False, False),
    "ties": ("sum", "magnitude", True, False),
    "dare_ties": ("sum", "random", False, True),
    "dare_linear": (None, "random", False, True),
    "breadcrumbs": (None, "magnitude_outliers", False, False),
    "breadcrumbs_ties": ("sum", "magnitude_outliers", False, False),
    "della": ("sum", "della_magprune", True, True),
    "della_linear": (None, "della_magprune", False, True),
}
OTHER_METHODS = ("linear", "slerp", "model_stock", "passthrough")
# mergekit's common.dtype_from_name (int64 aside) -> safetensors dtype.
DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}

# llama.json: pre-weights, a layer's weights (in order), post-weights.
PRE_WEIGHTS = ["model.embed_tokens.weight"]
LAYER_WEIGHTS = ["input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                 "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                 "post_attention_layernorm.weight", "mlp.up_proj.weight",
                 "mlp.gate_proj.weight", "mlp.down_proj.weight"]
POST_WEIGHTS = ["model.norm.weight", "lm_head.weight"]
OPTIONAL_WEIGHTS = {"lm_head.weight"}

U64 = np.uint64
MASK64 = (1 << 64) - 1


class Unsupported(Exception):
    """A configuration compatbench refuses; `key` names the method or key at fault."""

    def __init__(self, key, message):
        super().__init__(message)
        self.key = key


@dataclass
class Merged:
    tensors: dict = field(default_factory=dict)   # output name -> float64 array
    dtypes: dict = field(default_factory=dict)    # output name -> "BF16" | "F16" | "F32"
    num_hidden_layers: int = 0                    # config.json of the output
    donor: str = ""                               # model whose config and tokenizer are copied
    torch_dtype: str = ""                         # config.json's torch_dtype of the output


# ---------------------------------------------------------------- checkpoints

_CHECKPOINTS = {}


@dataclass
class Checkpoint:
    tensors: dict   # name -> float64 array of the stored values
    dtypes: dict    # name -> stored safetensors dtype
    config: dict    # config.json


def load_checkpoint(path):
    """A checkpoint folder (single file or sharded), read once and cached."""
    path = os.path.abspath(path)
    if path not in _CHECKPOINTS:
        tensors, dtypes = {}, {}
        for f in shard_files(path):
            r = read(f)
            tensors.update({n: t.astype(np.float64) for n, t in r.tensors.items()})
            dtypes.update(r.dtypes)
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        _CHECKPOINTS[path] = Checkpoint(tensors, dtypes, config)
    return _CHECKPOINTS[path]


# ---------------------------------------------------------------- parameters (config.py)

def is_number(x):
    return isinstance(x, (int, float))   # bool is an int, as in evaluate_setting


def evaluate_setting(tensor_name, setting, t=0.0):
    """mergekit's evaluate_setting: a scalar; a gradient (numbers, interpolated at t); a
    list of scalars (indexed at t); or a list of {filter, value} (the first whose filter is
    absent, '*', or a substring of the tensor name; its value evaluated in turn). None when
    no filter matches."""
    if isinstance(setting, (bool, int, float, str)):
        return setting
    if not isinstance(setting, list):
        raise Unsupported("parameters", f"unexpected parameter setting {setting!r}")
    if all(is_number(e) for e in setting):
        scaled = t * (len(setting) - 1)
        i0 = int(scaled)
        i1 = min(len(setting) - 1, i0 + 1)
        frac = scaled - i0
        return (1 - frac) * setting[i0] + frac * setting[i1]
    if all(isinstance(e, (bool, int, float, str)) for e in setting):
        return setting[int(t * (len(setting) - 1))]
    for cond in setting:
        if not isinstance(cond, dict) or "value" not in cond:
            raise Unsupported("filter", f"a parameter list mixes filters and values: {setting!r}")
        flt = cond.get("filter")
        if flt is None or flt == "*" or (tensor_name and flt in tensor_name):
            return evaluate_setting(tensor_name, cond["value"], t)
    return None


@dataclass
class Reader:
    """ConfigReader for one output slice at one t."""
    config: dict
    slice: dict
    t: float

    def parameter(self, name, tensor_name, model=None, default=None, required=False):
        """Per model: the source's parameters, the slice's, the global ones, the default.
        Global (model None): the slice's, the global ones, the default."""
        levels = []
        if model is not None:
            levels += [s.get("parameters") for s in self.slice["sources"] if s["model"] == model]
        levels += [self.slice.get("parameters"), self.config.get("parameters")]
        for params in levels:
            if params and name in params:
                value = evaluate_setting(tensor_name, params[name], self.t)
                if value is not None:
                    return value
        if required:
            raise Unsupported(name, f"missing required parameter {name}"
                                    + (f" for {model}.{tensor_name}" if model else ""))
        return default


# ---------------------------------------------------------------- plan (plan.py)

@dataclass
class TensorJob:
    out_name: str
    sources: list    # [(model name, input tensor name)], in merge order, one per model
    reader: Reader


def num_layers(resolve_path, model):
    return int(load_checkpoint(resolve_path(model)).config["num_hidden_layers"])


def normalized_slices(config, resolve_path):
    """normalize_config: `models:` becomes one slice over every model's layers, the base
    appended when it is set and not listed."""
    if config.get("modules"):
        raise Unsupported("modules", "the modules: syntax is not supported")
    if bool(config.get("models")) == bool(config.get("slices")):
        raise Unsupported("models", "exactly one of 'models' or 'slices' must be present")
    if config.get("slices"):
        return [dict(s) for s in config["slices"]]
    base = config.get("base_model")
    sources = [{"model": m["model"], "layer_range": [0, num_layers(resolve_path, m["model"])],
                "parameters": m.get("parameters")} for m in config["models"]]
    if base and not any(m["model"] == base for m in config["models"]):
        sources.append({"model": base, "layer_range": [0, num_layers(resolve_path, base)]})
    return [{"sources": sources}]


def dedup(pairs):
    """dict(zip(models, weights_in)): one entry per model, at its first position, holding
    its last input name."""
    out = {}
    for model, name in pairs:
        out[model] = name
    return list(out.items())


def plan(config, slices):
    """Every output tensor with its sources and reader, in mergekit's order."""
    jobs = []
    first, last = slices[0], slices[-1]
    for name in PRE_WEIGHTS:
        jobs.append(TensorJob(name, dedup((s["model"], name) for s in first["sources"]),
                              Reader(config, first, 0.0)))
    out_layer = 0
    for sl in slices:
        lengths = {s["layer_range"][1] - s["layer_range"][0] for s in sl["sources"]}
        if len(lengths) != 1:
            raise Unsupported("layer_range", "all inputs to a slice must have the same number "
                                             "of layers")
        n = lengths.pop()
        for idx in range(n):
            reader = Reader(config, sl, idx / (n - 1) if n > 1 else 1.0)
            for w in LAYER_WEIGHTS:
                pairs = [(s["model"], f"model.layers.{s['layer_range'][0] + idx}.{w}")
                         for s in sl["sources"]]
                jobs.append(TensorJob(f"model.layers.{out_layer}.{w}", dedup(pairs), reader))
            out_layer += 1
    for name in POST_WEIGHTS:
        # zip([weight] * len(first sources), last sources): truncated to the first's count.
        models = [s["model"] for s in last["sources"]][:len(first["sources"])]
        jobs.append(TensorJob(name, dedup((m, name) for m in models), Reader(config, last, 0.0)))
    return jobs, out_layer


# ---------------------------------------------------------------- seeded masks

def fnv1a64(text):
    h = 0xcbf29ce484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & MASK64
    return h


def splitmix64(x):
    """splitmix64 of a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + U64(0x9e3779b97f4a7c15)
        x = (x ^ (x >> U64(30))) * U64(0xbf58476d1ce4e5b9)
        x = (x ^ (x >> U64(27))) * U64(0x94d049bb133111eb)
        return x ^ (x >> U64(31))


def splitmix64_int(x):
    return int(splitmix64(np.array([x & MASK64], dtype=U64))[0])


def mask_uniforms(seed, name, index, size):
    """u_j in [0, 1) for coordinate j (flat, row-major) of task vector `index` (0-based, in
    merge order, the base excluded) of output tensor `name`:
    unit_double(splitmix64(stream + j)), stream = seed ^ fnv1a64(name) ^ splitmix64(index+1)."""
    stream = (seed & MASK64) ^ fnv1a64(name) ^ splitmix64_int(index + 1)
    with np.errstate(over="ignore"):
        x = U64(stream) + np.arange(size, dtype=U64)
    bits = splitmix64(x)
    return (bits >> U64(11)).astype(np.float64) * 2.0 ** -53


# ---------------------------------------------------------------- sparsify.py

def rescaled(tau, mask, rescale):
    masked = tau * mask
    if not rescale:
        return masked
    before, after = np.abs(tau).sum(), np.abs(masked).sum()
    if before < 1e-7 or after < 1e-7:
        return masked
    return masked * (before / after)


def descending_rank(tau):
    """Rank of every flat coordinate by |tau|, largest first (0-based; ties: lower index
    first)."""
    order = np.argsort(-np.abs(tau).ravel(), kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank.reshape(tau.shape)


def magnitude(tau, density, rescale):
    k = int(density * tau.size)
    mask = (descending_rank(tau) < k).astype(np.float64)
    return rescaled(tau, mask, rescale)


def magnitude_outliers(tau, density, gamma, rescale):
    n = tau.size
    target, n_top = int(density * n), int(gamma * n)
    n_bot = n - target - n_top
    if n_bot < 0:
        n_top += n_bot
        n_bot = 0
    rank = descending_rank(tau)
    if n_top == 0:   # indices[n_bot:-0] is empty: nothing is kept
        mask = np.zeros(tau.shape)
    else:
        mask = ((rank >= n_top) & (rank < n - n_bot)).astype(np.float64)
    return rescaled(tau, mask, rescale)


def random_mask(tau, density, rescale, seed, name, index):
    keep = mask_uniforms(seed, name, index, tau.size).reshape(tau.shape) < density
    return rescaled(tau, keep.astype(np.float64), rescale)


def della_probabilities(tau, density, epsilon):
    """Per row (a 1-D tensor is one row): p = (density - eps) + 2 eps (rank - 1)/(cols - 1),
    rank the 1-based ascending rank of |tau| in the row (ties: lower index, lower rank)."""
    rows = tau.reshape(1, -1) if tau.ndim < 2 else tau.reshape(tau.shape[0], -1)
    cols = rows.shape[1]
    order = np.argsort(np.abs(rows), axis=1, kind="stable")
    rank = np.empty(rows.shape)
    np.put_along_axis(rank, order, np.arange(1, cols + 1, dtype=np.float64)[None, :].repeat(
        rows.shape[0], axis=0), axis=1)
    if cols == 1:
        return np.full(tau.shape, density - epsilon)
    p = (density - epsilon) + 2.0 * epsilon * (rank - 1.0) / (cols - 1)
    return p.reshape(tau.shape)


def della(tau, density, epsilon, rescale, seed, name, index):
    if density <= 0:
        return np.zeros_like(tau)
    if density + epsilon >= 1 or density - epsilon <= 0:
        raise Unsupported("epsilon", f"della: density {density} +/- epsilon {epsilon} must lie "
                                     f"in (0, 1) ({name})")
    p = della_probabilities(tau, density, epsilon)
    keep = mask_uniforms(seed, name, index, tau.size).reshape(tau.shape) < p
    return rescaled(tau, keep.astype(np.float64), rescale)


def sparsify(method, tau, info, rescale, seed, name, index):
    density = float(info["density"])
    if density >= 1:
        return tau
    if method == "magnitude":
        return magnitude(tau, density, rescale)
    if method == "magnitude_outliers":
        return magnitude_outliers(tau, density, float(info["gamma"]), rescale)
    if method == "random":
        return random_mask(tau, density, rescale, seed, name, index)
    return della(tau, density, float(info["epsilon"]), rescale, seed, name, index)


# ---------------------------------------------------------------- merge methods

def global_param(job, name, default=None, required=False):
    return job.reader.parameter(name, job.out_name, default=default, required=required)


def model_param(job, model, in_name, name, default=None, required=False):
    return job.reader.parameter(name, in_name, model=model, default=default, required=required)


def gta_merge(method, job, values, base):
    """generalized_task_arithmetic.py: task vectors, sparsified, weighted, sign consensus,
    normalised, scaled by lambda, added to the base."""
    consensus, sparsification, d_normalize, d_rescale = GTA_METHODS[method]
    if base is None or base not in [m for m, _ in job.sources]:
        raise Unsupported("base_model", f"{method} needs a base_model among its inputs")
    normalize = global_param(job, "normalize", d_normalize)
    rescale = global_param(job, "rescale", d_rescale)
    lam = float(global_param(job, "lambda", 1.0))
    seed = int(global_param(job, "seed", 0))
    theta0 = values[base]
    deltas, weights = [], []
    for model, in_name in job.sources:
        if model == base:
            continue
        info = {"density": model_param(job, model, in_name, "density", 1.0),
                "gamma": model_param(job, model, in_name, "gamma", 0.01),
                "epsilon": model_param(job, model, in_name, "epsilon", 0.15)}
        tau = values[model] - theta0
        if sparsification:
            tau = sparsify(sparsification, tau, info, rescale, seed, job.out_name, len(deltas))
        deltas.append(tau)
        weights.append(float(model_param(job, model, in_name, "weight", 1.0)))
    if not deltas:
        return theta0
    wd = [w * d for w, d in zip(weights, deltas)]
    if consensus:
        total = sum(wd)
        majority = np.where(total >= 0, 1.0, -1.0)
        masks = [(np.sign(x) == majority).astype(np.float64) for x in wd]
        mixed = sum(x * m for x, m in zip(wd, masks))
        divisor = sum(w * m for w, m in zip(weights, masks))
        divisor = np.where(divisor == 0, 1.0, divisor)
    else:
        mixed = sum(wd)
        divisor = sum(weights)
        divisor = 1.0 if abs(divisor) < 1e-8 else divisor
    if normalize:
        mixed = mixed / divisor
    if lam != 1:
        mixed = mixed * lam
    return theta0 + mixed


def linear_merge(job, values):
    weights = [float(model_param(job, m, n, "weight", required=True)) for m, n in job.sources]
    res = sum(w * values[m] for w, (m, _) in zip(weights, job.sources))
    if global_param(job, "normalize", True):
        res = res / sum(weights)
    return res


def slerp(t, v0, v1, dot_threshold=0.9995, eps=1e-8):
    """slerp.py's slerp, in float64."""
    def normalized(v):
        norm = np.linalg.norm(v)
        return v / norm if norm > eps else v
    dot = np.sum(normalized(v0) * normalized(v1))
    if np.abs(dot) > dot_threshold:
        return (1 - t) * v0 + t * v1
    theta_0 = np.arccos(dot)
    sin_theta_0 = np.sin(theta_0)
    theta_t = theta_0 * t
    s0 = np.sin(theta_0 - theta_t) / sin_theta_0
    s1 = np.sin(theta_t) / sin_theta_0
    return s0 * v0 + s1 * v1


def slerp_merge(job, values, base):
    others = [m for m, _ in job.sources if m != base]
    if base is None or len(others) != 1 or len(job.sources) != 2:
        raise Unsupported("slerp", "slerp merges exactly one model with the base_model")
    t = float(global_param(job, "t", required=True))
    return slerp(t, values[base], values[others[0]])


def model_stock_merge(job, values, base):
    filter_wise = global_param(job, "filter_wise", False)
    if filter_wise and "model_stock_filter_wise" not in ENABLED_NEW_METHODS:
        raise Unsupported("filter_wise", "model_stock with filter_wise: true is not supported")
    ws = [values[m] for m, _ in job.sources if m != base]
    if base is None or base not in values or len(ws) < 2:
        raise Unsupported("model_stock", "model_stock needs a base_model and two or more "
                                         "other models")
    w0 = values[base]
    if filter_wise:
        return model_stock_filter_wise(w0, ws)
    offsets = [(w - w0).ravel() for w in ws]
    cos = []
    for i in range(len(offsets)):
        for j in range(i + 1, len(offsets)):
            norm = np.linalg.norm(offsets[i]) * np.linalg.norm(offsets[j])
            cos.append(np.clip(offsets[i] @ offsets[j] / max(norm, 1e-6), -1.0, 1.0))
    c = np.mean(cos)
    n = len(ws)
    t = n * c / (1 + (n - 1) * c)
    return t * (sum(ws) / n) + (1 - t) * w0


def passthrough_merge(job, values):
    if len(job.sources) != 1:
        raise Unsupported("passthrough", "passthrough takes exactly one model per tensor")
    model, in_name = job.sources[0]
    scale = model_param(job, model, in_name, "scale", None)
    return values[model] if scale is None else values[model] * float(scale)


# ---------------------------------------------------------------- methods added later

# Kernels re-implemented below (or in reference_ram_fusion.py) and dispatched by merge_tensor,
# refused (check_supported, model_stock_merge) unless their name is in ENABLED_NEW_METHODS:
# the reference refuses what compatbench's C++ side refuses (check_configs.py wants both to
# refuse the same fixtures); today it merges all of them.
NEW_METHODS = ("nearswap", "sce", "multislerp", "nuslerp", "karcher", "arcee_fusion", "ram",
               "ramplus_tl")
ENABLED_NEW_METHODS = {"nearswap", "sce", "multislerp", "nuslerp", "karcher",
                       "model_stock_filter_wise", "arcee_fusion", "ram", "ramplus_tl"}


def non_base(job, base):
    """The inputs other than the base, in merge order. easy_define.py takes them from a set
    (iteration order undefined); the order only changes rounding in the methods below."""
    return [(m, n) for m, n in job.sources if m != base]


def need_base(method, values, base):
    if base is None or base not in values:
        raise Unsupported("base_model", f"{method} needs a base_model among its inputs")


def nearswap(a, b, t):
    """merge_methods/nearswap.py: b where |a - b| <= t, else moved t toward b from a."""
    weight = np.clip(t / np.maximum(np.abs(a - b), 1e-6), 0.0, 1.0)
    return weight * b + (1 - weight) * a


def nearswap_merge(job, values, base):
    need_base("nearswap", values, base)
    t = float(global_param(job, "t", required=True))
    others = non_base(job, base)
    if not others:
        return values[base]
    if len(others) != 1:
        raise Unsupported("nearswap", "nearswap merges exactly one model with the base_model")
    return nearswap(values[base], values[others[0][0]], t)


def sce_mask(tvs, density):
    """sce.py's sce_mask: the top k = int(count_nonzero(var) * density) coordinates by the
    variance across task vectors (torch.var, unbiased=False); ties: lower flat index. The
    product is torch's int64 tensor times a Python float: float32."""
    if density <= 0:
        return np.zeros(tvs.shape[1:])
    if density >= 1:
        return np.ones(tvs.shape[1:])
    # torch.var gives exactly 0 where the task vectors agree
    var = np.where(np.all(tvs == tvs[:1], axis=0), 0.0, tvs.var(axis=0))
    k = int(np.float32(np.count_nonzero(var)) * np.float32(density))
    return (descending_rank(var) < k).astype(np.float64)


def sce_weight(tvs):
    """sce.py's sce_weight: each task vector's mean square, over their sum (uniform when the
    sum is below 1e-6)."""
    weights = np.mean(tvs.reshape(len(tvs), -1) ** 2, axis=1)
    total = weights.sum()
    if abs(total) < 1e-6:
        return np.full(len(tvs), 1.0 / len(tvs))
    return weights / total


def sce(base_value, tensors, select_topk=1.0):
    """merge_methods/sce.py: variance top-k mask, sum sign consensus
    (generalized_task_arithmetic.get_mask, "sum"), weights by mean square."""
    if not tensors:
        return base_value
    tvs = np.stack([t - base_value for t in tensors])
    if select_topk < 1:
        tvs = tvs * sce_mask(tvs, select_topk)[None]
    majority = np.where(tvs.sum(axis=0) >= 0, 1.0, -1.0)
    erase = (np.sign(tvs) == majority).astype(np.float64)
    erased = sce_weight(tvs).reshape((-1,) + (1,) * (tvs.ndim - 1)) * erase
    merged = (tvs * erased).sum(axis=0)
    return base_value + merged / np.maximum(erased.sum(axis=0), 1e-6)


def sce_merge(job, values, base):
    need_base("sce", values, base)
    global_param(job, "int8_mask", False)   # the masks' dtype only: no effect on values
    select_topk = float(global_param(job, "select_topk", 1.0))
    return sce(values[base], [values[m] for m, _ in non_base(job, base)], select_topk)


def multislerp(tensors, weights, base_value=None, normalize_weights=True, eps=1e-8):
    """merge_methods/multislerp.py: the weighted mean of the unit vectors (of the task vectors
    with a base), normalised, mapped back from its tangent space, scaled by the weighted mean
    norm."""
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise Unsupported("multislerp", "multislerp needs a model besides the base_model")
    x = np.stack(tensors)
    x = x - base_value if base_value is not None else x
    flat = x.reshape(len(x), -1)
    w = np.asarray(weights, dtype=np.float64)
    if normalize_weights:
        if w.sum() == 0:   # mergekit divides by zero: NaN or infinite output
            raise Unsupported("weight", "multislerp: the weights sum to zero")
        w = w / w.sum()
    norms = np.linalg.norm(flat, axis=1, keepdims=True)
    units = flat / (norms + eps)
    mean = (units * w[:, None]).sum(axis=0)
    mean_norm = np.linalg.norm(mean)
    if mean_norm < eps:
        if len(x) != 2:
            raise Unsupported("multislerp", "multislerp: the weighted mean of the unit "
                                            "vectors is zero (antipodal inputs)")
        res = x[0] * w[0] + x[1] * w[1]
    else:
        mean = mean / mean_norm
        tangent = units - (units @ mean)[:, None] * mean
        tan = (tangent * w[:, None]).sum(axis=0)
        tan_norm = np.linalg.norm(tan) + eps
        res = (mean * np.cos(tan_norm) + tan * (np.sin(tan_norm) / tan_norm)) * (norms[:, 0] @ w)
        res = res.reshape(x.shape[1:])
    return res + base_value if base_value is not None else res


def multislerp_merge(job, values, base):
    others = non_base(job, base)
    weights = [float(model_param(job, m, n, "weight", required=True)) for m, n in others]
    return multislerp([values[m] for m, _ in others], weights,
                      values.get(base),
                      bool(global_param(job, "normalize_weights", True)),
                      float(global_param(job, "eps", 1e-8)))


def nuslerp(t, v0, v1, row_wise=False, flatten=True, eps=1e-8):
    """nuslerp.py's nuslerp: slerp of every vector along the last dim (row_wise: dim 0, i.e.
    of the columns of a matrix; flatten: of the whole tensor); units with norms clamped to
    1e-7; (nearly) colinear vectors, |sin theta| < eps, interpolated linearly."""
    swap = row_wise and not flatten and v0.ndim > 1

    def vectors(v):
        v = np.swapaxes(v, 0, -1) if swap else v
        return v.reshape(1, -1) if flatten or v.ndim < 2 else v.reshape(-1, v.shape[-1])

    a, b = vectors(v0), vectors(v1)
    units = [x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-7) for x in (a, b)]
    theta = np.arccos(np.clip(np.sum(units[0] * units[1], axis=-1, keepdims=True), -1, 1))
    sin = np.sin(theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = (np.sin((1 - t) * theta) * a + np.sin(t * theta) * b) / sin
    res = np.where(np.abs(sin) < eps, (1 - t) * a + t * b, res)
    if swap:
        return np.swapaxes(res.reshape(np.swapaxes(v0, 0, -1).shape), 0, -1)
    return res.reshape(v0.shape)


def nuslerp_merge(job, values, base):
    """NuSlerpTask.execute: t = w1 / (w0 + w1) (0.5 when |w0 + w1| < 1e-6), the first and
    second model in merge order; with a base, of the task vectors, added to it."""
    if len(job.sources) == 1:
        return values[job.sources[0][0]]
    if base is not None and (len(job.sources) != 3 or base not in values):
        raise Unsupported("nuslerp", "nuslerp merges two models besides the base_model")
    others = non_base(job, base)
    if len(others) != 2:
        raise Unsupported("nuslerp", "nuslerp merges exactly two models (and a base_model)")
    w = [float(model_param(job, m, n, "weight", required=True)) for m, n in others]
    t = 0.5 if abs(w[0] + w[1]) < 1e-6 else w[1] / (w[0] + w[1])
    row_wise = bool(global_param(job, "nuslerp_row_wise", False))
    flatten = bool(global_param(job, "nuslerp_flatten", True))
    v0, v1 = values[others[0][0]], values[others[1][0]]
    if base is None:
        return nuslerp(t, v0, v1, row_wise, flatten)
    b = values[base]
    return b + nuslerp(t, v0 - b, v1 - b, row_wise, flatten)


def karcher(tensors, alphas, max_iter=10, tol=1e-5):
    """karcher.py's karcher_merge_tensors: the Riemannian mean of the unit vectors (norms
    above tol), by at most max_iter steps, times sum(alpha_i * norm_i) over all inputs."""
    if len(tensors) == 1:
        return tensors[0]
    norms = [float(np.linalg.norm(t)) for t in tensors]
    valid = [i for i, n in enumerate(norms) if n > tol]
    if not valid:
        return np.zeros_like(tensors[0])
    a_sum = sum(alphas[i] for i in valid)
    weighted = [(alphas[i] / a_sum, tensors[i].ravel() / norms[i]) for i in valid]
    u = sum(a * ui for a, ui in weighted)
    norm_u = np.linalg.norm(u)
    u = weighted[0][1].copy() if norm_u < tol else u / norm_u
    for _ in range(max_iter):
        step = np.zeros_like(u)
        for a, ui in weighted:
            dot = np.clip(u @ ui, -1.0, 1.0)
            theta = np.arccos(dot)
            if theta >= tol:
                step = step + a * (theta / np.sin(theta)) * (ui - dot * u)
        norm_step = np.linalg.norm(step)
        if norm_step < tol:
            break
        u = np.cos(norm_step) * u + np.sin(norm_step) * (step / norm_step)
        norm_u = np.linalg.norm(u)
        if norm_u > tol:
            u = u / norm_u
    return sum(a * n for a, n in zip(alphas, norms)) * u.reshape(tensors[0].shape)


def karcher_merge(job, values):
    """KarcherTask: every input (the base too, an input like the others) with alpha 1/n, in
    merge order; per-model parameters are not read."""
    max_iter = global_param(job, "max_iter", 10)
    if not float(max_iter).is_integer():   # pydantic's int: whole numbers only
        raise Unsupported("max_iter", f"karcher: max_iter {max_iter!r} is not an integer")
    max_iter = int(float(max_iter))
    tol = float(global_param(job, "tol", 1e-5))
    tensors = [values[m] for m, _ in job.sources]
    return karcher(tensors, [1.0 / len(tensors)] * len(tensors), max_iter, tol)


def arcee_fusion_merge(job, values, base):
    if base is None:
        raise Unsupported("base_model", "arcee_fusion needs a base_model")
    if len(job.sources) == 1:
        return values[job.sources[0][0]]
    if len(job.sources) != 2 or base not in values:
        raise Unsupported("arcee_fusion", "arcee_fusion merges exactly one model with the "
                                          "base_model")
    (other, _), = non_base(job, base)
    return arcee_fusion(values[base], values[other])


def ram_merge(job, values, base):
    """ram.py's ram (easy_define: the base required, the other models in merge order,
    `epsilon` a global parameter)."""
    need_base("ram", values, base)
    epsilon = float(global_param(job, "epsilon", 1e-5))
    return ram(values[base], [values[m] for m, _ in non_base(job, base)], epsilon)


def ramplus_tl_merge(job, values, base):
    """ram.py's ramplus_tl: as ram, with the global parameters `r` and `alpha`."""
    need_base("ramplus_tl", values, base)
    r, alpha, epsilon = (float(global_param(job, name, default)) for name, default in
                         (("r", 0.1), ("alpha", 0.2), ("epsilon", 1e-5)))
    return ramplus_tl(values[base], [values[m] for m, _ in non_base(job, base)], r, alpha,
                      epsilon)


def model_stock_filter_wise(w0, ws):
    """model_stock.py with filter_wise: t per row (a 1-D tensor is one row; the vectors along
    the last dim), from the mean pairwise cosine of the rows of the offsets."""
    rows = (lambda w: w.reshape(1, -1)) if w0.ndim == 1 else (lambda w: w)
    r0 = rows(w0)
    offsets = [rows(w) - r0 for w in ws]
    cos = []
    for i in range(len(offsets)):
        for j in range(i + 1, len(offsets)):
            norm = np.linalg.norm(offsets[i], axis=-1) * np.linalg.norm(offsets[j], axis=-1)
            dot = np.sum(offsets[i] * offsets[j], axis=-1)
            cos.append(np.clip(dot / np.maximum(norm, 1e-6), -1.0, 1.0))
    c = np.mean(cos, axis=0)[..., None]
    n = len(ws)
    t = n * c / (1 + (n - 1) * c)
    return (t * (sum(rows(w) for w in ws) / n) + (1 - t) * r0).reshape(w0.shape)


def merge_tensor(method, job, values, base):
    if method in GTA_METHODS:
        return gta_merge(method, job, values, base)
    if method == "linear":
        return linear_merge(job, values)
    if method == "slerp":
        return slerp_merge(job, values, base)
    if method == "model_stock":
        return model_stock_merge(job, values, base)
    if method == "karcher":
        return karcher_merge(job, values)
    new_kernels = {"nearswap": nearswap_merge, "sce": sce_merge, "multislerp": multislerp_merge,
                   "nuslerp": nuslerp_merge, "arcee_fusion": arcee_fusion_merge,
                   "ram": ram_merge, "ramplus_tl": ramplus_tl_merge}
    if method in new_kernels:
        return new_kernels[method](job, values, base)
    return passthrough_merge(job, values)


# ---------------------------------------------------------------- merge

# Methods whose torch arithmetic mixes the inputs as they are (torch.stack, a - b, a * w + b):
# their result has torch's promoted dtype. The generalized task arithmetic methods convert the
# models to the base's dtype first and cast back; slerp casts to its first input's; karcher's
# mean accumulates in its first input's; passthrough scales its one input. arcee_fusion's
# float32 mask (`.float()`) and ramplus_tl's float32 lambda_ promote their results to float32.
PROMOTING = {"linear", "multislerp", "model_stock", "nearswap", "sce", "nuslerp", "ram"}
WITH_FLOAT32 = {"arcee_fusion", "ramplus_tl"}


def promoted(dtypes):
    """torch.result_type of float tensors of these safetensors dtypes."""
    kinds = set(dtypes)
    if len(kinds) == 1:
        return kinds.pop()
    return "F64" if "F64" in kinds else "F32"   # F16 with BF16, or with F32: F32


def result_dtype(method, dtypes, base, first):
    """The dtype of the tensor mergekit's method returns (written so without out_dtype):
    `dtypes` is {model: dtype} of its inputs as loaded (`dtype` when set, else stored)."""
    if method == "multislerp" and base in dtypes and len(dtypes) == 2:
        return next(d for m, d in dtypes.items() if m != base)  # the one model, as it is
    if method in PROMOTING:
        return promoted(dtypes.values())
    if method in WITH_FLOAT32:   # one input: returned as it is (ramplus_tl: the base alone)
        return promoted(list(dtypes.values()) + ["F32"]) if len(dtypes) > 1 else dtypes[first]
    if method in ("karcher", "passthrough") or base not in dtypes:
        return dtypes[first]
    return dtypes[base]


def output_dtype_name(config):
    """config.json's torch_dtype (`out_dtype`, else `dtype`), or None."""
    name = config.get("out_dtype") or config.get("dtype")
    if name is None:
        return None
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name not in DTYPES:
        raise Unsupported("dtype", f"unsupported dtype {name!r}")
    return name


def dtype_setting(config, key):
    """The safetensors dtype the config's `key` names, or None: "dtype" (LoadTensor converts
    every input to it) or "out_dtype" (SaveTensor casts every result to it)."""
    name = config.get(key)
    return None if name is None else DTYPES[output_dtype_name({key: name})]


def donor_model(config, slices):
    return config.get("base_model") or slices[0]["sources"][0]["model"]


def check_supported(config):
    method = config.get("merge_method")
    enabled = method in NEW_METHODS and method in ENABLED_NEW_METHODS
    if method not in GTA_METHODS and method not in OTHER_METHODS and not enabled:
        raise Unsupported(str(method), f"merge method {method!r} is not supported")
    for key in ("tokenizer_source", "tokenizer", "chat_template"):
        if config.get(key) is not None:
            raise Unsupported(key, f"{key} is not supported")
    for sl in config.get("slices") or []:
        if sl.get("base_model") is not None:
            raise Unsupported("base_model", "a slice's own base_model is not supported")
    return method


def merge(config, resolve_path):
    """The merged model of a mergekit configuration (see the module's docstring)."""
    method = check_supported(config)
    dtype_name = output_dtype_name(config)
    load, cast = dtype_setting(config, "dtype"), dtype_setting(config, "out_dtype")
    slices = normalized_slices(config, resolve_path)
    base = config.get("base_model")
    jobs, layers = plan(config, slices)
    out = Merged()
    for job in jobs:
        ckpts = {m: load_checkpoint(resolve_path(m)) for m, _ in job.sources}
        present = [(m, n) for m, n in job.sources if n in ckpts[m].tensors]
        if job.out_name in OPTIONAL_WEIGHTS and not present:
            continue
        if len(present) != len(job.sources):
            missing = [f"{m}:{n}" for m, n in job.sources if (m, n) not in present]
            raise Unsupported("tensor", f"missing input tensors {missing}")
        values = {m: ckpts[m].tensors[n] for m, n in job.sources}
        out.tensors[job.out_name] = merge_tensor(method, job, values, base)
        loaded = {m: load or ckpts[m].dtypes[n] for m, n in job.sources}
        out.dtypes[job.out_name] = cast or result_dtype(method, loaded, base, job.sources[0][0])
    out.donor = donor_model(config, slices)
    donor_config = load_checkpoint(resolve_path(out.donor)).config
    # with slices: their lengths' sum; with models: the donor's, unchanged
    out.num_hidden_layers = (layers if config.get("slices")
                             else int(donor_config["num_hidden_layers"]))
    out.torch_dtype = dtype_name or donor_config.get("torch_dtype")
    return out
