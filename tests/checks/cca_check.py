"""An independent CCA for the CSA adapter test (methods.md §2.1), numpy/scipy only.

  cca_check.py FILE dim   reads tensors xv, xt (train, paired rows), ev, et (eval) from the
                          safetensors FILE and prints {"rho": [...], "sim": [[...]]} as JSON,
                          sim as captions x images.

Canonical correlations come from the QR decomposition of each centred view (the singular
values of Qvᵀ Qt), not from covariance square roots as the C++ code does.
"""
import json
import sys

import numpy as np
import scipy.linalg

from compatnets.safetensors import read


def tensor(f, name):
    return f.tensors[name].astype(np.float64)


def main():
    f = read(sys.argv[1])
    dim = int(sys.argv[2])
    xv, xt, ev, et = (tensor(f, n) for n in ("xv", "xt", "ev", "et"))
    mv, mt = xv.mean(0), xt.mean(0)
    qv, rv = scipy.linalg.qr(xv - mv, mode="economic")
    qt, rt = scipy.linalg.qr(xt - mt, mode="economic")
    u, s, vh = np.linalg.svd(qv.T @ qt)
    n = xv.shape[0]
    # x W = q u  =>  W = R^-1 u, scaled by sqrt(n - 1) like the covariance-based whitening.
    wv = scipy.linalg.solve_triangular(rv, u) * np.sqrt(n - 1)
    wt = scipy.linalg.solve_triangular(rt, vh.T) * np.sqrt(n - 1)
    k = min(dim, xv.shape[1], xt.shape[1])
    zv = (ev - mv) @ wv[:, :k]
    zt = (et - mt) @ wt[:, :k]
    zv /= np.linalg.norm(zv, axis=1, keepdims=True)
    zt /= np.linalg.norm(zt, axis=1, keepdims=True)
    sim = (zt * s[:k]) @ zv.T
    print(json.dumps({"rho": s[:k].tolist(), "sim": sim.tolist()}))


if __name__ == "__main__":
    main()
