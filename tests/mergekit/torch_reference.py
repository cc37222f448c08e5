"""A torch reference of mergekit's merge: mergekit's kernels in torch, in the dtype.

reference.py computes in float64 and rounds once; mergekit converts every input to the
configuration's `dtype` when it loads it and computes in that dtype with torch. This module
does what mergekit does, with torch's own operations in mergekit's order, so that its values
are exactly torch 2's (see "Which torch"). Everything that is not arithmetic (refusals,
normalize_config, the plan, parameter lookup, checkpoints, the seeded masks) is
reference.py's, so both plan alike.

Re-implemented (not copied) from mergekit (github.com/arcee-ai/mergekit, LGPL-3.0) at commit
a6e402884ba9bc30da7f23e8304a35f19485de95:
  mergekit/merge_methods/generalized_task_arithmetic.py   GTATask.execute, get_task_vectors,
                                                          get_mask
  mergekit/sparsify.py          rescaled_masked_tensor, magnitude, magnitude_outliers,
                                bernoulli, della_magprune
  mergekit/io/tasks.py          LoadTensor.execute (x.to(dtype) when dtype is set),
                                SaveTensor.execute (the result cast to `out_dtype` only)
  and, in torch_kernels.py, linear, slerp, model_stock, passthrough, nearswap, sce,
  multislerp, nuslerp and karcher; in torch_ram_fusion.py, ram, ramplus_tl and arcee_fusion
  (merge_methods/*.py, easy_define.py).

    merge(config, resolve_path) -> TorchMerged(tensors, dtypes, num_hidden_layers, donor,
                                               torch_dtype, compute_dtypes, tie_mask,
                                               tie_direct)

As reference.merge (same arguments, same refusals, same names, dtypes and files), but each
tensor is torch's result as float64 holding exactly the values of its compute dtype: the
tensor mergekit's task returns, before the writer's cast to `out_dtype`. compute_dtypes
names that dtype ("BF16", "F16", "F32"): the one torch arrives at from the inputs as loaded
(the config's `dtype`, else the stored ones; arcee_fusion and ramplus_tl promote to float32),
checked against reference.result_dtype; `dtypes` (written) is `out_dtype`, else that one,
as mergekit's SaveTensor writes it. tie_mask (bool, per tensor) marks the coordinates whose
value depends on the order torch gives equal values; tie_direct counts those whose own
kept/dropped status does (see below).

What torch's random numbers are replaced by, and the quirks kept as in reference.py:
  - DARE and DELLA keep coordinate j iff u_j < p_j (compared as float64), u_j from
    reference.mask_uniforms(seed, output name, task vector index, size) and p_j the
    probability tensor exactly as mergekit builds it: torch.full_like(density) in
    work_dtype (float32 for float16 and float32 tensors on CPU, bfloat16 stays), or DELLA's
    rank formula in work_dtype (in bfloat16, ranks above 256 are rounded);
  - magnitude pruning that keeps k = 0 keeps none (mergekit asserts); magnitude_outliers
    with n_top = 0 keeps none (indices[n_bot:-0]); DELLA's one-column rows get
    density - epsilon (mergekit: 0/0); see torch_kernels.py for sce's and multislerp's.

Which torch: torch 2's semantics, as mergekit requires torch >= 2.0 (what its users run, and
what compatbench follows). This runs on torch 1.13, whose CPU arithmetic differs from torch
2's (besides the float16 kernels it lacks, below) where a bfloat16/float16 tensor is
multiplied or divided by a CPU scalar second operand: a Python number, or a 0-dim tensor of
another dtype (karcher's float32 norms). torch 2 (aten/src/ATen/native/cpu/
BinaryOpsKernel.cpp, mul_kernel and div_true_kernel) takes the scalar as float32 from its
original value, `opmath_t b = iter.original_scalar_value<opmath_t>(2)`, and rounds
`static_cast<float>(a) * b` (or `/ b`) once to the dtype; 1.13 rounds the scalar to the
dtype first. Every such * and / (mergekit's `x * number`, `number * x`, `x / number`, and
`number / x` as x.reciprocal() * number) is therefore computed in float32 explicitly, by
torch_ops.mul_scalar and div_scalar (bfloat16 3 * 0.3: 0.8984375, where 1.13 gives
0.90234375). torch_ops.TORCH_SCALARS = "torch1" (or `with torch_ops.torch_scalars("torch1")`)
gives 1.13's own instead; the default is "torch2".

Tie order, measured on this torch (1.13, CPU): argsort and sort (stable=False) put equal
values lower flat index first for tensors of up to 16 elements (std::sort's insertion sort)
and not beyond (64, 128, 256 elements: not); topk does not either way (8 equal values,
k = 3: indices 6, 5, 4). compatbench keeps the lower index first. So tie_mask marks, for
magnitude (argsort), magnitude_outliers (sort) and sce (topk), the coordinates whose |tau|
(variance) equals a cut value whose equal values are split between kept and dropped; for
DELLA, those whose keep decision changes over the ranks of their equal-|tau| class
(p(lowest) <= u < p(highest)). With a rescale (L1 sums of another arrangement) or sce's
weights, a tie reaches every coordinate: the whole tensor is marked.

Arithmetic facts of this torch the kernels inherit (test_torch_reference.py checks them):
  - a Python number (and a 0-dim tensor) meeting a bfloat16/float16 tensor is first rounded
    to that dtype, for +, -, * and / (torch 2: for * and / not, see above; the kernels use
    torch_ops.mul_scalar and div_scalar there);
  - float64 to bfloat16/float16 (torch.tensor(list, dtype), .to, scalars) rounds through
    float32: twice;
  - its CPU kernels lack float16 sin, cos, acos, clamp, dot and topk: computed on float32
    values and rounded to float16 (torch_ops.half_safe);
  - slerp runs in numpy float32, with the running numpy's promotion (torch_kernels).

    PYTHONPATH=../../python /usr/bin/python3 torch_reference.py MODELS_FOLDER [NAME...]

writes make_models.py's checkpoints to MODELS_FOLDER and prints, per supported fixture (in
its dtype, and with dtype float32), how far reference.py is from torch (see compare).
"""
from dataclasses import dataclass, field

import numpy as np
import torch

import reference as R
import torch_kernels as K
from torch_kernels import Ties, split_ties
from torch_ops import mul_scalar

TORCH_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32,
                "F64": torch.float64}
DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}


@dataclass
class TorchMerged(R.Merged):
    compute_dtypes: dict = field(default_factory=dict)   # name -> "BF16" | "F16" | "F32"
    tie_mask: dict = field(default_factory=dict)         # name -> bool array
    tie_direct: dict = field(default_factory=dict)       # name -> int


# ---------------------------------------------------------------- sparsify.py

def rescaled_masked_tensor(tensor, mask, rescale):
    """tensor * mask; with rescale (L1), times before / after (0-dim tensors) unless either
    is below 1e-7."""
    masked = tensor * mask
    if not rescale:
        return masked
    before, after = tensor.abs().sum(), masked.abs().sum()
    if before < 1e-7 or after < 1e-7:
        return masked
    return masked * (before / after)


def no_ties(tensor):
    return Ties(np.zeros(tuple(tensor.shape), dtype=bool))


def magnitude(tensor, density, rescale):
    """The top k = int(density * n) by |tensor| (as float32), by argsort descending."""
    if density >= 1:
        return tensor, no_ties(tensor)
    n = tensor.numel()
    k = int(density * n)
    mask = torch.zeros_like(tensor)
    w = tensor.abs().view(-1).float()
    if k > 0:   # mergekit asserts k > 0; reference.py keeps none
        mask.view(-1)[torch.argsort(w, descending=True)[:k]] = 1
    ties = Ties(split_ties(tensor.abs().float(), n - k, n), whole=bool(rescale))
    return rescaled_masked_tensor(tensor, mask, rescale), ties


def magnitude_outliers(tensor, density, gamma, rescale):
    """Ascending sort of |tensor| (as float32), positions [n_bot, n - n_top) kept."""
    if density >= 1:
        return tensor, no_ties(tensor)
    n = tensor.numel()
    n_top = int(gamma * n)
    n_bot = n - int(density * n) - n_top
    if n_bot < 0:
        n_top += n_bot
        n_bot = 0
    w = tensor.abs().view(-1).float()
    indices = torch.sort(w, descending=False).indices
    mask = torch.zeros_like(tensor)
    mask.view(-1)[indices[n_bot:-n_top]] = 1
    lo, hi, _ = slice(n_bot, -n_top).indices(n)   # n_top == 0: [n_bot:-0] is empty
    ties = Ties(split_ties(tensor.abs().float(), lo, max(lo, hi)), whole=bool(rescale))
    return rescaled_masked_tensor(tensor, mask, rescale), ties


def work_dtype(tensor):
    """bernoulli's and della_magprune's on CPU: bfloat16 stays, anything else float32."""
    return tensor.dtype if tensor.dtype == torch.bfloat16 else torch.float32


def bernoulli_mask(probs, uniforms):
    """torch.bernoulli(probs) with the seeded uniforms: 1 where u < p, in probs' dtype."""
    u = torch.from_numpy(uniforms()).reshape(probs.shape)
    return (u < probs.double()).to(probs.dtype)


def bernoulli(tensor, density, rescale, uniforms):
    if density >= 1:
        return tensor, no_ties(tensor)
    work = work_dtype(tensor)
    mask = bernoulli_mask(torch.full_like(tensor, density, dtype=work), uniforms)
    return rescaled_masked_tensor(tensor.to(work), mask, rescale).to(tensor.dtype), \
        no_ties(tensor)


def della_probabilities(ranks, density, epsilon):
    """(density - epsilon) + rank_norm * 2 * epsilon, rank_norm the min-max normalised rank
    of each row (ranks: 1-based, in work_dtype)."""
    lo = ranks.min(dim=1, keepdim=True).values
    hi = ranks.max(dim=1, keepdim=True).values
    if ranks.shape[1] == 1:   # mergekit: 0 / 0; reference.py: density - epsilon
        rank_norm = torch.zeros_like(ranks)
    else:
        rank_norm = ((ranks - lo) / (hi - lo)).clamp(0, 1)
    return (density - epsilon) + mul_scalar(mul_scalar(rank_norm, 2), epsilon)


def della_ties(magnitudes, u, p_by_rank):
    """Per row: a class of equal magnitudes takes the ranks [first + 1, last]; a coordinate's
    decision depends on their order iff p(first + 1) <= u < p(last)."""
    m = magnitudes.double().numpy()
    p = p_by_rank.double().numpy()
    out = np.zeros(m.shape, dtype=bool)
    for i, row in enumerate(m):
        order = np.sort(row)
        first = np.searchsorted(order, row, side="left")
        last = np.searchsorted(order, row, side="right")
        out[i] = (last - first > 1) & (u[i] >= p[first]) & (u[i] < p[last - 1])
    return out


def della_magprune(tensor, density, epsilon, rescale, uniforms, name=""):
    """Per row ranks of |tensor| (argsort of argsort), probabilities by rank, the mask,
    rescaled in work_dtype, back to the tensor's dtype."""
    if density >= 1:
        return tensor, no_ties(tensor)
    if density <= 0:
        return torch.zeros_like(tensor), no_ties(tensor)
    if density + epsilon >= 1 or density - epsilon <= 0:
        raise R.Unsupported("epsilon", f"della: density {density} +/- epsilon {epsilon} must "
                                       f"lie in (0, 1) ({name})")
    orig_shape, work = tensor.shape, work_dtype(tensor)
    if tensor.dim() < 2:
        tensor = tensor.unsqueeze(0)
    magnitudes = tensor.abs()
    ranks = torch.argsort(magnitudes, dim=1, descending=False).argsort(dim=1).to(work) + 1
    probs = della_probabilities(ranks, density, epsilon)
    u = uniforms()
    mask = bernoulli_mask(probs, lambda: u)
    res = rescaled_masked_tensor(tensor.to(work), mask, rescale)
    cols = tensor.shape[1]
    p_by_rank = della_probabilities(torch.arange(cols).to(work)[None] + 1, density,
                                    epsilon)[0]
    direct = della_ties(magnitudes, u.reshape(tuple(tensor.shape)), p_by_rank)
    ties = Ties(direct.reshape(tuple(orig_shape)), whole=bool(rescale))
    return res.to(tensor.dtype).reshape(orig_shape), ties


def sparsify(method, tensor, info, rescale, uniforms, name=""):
    """(sparsified tensor, Ties) by mergekit's sparsification `method`."""
    density = float(info["density"])
    if method == "magnitude":
        return magnitude(tensor, density, rescale)
    if method == "magnitude_outliers":
        return magnitude_outliers(tensor, density, float(info["gamma"]), rescale)
    if method == "random":
        return bernoulli(tensor, density, rescale, uniforms)
    return della_magprune(tensor, density, float(info["epsilon"]), rescale, uniforms, name)


# ---------------------------------------------------------------- generalized_task_arithmetic.py

def combine(deltas, weights, base, consensus, int8_mask, normalize, lam):
    """GTATask.execute after sparsifying: weights as a tensor of the deltas' dtype, sign
    consensus, the divisor, normalize, lambda, (base + mixed).to(base.dtype)."""
    deltas = torch.stack(deltas, dim=0)
    weights = torch.tensor(weights, dtype=deltas.dtype)
    while deltas.dim() > weights.dim():
        weights.unsqueeze_(-1)
    weighted = deltas * weights
    if consensus:
        mask = K.get_mask(weighted, consensus, torch.int8 if int8_mask else base.dtype)
        mixed = (weighted * mask).sum(dim=0)
        divisor = (weights * mask).sum(dim=0)
        divisor[divisor == 0] = 1
    else:
        mixed = weighted.sum(dim=0)
        divisor = weights.sum(dim=0)
        divisor[divisor.abs() < 1e-8] = 1
    if normalize:
        mixed /= divisor
    if lam != 1:
        mixed = mul_scalar(mixed, lam)   # mixed_delta *= self.lambda_
    return (base + mixed).to(base.dtype)


def gta_merge(method, job, values, base):
    """(tensor, Ties): task vectors in the base's dtype, each sparsified (its index among
    them, in merge order, names its seeded uniforms), then combined."""
    consensus, sparsification, d_normalize, d_rescale = R.GTA_METHODS[method]
    if base is None or base not in [m for m, _ in job.sources]:
        raise R.Unsupported("base_model", f"{method} needs a base_model among its inputs")
    normalize = R.global_param(job, "normalize", d_normalize)
    rescale = R.global_param(job, "rescale", d_rescale)
    lam = float(R.global_param(job, "lambda", 1.0))
    seed = int(R.global_param(job, "seed", 0))
    int8_mask = R.global_param(job, "int8_mask", False)
    theta0 = values[base]
    deltas, weights, ties = [], [], no_ties(theta0)
    for model, in_name in job.sources:
        if model == base:
            continue
        info = {key: R.model_param(job, model, in_name, key, default)
                for key, default in (("density", 1.0), ("gamma", 0.01), ("epsilon", 0.15))}
        delta = values[model].to(theta0.dtype) - theta0
        if sparsification:
            index, size = len(deltas), delta.numel()
            delta, t = sparsify(sparsification, delta, info, rescale,
                                lambda: R.mask_uniforms(seed, job.out_name, index, size),
                                job.out_name)
            ties.add(t)
        deltas.append(delta)
        weights.append(float(R.model_param(job, model, in_name, "weight", 1.0)))
    if not deltas:
        return theta0, ties
    return combine(deltas, weights, theta0, consensus, int8_mask, normalize, lam), ties


def merge_tensor(method, job, values, base):
    """(torch tensor, Ties or None) of one output tensor."""
    if method in R.GTA_METHODS:
        return gta_merge(method, job, values, base)
    return K.merge_tensor(method, job, values, base)


# ---------------------------------------------------------------- merge

def config_dtype(config):
    """The safetensors name of the config's `dtype` (mergekit's load dtype), or None."""
    return R.dtype_setting(config, "dtype")


def job_inputs(job, resolve_path):
    """{model: (float64 stored values, stored dtype)}, or None for an absent optional tensor
    (as reference.merge)."""
    ckpts = {m: R.load_checkpoint(resolve_path(m)) for m, _ in job.sources}
    present = [(m, n) for m, n in job.sources if n in ckpts[m].tensors]
    if job.out_name in R.OPTIONAL_WEIGHTS and not present:
        return None
    if len(present) != len(job.sources):
        missing = [f"{m}:{n}" for m, n in job.sources if (m, n) not in present]
        raise R.Unsupported("tensor", f"missing input tensors {missing}")
    return {m: (ckpts[m].tensors[n], ckpts[m].dtypes[n]) for m, n in job.sources}


def load_tensor(stored_values, stored_dtype, load_dtype):
    """LoadTensor: the stored tensor, converted to the config's dtype when that is set."""
    x = torch.from_numpy(stored_values).to(TORCH_DTYPES[stored_dtype])
    return x.to(TORCH_DTYPES[load_dtype]) if load_dtype else x


def merge(config, resolve_path):
    """The merged model as mergekit's torch computes it (see the module's docstring)."""
    method = R.check_supported(config)
    out_dtype = R.output_dtype_name(config)   # config.json's torch_dtype
    load_dtype, cast = config_dtype(config), R.dtype_setting(config, "out_dtype")
    slices = R.normalized_slices(config, resolve_path)
    base = config.get("base_model")
    jobs, layers = R.plan(config, slices)
    out = TorchMerged()
    for job in jobs:
        inputs = job_inputs(job, resolve_path)
        if inputs is None:
            continue
        values = {m: load_tensor(v, d, load_dtype) for m, (v, d) in inputs.items()}
        tensor, ties = merge_tensor(method, job, values, base)
        loaded = {m: load_dtype or d for m, (_, d) in inputs.items()}
        want = R.result_dtype(method, loaded, base, job.sources[0][0])
        got = DTYPE_NAMES[tensor.dtype]
        if got != want:
            raise AssertionError(f"{job.out_name}: torch computed {got}, reference.py "
                                 f"expects {want}")
        out.tensors[job.out_name] = tensor.double().numpy()
        out.compute_dtypes[job.out_name] = got
        out.dtypes[job.out_name] = cast or got
        ties = ties or no_ties(tensor)
        out.tie_mask[job.out_name] = ties.mask()
        out.tie_direct[job.out_name] = int(ties.direct.sum())
    out.donor = R.donor_model(config, slices)
    donor_config = R.load_checkpoint(resolve_path(out.donor)).config
    out.num_hidden_layers = (layers if config.get("slices")
                             else int(donor_config["num_hidden_layers"]))
    out.torch_dtype = out_dtype or donor_config.get("torch_dtype")
    return out


# ---------------------------------------------------------------- against reference.py

def compare(config, resolve_path):
    """Of one configuration, outside the tie masks: max |torch - reference| in ulps of the
    compute dtype at the reference value ("ulp") and at the tensor's max |reference|
    ("scaled"), and the count of values other than the rounded reference ("off"); and the
    tie counts ("direct", "marked"), the compute dtypes and the value count."""
    from check_configs import round_to, ulp
    ref, got = R.merge(config, resolve_path), merge(config, resolve_path)
    out = {"ulp": 0.0, "scaled": 0.0, "off": 0, "direct": 0, "marked": 0, "values": 0,
           "dtypes": "/".join(sorted(set(got.compute_dtypes.values())))}
    for name, want in ref.tensors.items():
        dtype, keep = got.compute_dtypes[name], ~got.tie_mask[name]
        rounded = round_to(want, dtype)
        err = np.abs(got.tensors[name] - want)[keep]
        if err.size:
            top = ulp(np.array([np.abs(want).max()]), dtype)[0]
            out["ulp"] = max(out["ulp"], float((err / ulp(rounded, dtype)[keep]).max()))
            out["scaled"] = max(out["scaled"], float(err.max() / top))
        out["off"] += int((got.tensors[name] != rounded)[keep].sum())
        out["direct"] += got.tie_direct[name]
        out["marked"] += int(got.tie_mask[name].sum())
        out["values"] += want.size
    return out


def as_float32(config):
    out = dict(config, dtype="float32")
    if "out_dtype" in out:
        out["out_dtype"] = "float32"
    return out


def main(argv):
    """torch_reference.py MODELS_FOLDER [NAME...]: per supported fixture, in its own dtype
    and with dtype float32, how far reference.py is from torch (and the tie counts)."""
    import yaml
    from check_configs import expected_refusal, fixtures, local_name
    from make_models import write_models
    paths = write_models(argv[0])
    resolve = lambda n: paths[local_name(n)]   # noqa: E731
    print("fixture | values | dtype: max ulp, scaled, off, ties direct/marked | "
          "F32: max ulp, scaled, off, ties direct/marked")
    for key, path in fixtures(set(argv[1:])):
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f)
        if expected_refusal(key, config):
            continue
        row = [compare(config, resolve), compare(as_float32(config), resolve)]
        cells = [f"{c['dtypes']}: {c['ulp']:.3g}, {c['scaled']:.3g}, {c['off']}, "
                 f"{c['direct']}/{c['marked']}" for c in row]
        print(f"{key} | {row[0]['values']} | {cells[0]} | {cells[1]}", flush=True)


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
