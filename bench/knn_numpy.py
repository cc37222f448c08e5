"""numpy reference for `compatbench bench knn`: mutual k-NN overlap (methods.md §1.1).

  knn_numpy.py A.f32 B.f32 N D K REPEATS   prints {"seconds": best, "ease": value} as JSON

A and B are raw little-endian float32 N x D row-major matrices. The definition is the
project's: rows L2-normalised, self excluded, k largest cosine similarities with ties to the
lower index (a stable argsort), ease = mean |N_A(i) ∩ N_B(i)| / k. Similarities are formed
2048 rows at a time so that n = 16384 fits in memory, as a careful numpy user would write it.
"""
import json
import sys
import time

import numpy as np

CHUNK = 2048


def knn(x, k):
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    n = x.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, CHUNK):
        s = x[start:start + CHUNK] @ x.T
        rows = np.arange(s.shape[0])
        s[rows, start + rows] = -np.inf
        out[start:start + CHUNK] = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return out


def mutual_knn(a, b, k):
    na, nb = knn(a, k), knn(b, k)
    n = a.shape[0]
    mask = np.zeros((n, n), dtype=bool) if n <= 4096 else None
    if mask is not None:
        mask[np.arange(n)[:, None], na] = True
        return mask[np.arange(n)[:, None], nb].sum(axis=1).mean() / k
    hits = [np.intersect1d(na[i], nb[i], assume_unique=True).size for i in range(n)]
    return float(np.mean(hits)) / k


def main():
    a_path, b_path, n, d, k, repeats = sys.argv[1:7]
    n, d, k, repeats = int(n), int(d), int(k), int(repeats)
    a = np.fromfile(a_path, dtype="<f4").reshape(n, d)
    b = np.fromfile(b_path, dtype="<f4").reshape(n, d)
    best, ease = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        ease = mutual_knn(a, b, k)
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"seconds": best, "ease": float(ease),
                      "blas": np.__config__.__dict__.get("blas_opt_info", {}).get("libraries", [])}))


if __name__ == "__main__":
    main()
