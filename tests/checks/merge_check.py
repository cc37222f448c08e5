"""Independent numpy versions of TIES, SLERP and Model Stock (methods.md §3.2) for the
operator tests.

  merge_check.py FILE   reads "base", "m0", "m1", "m2" (1-D) from the safetensors FILE and
                        prints {"ties": [...], "slerp": [...], "model_stock": [...]}: TIES
                        (density 0.5, c 1) and Model Stock over the three models, SLERP
                        (t 0.3) of m0 and m1.
"""
import json
import sys

import numpy as np

from compatnets.safetensors import load


def main():
    t = {k: v.astype(np.float64).ravel() for k, v in load(sys.argv[1]).items()}
    base, models = t["base"], [t["m0"], t["m1"], t["m2"]]
    taus = np.stack([m - base for m in models])
    # TIES: keep the top half by magnitude (stable order: ties to the lower index).
    k = int(round(0.5 * taus.shape[1]))
    trimmed = np.zeros_like(taus)
    for i, tau in enumerate(taus):
        keep = np.argsort(-np.abs(tau), kind="stable")[:k]
        trimmed[i, keep] = tau[keep]
    sign = np.where(trimmed.sum(0) < 0, -1.0, 1.0)
    agree = (np.sign(trimmed) == sign) & (trimmed != 0)
    count = agree.sum(0)
    ties = base + np.where(count > 0, (trimmed * agree).sum(0) / np.maximum(count, 1), 0.0)
    # SLERP of the weights.
    a, b, tt = models[0], models[1], 0.3
    cos = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    omega = np.arccos(np.clip(cos, -1, 1))
    slerp = (np.sin((1 - tt) * omega) * a + np.sin(tt * omega) * b) / np.sin(omega)
    # Model Stock.
    cosines = [taus[i] @ taus[j] / (np.linalg.norm(taus[i]) * np.linalg.norm(taus[j]))
               for i in range(3) for j in range(i + 1, 3)]
    c = float(np.mean(cosines))
    w = 3 * c / (1 + 2 * c)
    stock = w * np.mean(models, axis=0) + (1 - w) * base
    print(json.dumps({"ties": ties.tolist(), "slerp": slerp.tolist(), "model_stock": stock.tolist()}))


if __name__ == "__main__":
    main()
