"""Whether the real alignment study tells pairs apart (docs/real-networks.md): from a run's
results.h5, per evaluation split, the pairs' image-to-text R@1 (range, as a fraction of the
captions' oracle R@1 in /real/data), their spread across pairs against the sampling error of
one pair's R@1 (the binomial standard error on the split's images), and the study's own
tables: correlations, Kruskal-Wallis over the regions, the LOFO range, k-sensitivity and the
budget correlations.
    /usr/bin/python3 bench/alignment_spread.py RESULTS_H5 [--pairs]
--pairs also lists every pair's R@1 on both splits and as a fraction of the oracle.
"""
import sys

import h5py
import numpy as np


def table(f, path):
    return {k: f[path][k][:] for k in f[path]}


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def list_pairs(pairs, data):
    oracle = {s: float(data[f"oracle_{s}"][0]) for s in ("flickr", "coco")}
    print(f"{'vision':>12} {'text':>12} {'score':>6}  {'R@1 flickr':>10} {'/oracle':>7}  "
          f"{'R@1 coco':>8} {'/oracle':>7}")
    for i in np.argsort(-pairs["r1_flickr"], kind="stable"):
        print(f"{text(pairs['vision'][i]):>12} {text(pairs['text'][i]):>12} "
              f"{pairs['score'][i]:>6.3f}  {pairs['r1_flickr'][i]:>10.3f} "
              f"{pairs['r1_flickr'][i] / oracle['flickr']:>7.3f}  {pairs['r1_coco'][i]:>8.3f} "
              f"{pairs['r1_coco'][i] / oracle['coco']:>7.3f}")


def main(path, with_pairs=False):
    f = h5py.File(path, "r")
    pairs, data = table(f, "alignment/pairs"), table(f, "real/data")
    corr, kw = table(f, "alignment/analysis/correlations"), table(f, "alignment/analysis/kruskal")
    lofo = table(f, "alignment/analysis/lofo_range")
    for split in ("flickr", "coco"):
        r1 = pairs[f"r1_{split}"]
        images = int(data[f"{split}_images"][0])
        se = np.sqrt(r1.mean() * (1 - r1.mean()) / images)
        line = (f"{split}: {len(r1)} pairs, R@1 {r1.min():.3f}-{r1.max():.3f} (median "
                f"{np.median(r1):.3f})")
        if f"oracle_{split}" in data:  # recorded since the captions that single images out
            oracle = float(data[f"oracle_{split}"][0])
            line += f"; oracle {oracle:.3f}: {r1.min() / oracle:.2f}-{r1.max() / oracle:.2f} of it"
        print(line)
        print(f"  spread across pairs (sd) {r1.std(ddof=1):.4f} against one pair's binomial "
              f"standard error {se:.4f} on {images} images: {r1.std(ddof=1) / se:.1f}x")
        for i in range(len(corr["target"])):
            if text(corr["target"][i]) == f"r1_{split}":
                print(f"  {text(corr['predictor'][i]):>8}: Pearson {corr['pearson_r'][i]:+.2f} "
                      f"(95% CI {corr['pearson_ci_low'][i]:+.2f}..{corr['pearson_ci_high'][i]:+.2f},"
                      f" p {corr['pearson_p'][i]:.2g}), Spearman {corr['spearman_rho'][i]:+.2f}")
        for i in range(len(kw["target"])):
            if text(kw["target"][i]) == f"r1_{split}":
                print(f"  Kruskal-Wallis over the regions: H {kw['h'][i]:.1f}, p {kw['p'][i]:.2g}")
        for i in range(len(lofo["target"])):
            if text(lofo["target"][i]) == f"r1_{split}":
                print(f"  LOFO {text(lofo['predictor'][i])}: Pearson {lofo['pearson_min'][i]:+.2f}"
                      f"..{lofo['pearson_max'][i]:+.2f} over {lofo['folds'][i]} folds")
    ks = table(f, "alignment/analysis/k_sensitivity")
    print("k-sensitivity (Pearson of the score):", ", ".join(
        f"{text(ks['target'][i])} k={ks['k'][i]} {ks['pearson_r'][i]:+.2f}"
        for i in range(len(ks["k"]))
        if text(ks["predictor"][i]) == "score"))
    b = table(f, "alignment/analysis/budget")
    print("budget (Pearson of the score with the trained adapters' R@1):", ", ".join(
        f"{text(b['target'][i])} @{b['epochs'][i]} {b['pearson_r'][i]:+.2f}"
        for i in range(len(b["target"])) if text(b["predictor"][i]) == "score"))
    if with_pairs:
        list_pairs(pairs, data)


if __name__ == "__main__":
    main(sys.argv[1], "--pairs" in sys.argv[2:])
