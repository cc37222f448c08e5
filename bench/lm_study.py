"""The language-model library's PRISM study beside the paper's numbers, from a run's
results.h5 (docs/language-models.md): the specialists; the merges' destructive share; the
screen at the paper's threshold and at one fixed on half of the merges (its own half, then
the other); PRISM against TA, TIES and DELLA on the K = 2 merge; the κ sweep; the update
norm; the drift exponent.
    /usr/bin/python3 bench/lm_study.py RESULTS_H5
"""
import os
import sys

import h5py
import numpy as np

from prism_sweeps import rows

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from report.references import PAPER_DRIFT_EXPONENT, PAPER_LM  # noqa: E402


def confusion(score, positive, threshold):
    flagged = score > threshold
    return (int((flagged & positive).sum()), int((flagged & ~positive).sum()),
            int((~flagged & ~positive).sum()), int((~flagged & positive).sum()))


def specialists(f):
    print(f"{'domain':>8} {'acc':>6} {'base':>6} {'ppl':>6} {'base':>6} {'other domains':>14} {'base':>6}")
    for r in rows(f, "lm/specialists"):
        print(f"{r['domain']:>8} {r['acc']:>6.3f} {r['base_acc']:>6.3f} {r['ppl']:>6.2f} {r['base_ppl']:>6.2f} "
              f"{r['acc_other']:>14.3f} {r['base_acc_other']:>6.3f}")
    b = rows(f, "lm/base")[0]
    print(f"base: {b['params']:,} parameters, {b['tokens']:,} tokens, mean accuracy {b['acc_mean']:.3f}, "
          f"perplexity {b['ppl_mean']:.2f}")


def screening(f):
    ta = [r for r in rows(f, "lm/merges") if r["method"] == "task_arithmetic"]
    score = np.array([r["screen_score"] for r in ta])
    positive = np.array([r["destructive"] != 0 for r in ta])
    print(f"\ntask arithmetic: {positive.sum()} of {len(ta)} merges destructive "
          f"(paper: {PAPER_LM['destructive']})")
    for r in rows(f, "lm/analysis/screening_fixed"):
        print(f"at the paper's threshold {r['threshold']:g}: {r['tp']} of {r['positives']} caught, "
              f"{r['fp']} of {r['n'] - r['positives']} harmless flagged (paper: {PAPER_LM['caught']}, "
              f"{PAPER_LM['flagged']})")
    pre = [r for r in rows(f, "lm/analysis/screening_preregistered") if r["score"] == "screen_score"][0]
    groups = sorted({r["members"] for r in ta})
    fit = {g for i, g in enumerate(groups) if i % 2 == 0}
    on_fit = np.array([r["members"] in fit for r in ta])
    tp, fp, tn, fn = confusion(score[on_fit], positive[on_fit], pre["threshold"])
    print(f"threshold {pre['threshold']:.4g} fixed on {pre['fit_n']} merges: there {tp} of {tp + fn} caught, "
          f"{fp} of {fp + tn} flagged; on the other {pre['test_n']}: {pre['tp']} of {pre['tp'] + pre['fn']} "
          f"caught, {pre['fp']} of {pre['fp'] + pre['tn']} flagged")
    for r in rows(f, "lm/analysis/screening"):
        print(f"  {r['score']:>13}: AUROC {r['auroc']:.3f}, best threshold {r['best_threshold']:.4g}")


def k2(f):
    merges = [r for r in rows(f, "lm/merges") if r["k"] == 2 and r["coef"] == 1.0 and r["kappa"] in (0.0, 1.0)]
    by = {r["method"]: r for r in merges}
    prism = by["prism"]
    print(f"\nK = 2 ({prism['members']}), c = 1: base {prism['base_mean']:.3f}, specialists {prism['ft_mean']:.3f}")
    for m in ("prism", "task_arithmetic", "ties", "della", "dare", "breadcrumbs", "iso_c", "model_stock", "slerp"):
        if m in by:
            print(f"  {m:>16}: {by[m]['merged_mean']:.3f} (PRISM {100 * (prism['merged_mean'] - by[m]['merged_mean']):+.1f} pp)"
                  f", update {by[m]['update_pct']:.1f}% of the mean's")


def drift(f):
    for r in rows(f, "lm/analysis/drift"):
        print(f"drift {r['backbone']} {r['members'] or ''}: score ≈ a·steps^{r['exponent']:.2f} (r² {r['r2']:.3f}; paper {PAPER_DRIFT_EXPONENT})")


def main(path):
    f = h5py.File(path, "r")
    specialists(f)
    screening(f)
    k2(f)
    drift(f)


if __name__ == "__main__":
    main(sys.argv[1])
