"""Checks of tests/e2e/lm_study.sh: the drift study's tables (configs/real-lm-smoke.yaml)
recomputed from its merges, and the relative norm of a model trained apart."""
import os

import h5py
import numpy as np


def _table(results, name):
    g = h5py.File(results, "r")[name]
    return {k: (g[k][:].astype(str) if g[k].dtype.kind == "S" else g[k][:]) for k in g}


def _auroc(score, positive):
    pos, neg = score[positive], score[~positive]
    return float(np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg]))


def tables(out):
    f = os.path.join(out, "results.h5")
    spec = _table(f, "lm/specialists")
    assert sorted(set(spec["lr"].tolist())) == [1e-4, 1e-3], spec["lr"]
    for d in set(spec["domain"]):  # each domain drifts further at the higher rate
        lo, hi = (spec["rel_norm"][(spec["domain"] == d) & (spec["lr"] == r)][0] for r in (1e-4, 1e-3))
        assert hi > 2 * lo, (d, lo, hi)
    cks = _table(f, "lm/finetunes")  # the runner's streamed norm, against PyTorch's
    for name, rel in zip(cks["name"], cks["relative_norm"]):
        lr, domain = name[2:].split("+")
        want = spec["rel_norm"][(spec["domain"] == domain) & np.isclose(spec["lr"], float(lr))][0]
        assert abs(rel - want) <= 1e-5 * want, (name, rel, want)
    m = _table(f, "lm/merges")
    k2 = (m["k"] == 2) & (m["method"] == "task_arithmetic") & (m["coef"] == 1.0) & (m["backbone"] == "lr1e-4")
    assert sorted(m["members"][k2]) == sorted({",".join(p) for p in
                                              [("english", "python"), ("english", "c"), ("english", "german"),
                                               ("python", "c"), ("python", "german"), ("c", "german")]}), m["members"][k2]
    diff = m["merged_mean"] - m["base_mean"]
    assert (m["destructive"] == (diff < -2 * m["diff_se"])).all()
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(m["margin"], np.where(diff == 0, 0.0, diff / m["diff_se"]), rtol=1e-12)
    assert np.isfinite(m["all_acc"]).all() and ((m["gen"] >= 0) & (m["gen"] <= 1)).all()
    _recovery_as_recounted(f, m)
    _screening_as_recounted(f, m)
    fl = _table(f, "lm/floors")
    assert sorted(set(fl["keep_floor"].tolist())) == [0.001, 0.01, 0.05, 0.2, 1.0], fl["keep_floor"]
    every = (fl["keep_floor"] == 1.0) & (fl["kappa"] == 100)  # the top 100%: task arithmetic
    for i in np.flatnonzero(every):
        ta = (m["method"] == "task_arithmetic") & (m["coef"] == 1.0) & (m["members"] == fl["members"][i]) & \
             (m["backbone"] == fl["backbone"][i])
        assert fl["merged_mean"][i] == m["merged_mean"][ta][0], (fl["members"][i], fl["merged_mean"][i])
    drift = _table(f, "lm/drift")
    assert sorted(set(drift["step"].tolist())) == [10, 20, 40], drift["step"]
    print(f"drift study: {len(m['k'])} merges, {int(m['destructive'].sum())} destructive by their margin; "
          "recovery, screening and floors as recomputed")


def _recovery_as_recounted(f, m):
    rec = _table(f, "lm/analysis/recovery")
    for i in np.flatnonzero(rec["backbone"] == "all"):
        c = rec["coef"][i]
        key = lambda j: (m["backbone"][j], m["members"][j])  # noqa: E731
        ta = {key(j): j for j in np.flatnonzero((m["method"] == "task_arithmetic") & (m["coef"] == c))}
        pr = {key(j): j for j in np.flatnonzero((m["method"] == "prism") & (m["coef"] == c))}
        d = [m["merged_mean"][pr[k]] - m["merged_mean"][j] for k, j in ta.items() if m["destructive"][j]]
        assert rec["n"][i] == len(ta) and rec["ta_destroyed"][i] == len(d), (rec["n"][i], len(d))
        if d:
            assert abs(rec["diff_destroyed"][i] - np.mean(d)) < 1e-12
            assert rec["wins"][i] == sum(x > 0 for x in d) and rec["losses"][i] == sum(x < 0 for x in d)
        screened = [m["merged_mean"][pr[k] if m["screen_score"][j] > 1.9e-3 else j] for k, j in ta.items()]
        assert abs(rec["screened"][i] - np.mean(screened)) < 1e-12


def _screening_as_recounted(f, m):
    ta = m["method"] == "task_arithmetic"
    s = _table(f, "lm/analysis/screening")
    i = list(s["score"]).index("screen_score")
    assert abs(s["auroc"][i] - _auroc(m["screen_score"][ta], m["destructive"][ta] != 0)) < 1e-12
    assert s["auroc_lo"][i] <= s["auroc"][i] <= s["auroc_hi"][i], s
    k2 = _table(f, "lm/analysis/screening_k2")
    assert k2["n"][0] == int((ta & (m["k"] == 2) & (m["coef"] == 1.0)).sum()), k2["n"]


def far(out):
    t = _table(os.path.join(out, "results.h5"), "far")
    rel = dict(zip(t["name"], t["relative_norm"]))
    assert rel["near"] < 1 < rel["apart"] < 1.6, rel
    print(f"relative norms: a specialist {rel['near']:.2f}, a model trained apart {rel['apart']:.2f} (warned)")
