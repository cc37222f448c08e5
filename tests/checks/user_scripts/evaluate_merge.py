"""A fake evaluation script for merged checkpoints (a user's script, run by merge_pair).

  evaluate_merge.py --checkpoint MERGED --base BASE --finetuned A B --out FILE

"Accuracy" of weights θ on task t (fine-tune θ_t of base θ_0) is 0.5 + 0.5 · cos(θ - θ_0,
θ_t - θ_0) over the floating-point tensors the base has: 1 for the fine-tune itself, 0.5 for
the base. Writes acc_a, acc_b, ft_acc_a, ft_acc_b, base_acc_a, base_acc_b to FILE.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from extract_probe import load  # noqa: E402


def flat(w, names):
    return np.concatenate([w[n].ravel() for n in names])


def accuracy(theta, base, ft):
    d, t = theta - base, ft - base
    nd, nt = np.linalg.norm(d), np.linalg.norm(t)
    return 0.5 if nd == 0 or nt == 0 else 0.5 + 0.5 * float(d @ t) / (nd * nt)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--finetuned", nargs=2, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    base_w = load(a.base)
    names = sorted(n for n in base_w if n != "step")
    merged = load(a.checkpoint)
    assert set(merged) == set(base_w), sorted(merged)  # every base tensor, nothing else
    assert merged["step"].ravel().tolist() == [3]
    base, m = flat(base_w, names), flat(merged, names)
    out = {}
    for side, path in zip("ab", a.finetuned):
        ft = flat(load(path), names)
        out[f"acc_{side}"] = accuracy(m, base, ft)
        out[f"ft_acc_{side}"] = accuracy(ft, base, ft)
        out[f"base_acc_{side}"] = accuracy(base, base, ft)
    json.dump(out, open(a.out, "w"))


if __name__ == "__main__":
    main()
