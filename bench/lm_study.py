"""PRISM's drift study on the language models (configs/real-lm.yaml) from a run's
results.h5, as docs/language-models.md defines it: the base's loss curve, the specialists per
drift level, the regime, each claim judged by the rule fixed before the run (the report's
own judgement, compatnets.report.lm), the keep floors, and each part's task time.
    PYTHONPATH=python /usr/bin/python3 bench/lm_study.py RESULTS_H5
"""
import json
import os
import sys

import h5py
import numpy as np

from compatnets.report.h5 import table
from compatnets.report.lm import _floors, drift_claims


def models(f):
    b = table(f, "/lm/base")
    curve = [float(b[f"heldout_{i}"][0]) for i in range(1, 11)]
    print(f"base: {int(b['params'][0]):,} parameters, {int(b['tokens'][0]):,} tokens; mean accuracy "
          f"{b['acc_mean'][0]:.3f}, perplexity {b['ppl_mean'][0]:.2f}, generation {b['gen_mean'][0]:.3f}")
    print("held-out loss after each tenth: " + ", ".join(f"{c:.3f}" for c in curve) +
          f"; last tenth {100 * b['last_tenth_gain'][0]:.2f}%")
    s = table(f, "/lm/specialists")
    print(f"\n{'level':>6} {'domain':>8} {'rel':>6} {'rel mlp':>7} {'own':>6} {'base':>6} {'others':>7} {'base':>6}"
          f" {'loss oth':>8} {'base':>6} {'gen':>5} {'base':>5}")
    for i in np.lexsort((s["domain"], s["lr"])):
        print(f"{s['lr'][i]:>6g} {s['domain'][i]:>8} {s['rel_norm'][i]:>6.3f} {s['rel_norm_mlp'][i]:>7.3f} "
              f"{s['acc'][i]:>6.3f} {s['base_acc'][i]:>6.3f} {s['acc_other'][i]:>7.3f} {s['base_acc_other'][i]:>6.3f} "
              f"{s['loss_other'][i]:>8.3f} {s['base_loss_other'][i]:>6.3f} {s['gen'][i]:>5.2f} {s['base_gen'][i]:>5.2f}")


def claims(f):
    levels, span, holds, rows = drift_claims(f)
    print("\nthe regime: " + "; ".join(
        f"{r['level']}: rel norm {r['rel_norm_mlp']:.3f} (mlp), {r['k2_destructive']} of {r['k2_merges']} "
        f"K = 2, c = 1 TA merges destructive, mean score {r['k2_score']:.3g}" for r in levels))
    print(f"relative norms span {span:.1f}x; the regime {'holds' if holds else 'did not appear'}\n")
    for claim, paper, here, verdict in rows:
        print(f"- {claim}\n    paper: {paper or '—'}\n    here:  {here}\n    {verdict}")


def merges(f):
    m = table(f, "/lm/merges")
    print(f"\n{'level':>7} {'method':>16} {'c':>4} {'n':>4} {'merged':>7} {'base':>6} {'all 8':>6} {'gen':>5} "
          f"{'destr.':>6} {'margin':>7}")
    for b in sorted(set(m["backbone"]), key=lambda x: float(x[2:])):
        for meth in ("task_arithmetic", "ties", "della", "prism", "prism_hard"):
            for c in (0.5, 1.0):
                i = (m["backbone"] == b) & (m["method"] == meth) & (m["coef"] == c)
                if i.any():
                    print(f"{b:>7} {meth:>16} {c:>4g} {i.sum():>4} {m['merged_mean'][i].mean():>7.4f} "
                          f"{m['base_mean'][i].mean():>6.4f} {m['all_acc'][i].mean():>6.4f} {m['gen'][i].mean():>5.3f} "
                          f"{int(m['destructive'][i].sum()):>6} {np.nanmedian(m['margin'][i]):>7.1f}")
    fl = _floors(lambda p: table(f, p))
    if fl is not None:
        print("\nPRISM-hard at κ = 100 (task arithmetic on the top p of |τ̄|), mean over member sets:")
        for i in range(len(fl["k"])):
            print(f"  {fl['backbone'][i]:>7} K = {fl['k'][i]} p = {fl['keep_floor'][i]:<6g} merged "
                  f"{fl['merged_mean'][i]:.4f} (base {fl['base_mean'][i]:.4f}, specialists {fl['ft_mean'][i]:.4f}, "
                  f"mean margin {fl['margin'][i]:+.1f} SE)")


def timing(path):
    """Each group's summed task time, from the run's ledger beside its results.h5."""
    by = {}
    for line in open(os.path.join(os.path.dirname(path), "ledger.jsonl")):
        r = json.loads(line)
        g = r["id"].split("/")[0]
        by[g] = by.get(g, 0.0) + float(r.get("duration", 0.0))
    print("\ntask time by group: " + ", ".join(f"{g} {t / 60:.1f} min" for g, t in by.items()))


def main(path):
    f = h5py.File(path, "r")
    models(f)
    claims(f)
    merges(f)
    timing(path)


if __name__ == "__main__":
    main(sys.argv[1])
