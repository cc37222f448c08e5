"""`compatbench merge`'s default arithmetic (in the YAML's dtype) against torch itself.

check_configs.py runs every supported fixture a third time, with the default
`--arithmetic dtype`, and compares the output with torch_reference.merge: mergekit's
kernels run by torch in the dtype. For the methods whose torch operations compatbench
repeats one by one (FAITHFUL), in bfloat16 or float16, every value must equal torch's, bit
for bit, except at the coordinates torch_reference marks as decided by torch's order among
equal values (tie_mask: compatbench keeps the lower index, torch's sorts and topk are not
stable). Otherwise each value must lie within LOOSE_ULPS units in the last place of the
dtype, taken at the tensor's largest |value|, of torch's, or no farther than torch's from
reference.py's float64 value: in float32, where torch's own order of a sum over a tensor
shows in the last place (and a cosine near 0, as Model Stock's filter_wise rows have,
magnifies it), and for the methods that compatbench computes in double on the inputs
rounded to the dtype (docs/mergekit.md, "Arithmetic").

arcee_fusion's mask compares an importance built on the KL divergence of two nearly equal
softmaxes: the last float32 place of torch's exp (its own vectorised one) is magnified into
it, so near the threshold a few decisions are the exp's. Its coordinates may each be decided
the other way (θ0 where torch keeps θ0 + τ, or back), at most FLIP_SHARE of the values.
"""
import numpy as np
import torch

FAITHFUL = {"linear", "task_arithmetic", "ties", "dare_ties", "dare_linear", "breadcrumbs",
            "breadcrumbs_ties", "della", "della_linear", "nearswap", "sce", "passthrough",
            "model_stock", "ram", "ramplus_tl", "arcee_fusion"}
LOOSE_ULPS = 8
FLIP_SHARE = 5e-4
TORCH_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
SIGNIFICAND = {"BF16": 8, "F16": 11, "F32": 24}


class Mismatch(Exception):
    pass


def as_dtype(values, name):
    """float64 values holding a compute dtype's values, rounded once to dtype `name`."""
    t = torch.from_numpy(np.ascontiguousarray(values)).to(torch.float32)
    return t.to(TORCH_DTYPES[name]).to(torch.float64).numpy()


def scaled_ulp(values, name):
    """The dtype's spacing at the tensor's largest |value|."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    _, e = np.frexp(top)
    return float(np.ldexp(1.0, int(e) - SIGNIFICAND[name])) if top > 0 else 0.0


def compare(method, got, got_dtypes, merged, exact):
    """Returns (tensors, values compared, values within the tie mask, arcee_fusion's mask
    decisions other than torch's, worst scaled ulps);
    raises Mismatch naming the first tensor and coordinate that differs. `exact`: the
    float64 reference's tensors of the same configuration."""
    compared = tied = flipped = 0
    worst = 0.0
    for name, value in merged.tensors.items():
        out = merged.dtypes[name]
        equal = method in FAITHFUL and merged.compute_dtypes[name] != "F32"
        if got_dtypes[name] != out:
            raise Mismatch(f"{name}: dtype {got_dtypes[name]}, want {out}")
        want = as_dtype(value, out).reshape(got[name].shape)
        ties = merged.tie_mask[name].reshape(want.shape)
        free = ~ties & ~(np.isnan(want) & np.isnan(got[name]))
        diff = np.where(free, np.abs(got[name] - want), 0.0)
        unit = scaled_ulp(want, out)
        if equal:
            bad = diff > 0
        else:
            truth = exact[name].reshape(want.shape)
            bad = (diff > LOOSE_ULPS * unit) & (np.abs(got[name] - truth) > np.abs(want - truth))
        if method == "arcee_fusion":  # a mask decision the other way: a whole τ apart
            flips = diff > LOOSE_ULPS * unit
            flipped += int(flips.sum())
            bad = bad & ~flips
            diff = np.where(flips, 0.0, diff)
        worst = max(worst, float(diff.max()) / unit if unit > 0 and diff.size else 0.0)
        if bad.any():
            j = int(np.flatnonzero(bad.ravel())[0])
            rule = ("equal to" if equal else
                    f"within {LOOSE_ULPS} scaled ulp of, or nearer float64 than,")
            raise Mismatch(f"{name}: {int(bad.sum())} of {want.size} values not {rule} torch's "
                           f"in {merged.compute_dtypes[name]} (outside {int(ties.sum())} tied), "
                           f"e.g. [{j}] = {got[name].ravel()[j]!r}, torch {want.ravel()[j]!r}")
        compared += int(free.sum())
        tied += int(ties.sum())
    if flipped > FLIP_SHARE * compared:
        raise Mismatch(f"{flipped} of {compared} mask decisions other than torch's (at most "
                       f"{FLIP_SHARE:g} of them)")
    return len(merged.tensors), compared, tied, flipped, worst
