"""The torch operations whose results differ between the torch this runs on (1.13) and torch 2,
computed here as torch 2 computes them (for torch_kernels.py and torch_reference.py, whose
docstring says why).

A bfloat16/float16 tensor times (or divided by) a CPU scalar, torch 2
(aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, mul_kernel and div_true_kernel): when the
second operand is a scalar and the common dtype a reduced floating type, the scalar is read
as float32 from its original value, `opmath_t b = iter.original_scalar_value<opmath_t>(2)`,
and the result is `static_cast<float>(a) * b` (or `/ b`) rounded once to the dtype. The
scalar is a Python number (a float's double value read as float32), or a 0-dim tensor in its
own dtype (a float32 norm is not rounded to bfloat16 first). torch 1.13 rounds the scalar to
the tensor's dtype first. Everything else (+, -, rsub, clamp, full_like, comparisons,
torch.tensor(list, dtype), a 0-dim tensor as the first operand of *) rounds the number to
the dtype first in both.

    TORCH_SCALARS = "torch2"   the default: mergekit requires torch >= 2.0
                    "torch1"   torch 1.13's own `x * s` and `x / s`

`mean` of a bfloat16/float16 tensor on the CPU, torch 2.2 on (pytorch PR #114582,
aten/src/ATen/native/ReduceOps.cpp's mean_out): the float32 sum divided by the count in
float32, rounded once; torch 1.13 (and 2.0, 2.1) rounds the sum to the dtype first and then
divides (mean).

Also: this torch's CPU kernels lack float16 sin, cos, acos, clamp and dot (half_safe).
"""
from contextlib import contextmanager

import torch

TORCH_SCALARS = "torch2"
MODES = ("torch2", "torch1")
REDUCED = (torch.bfloat16, torch.float16)


@contextmanager
def torch_scalars(mode):
    """Within the block, TORCH_SCALARS = mode."""
    global TORCH_SCALARS
    if mode not in MODES:
        raise ValueError(f"TORCH_SCALARS: {mode!r} is not one of {MODES}")
    saved, TORCH_SCALARS = TORCH_SCALARS, mode
    try:
        yield
    finally:
        TORCH_SCALARS = saved


def _scalar_op(op, x, s):
    if TORCH_SCALARS not in MODES:
        raise ValueError(f"TORCH_SCALARS: {TORCH_SCALARS!r} is not one of {MODES}")
    if TORCH_SCALARS == "torch1" or x.dtype not in REDUCED:
        return op(x, s)
    b = s.detach().to(torch.float32) if isinstance(s, torch.Tensor) \
        else torch.tensor(s, dtype=torch.float32)
    return op(x.float(), b).to(x.dtype)


def mul_scalar(x, s):
    """torch's `x * s` (and `s * x`: Tensor.__rmul__ is x.mul(s)) for a tensor x and a Python
    number or 0-dim tensor s (see the module's docstring)."""
    if isinstance(s, torch.Tensor) and s.dim() != 0:
        raise ValueError("mul_scalar: s must be a number or a 0-dim tensor")
    return _scalar_op(torch.mul, x, s)


def div_scalar(x, s):
    """torch's `x / s` for a tensor x and a Python number or 0-dim tensor s. (`s / x` is
    Tensor.__rtruediv__: mul_scalar(x.reciprocal(), s).)"""
    if isinstance(s, torch.Tensor) and s.dim() != 0:
        raise ValueError("div_scalar: s must be a number or a 0-dim tensor")
    return _scalar_op(torch.div, x, s)


def mean(x, dim):
    """x.mean(dim) as torch 2 computes it (see the docstring); torch1: this torch's own."""
    if TORCH_SCALARS == "torch1" or x.dtype not in REDUCED:
        return x.mean(dim=dim)
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    count = 1
    for d in dims:
        count *= x.shape[d]
    return (x.float().sum(dim=dim) / count).to(x.dtype)


def half_safe(fn, *xs):
    """fn(*xs); with a float16 tensor among xs: fn of their float32 values, rounded to float16.
    This torch's CPU kernels lack float16 sin, cos, acos, clamp, dot and topk; newer torch
    computes float16 through float32 this way (exactly so for clamp, to the rounding of
    float32's sin/cos/acos otherwise)."""
    if any(isinstance(x, torch.Tensor) and x.dtype == torch.float16 for x in xs):
        ys = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in xs]
        return fn(*ys).half()
    return fn(*xs)


def clamp(x, lo=None, hi=None):
    return half_safe(lambda y: y.clamp(min=lo, max=hi), x)


def sin(x):
    return half_safe(torch.sin, x)


def cos(x):
    return half_safe(torch.cos, x)


def acos(x):
    return half_safe(torch.acos, x)
