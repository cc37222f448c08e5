"""Whether the real alignment study tells pairs apart (docs/real-networks.md, "What counts"):
from a run's results.h5, the regime's gates as the report judges them
(compatnets.report.real_gates: G1, the pairs' median R@1 on flickr against the captions'
oracle R@1 in /real/data; G2, per evaluation split, the spread of R@1 across pairs against
one pair's binomial standard error on the split's images), then per split the pairs' R@1
(range, as a fraction of the oracle) and the study's own tables: correlations beside the
reliability cap of their target, Kruskal-Wallis over the regions, the LOFO range,
k-sensitivity and the budget correlations.
    PYTHONPATH=python /usr/bin/python3 bench/alignment_spread.py RESULTS_H5 [--pairs]
--pairs also lists every pair's R@1 on both splits and as a fraction of the oracle.
"""
import sys

import h5py
import numpy as np

from compatnets.report.h5 import table
from compatnets.report.real_gates import SPLITS, alignment_regime, failed


def rows_for(t, target):
    """The row indices of table `t` (or none without it) whose target is `target`."""
    return [] if t is None else [i for i in range(len(t["target"])) if t["target"][i] == target]


def list_pairs(pairs, oracle):
    print(f"{'vision':>12} {'text':>12} {'score':>6}  {'R@1 flickr':>10} {'/oracle':>7}  "
          f"{'R@1 coco':>8} {'/oracle':>7}")
    for i in np.argsort(-pairs["r1_flickr"], kind="stable"):
        print(f"{pairs['vision'][i]:>12} {pairs['text'][i]:>12} "
              f"{pairs['score'][i]:>6.3f}  {pairs['r1_flickr'][i]:>10.3f} "
              f"{pairs['r1_flickr'][i] / oracle['flickr']:>7.3f}  {pairs['r1_coco'][i]:>8.3f} "
              f"{pairs['r1_coco'][i] / oracle['coco']:>7.3f}")


def regime_of(pairs, data):
    """The report's regime (gates and per-split spread) and the oracle R@1 per split (NaN
    where /real/data does not record it)."""
    first = lambda k: float(data[k][0]) if k in data else np.nan  # noqa: E731
    oracle = {s: first(f"oracle_{s}") for s in SPLITS}
    images = {s: int(data[f"{s}_images"][0]) for s in SPLITS}
    return alignment_regime({s: pairs[f"r1_{s}"] for s in SPLITS}, images, oracle["flickr"]), oracle


def print_split(split, x, oracle, f):
    line = (f"{split}: {x['n']} pairs, R@1 {x['min']:.3f}-{x['max']:.3f} (median {x['median']:.3f})")
    if np.isfinite(oracle):  # recorded since the captions that single images out
        line += f"; oracle {oracle:.3f}: {x['min'] / oracle:.2f}-{x['max'] / oracle:.2f} of it"
    print(line)
    print(f"  spread across pairs (sd) {x['spread']:.4f} against one pair's binomial standard error "
          f"{x['se']:.4f} on {x['images']} images: {x['ratio']:.2f}x; reliability {x['reliability']:.3f}, "
          f"capped r {x['cap']:.3f}")
    corr = table(f, "alignment/analysis/correlations")
    for i in rows_for(corr, f"r1_{split}"):
        print(f"  {corr['predictor'][i]:>8}: Pearson {corr['pearson_r'][i]:+.2f} "
              f"(95% CI {corr['pearson_ci_low'][i]:+.2f}..{corr['pearson_ci_high'][i]:+.2f},"
              f" p {corr['pearson_p'][i]:.2g}; cap {x['cap']:.2f}), Spearman {corr['spearman_rho'][i]:+.2f}")
    kw = table(f, "alignment/analysis/kruskal")
    for i in rows_for(kw, f"r1_{split}"):
        print(f"  Kruskal-Wallis over the regions: H {kw['h'][i]:.1f}, p {kw['p'][i]:.2g}")
    lofo = table(f, "alignment/analysis/lofo_range")
    for i in rows_for(lofo, f"r1_{split}"):
        print(f"  LOFO {lofo['predictor'][i]}: Pearson {lofo['pearson_min'][i]:+.2f}"
              f"..{lofo['pearson_max'][i]:+.2f} over {lofo['folds'][i]} folds")


def main(path, with_pairs=False):
    f = h5py.File(path, "r")
    pairs, data = table(f, "alignment/pairs"), table(f, "real/data")
    regime, oracle = regime_of(pairs, data)
    for g in regime["gates"]:
        print(f"{g['gate']}: {g['rule']}: {g['measured']:.4g} against {g['threshold']:.4g}: "
              f"{'holds' if g['holds'] else 'fails'}")
    print("informative" if regime["informative"] else f"not informative ({failed(regime['gates'])})")
    for split in SPLITS:
        print_split(split, regime["splits"][split], oracle[split], f)
    ks = table(f, "alignment/analysis/k_sensitivity")
    if ks is not None:
        print("k-sensitivity (Pearson of the score):", ", ".join(
            f"{ks['target'][i]} k={ks['k'][i]} {ks['pearson_r'][i]:+.2f}"
            for i in range(len(ks["k"])) if ks["predictor"][i] == "score"))
    b = table(f, "alignment/analysis/budget")
    if b is not None:
        print("budget (Pearson of the score with the trained adapters' R@1):", ", ".join(
            f"{b['target'][i]} @{b['epochs'][i]} {b['pearson_r'][i]:+.2f}"
            for i in range(len(b["target"])) if b["predictor"][i] == "score"))
    if with_pairs:
        list_pairs(pairs, oracle)


if __name__ == "__main__":
    main(sys.argv[1], "--pairs" in sys.argv[2:])
