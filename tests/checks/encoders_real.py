"""Checks of tests/e2e/encoders_real.sh, run as: python3 -m checks encoders_real FUNCTION ARGS..."""


def tables(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    from scipy.stats import kendalltau, spearmanr
    f = h5py.File(argv[1] + "/results.h5", "r")
    s = {k: f["encoders/subsets"][k][:] for k in f["encoders/subsets"]}
    assert len(s["mask"]) == 93 and sorted(set(s["mask"])) == list(range(1, 32))
    enc = ["convnext", "eva02", "clip", "pix2struct", "sam"]
    bench = ["gqa", "mmb", "sqa", "ai2d", "textvqa", "chartqa", "cvbench", "mmvp"]
    avg = np.mean([s[b] for b in bench], axis=0)
    assert np.allclose(avg, s["average"]) and np.allclose(s["im_average"], 0.95 * s["average"])
    assert np.allclose(s["ocr_chart"], (s["textvqa"] + s["chartqa"]) / 2)
    for i, m in enumerate(s["mask"]):                       # erank only for the subset's encoders
        for e, name in enumerate(enc):
            assert np.isnan(s["erank_" + name][i]) != bool(m & (1 << e))
    def erank(x):                                            # methods.md 1.5, centred
        sv = np.linalg.svd(x - x.mean(0), compute_uv=False)
        p = sv / sv.sum(); p = p[p > 0]
        return np.exp(-(p * np.log(p)).sum())
    import glob, os
    S = {m: s["average"][s["mask"] == m].mean() for m in range(1, 32)}
    SI = {m: s["im_average"][s["mask"] == m].mean() for m in range(1, 32)}
    cn = {k: f["encoders/analysis/capacity_necessity"][k][:] for k in f["encoders/analysis/capacity_necessity"]}
    rows = cn["category"] == b"overall"
    cap = [S[1 << e] / S[31] for e in range(5)]
    nec = [S[31] - S[31 & ~(1 << e)] for e in range(5)]
    assert np.allclose(cn["capacity"][rows], cap) and np.allclose(cn["necessity"][rows], nec)
    ag = {k: f["encoders/analysis/ranking_agreement"][k][:] for k in f["encoders/analysis/ranking_agreement"]}
    tr1, im1 = [S[1 << e] for e in range(5)], [SI[1 << e] for e in range(5)]
    assert abs(ag["kendall"][0] - kendalltau(tr1, im1).statistic) < 1e-12
    assert abs(ag["kendall_p"][0] - kendalltau(tr1, im1).pvalue) < 1e-12
    assert abs(ag["spearman"][0] - spearmanr(tr1, im1).statistic) < 1e-12
    bs = {k: f["encoders/analysis/by_size"][k][:] for k in f["encoders/analysis/by_size"]}
    for z in range(1, 6):
        best = max((S[m], m) for m in S if bin(m).count("1") == z)
        assert abs(bs["best_score"][z - 1] - best[0]) < 1e-12
    tx = {k: f["encoders/analysis/taxonomy"][k][:] for k in f["encoders/analysis/taxonomy"]}
    roles = dict(zip((e.decode() for e in tx["encoder"]), (r.decode() for r in tx["role"])))
    assert set(roles.values()) <= {"core", "specialist", "adaptive complement", "replaceable"}
    core = {enc[e] for e in range(5) if cap[e] >= np.median(cap) and nec[e] >= np.median(nec)}
    assert {e for e, r in roles.items() if r == "core"} == core, (roles, core)
    cats = {"general": ("gqa", "mmb"), "knowledge": ("sqa", "ai2d"), "ocr_chart": ("textvqa", "chartqa"),
            "vision_centric": ("cvbench", "mmvp")}
    def cat_score(m, c):
        return np.mean([s[b][s["mask"] == m].mean() for b in cats[c]])
    for e in range(5):
        if enc[e] in core:
            continue
        pos = [max(0.0, cat_score(31, c) - cat_score(31 & ~(1 << e), c)) for c in cats]
        if sum(pos) > 0 and max(pos) / sum(pos) > 0.5:
            assert roles[enc[e]] == "specialist", (enc[e], roles)
    pairs_and_claims(f, s, S, enc)
    print("encoders on real-model stand-ins: 93 subsets; capacity, necessity, rankings, pairs, claims agree; roles",
          roles)


def pairs_and_claims(f, s, S, enc):
    """best_pair (anchor, complement, the gap from each), delta_rank and the claims'
    statistics against numpy/scipy (methods.md §4)."""
    import numpy as np
    from scipy.stats import spearmanr
    t = lambda name: {k: f["encoders/analysis/" + name][k][:] for k in f["encoders/analysis/" + name]}
    E = {}  # mask -> {encoder index: mean erank}
    for m in range(1, 32):
        E[m] = {e: np.mean(s["erank_" + enc[e]][s["mask"] == m]) for e in range(5) if m >> e & 1}
    delta = lambda m, e: E[m][e] - E[1 << e][e]
    bp = t("best_pair")
    best = max((S[m], m) for m in S if bin(m).count("1") == 2)[1]
    a, c = sorted((e for e in range(5) if best >> e & 1), key=lambda e: -S[1 << e])
    assert bp["pair"][0].decode() == f"{enc[min(a, c)]}+{enc[max(a, c)]}"
    assert (bp["anchor"][0].decode(), bp["complement"][0].decode()) == (enc[a], enc[c])
    assert np.isclose(bp["gap_closed"][0], (S[best] - S[1 << c]) / (S[31] - S[1 << c]))
    assert np.isclose(bp["gap_closed_from_anchor"][0], (S[best] - S[1 << a]) / (S[31] - S[1 << a]))
    assert np.isclose(bp["complement_delta_rank"][0], delta(best, c))
    dr = t("delta_rank")
    assert len(dr["encoder"]) == sum(bin(m).count("1") for m in range(1, 32) if bin(m).count("1") > 1)
    cl = t("claims")
    claims = dict(zip((c.decode() for c in cl["claim"]), range(len(cl["claim"]))))
    sd = {m: np.std(s["average"][s["mask"] == m], ddof=1) / np.sqrt((s["mask"] == m).sum()) for m in S}
    ratio = np.std(list(S.values()), ddof=1) / np.median(list(sd.values()))
    assert np.isclose(cl["value"][claims["regime"]], ratio), (cl["value"], ratio)
    x, y = [], []
    for m in S:
        if bin(m).count("1") == 2:
            members = sorted((e for e in range(5) if m >> e & 1), key=lambda e: -S[1 << e])
            x.append(delta(m, members[1]))
            y.append(S[m])
    rho = spearmanr(x, y)
    assert np.isclose(cl["value"][claims["pairs_from_complement_delta_rank"]], rho.statistic)
    assert np.isclose(cl["p"][claims["pairs_from_complement_delta_rank"]], rho.pvalue)
    verdicts = {c.decode() for c in cl["verdict"]}
    assert verdicts <= {"holds", "fails", "agrees", "disagrees", "untested"}, verdicts


def pool_workdir_run(*args):
    """With {pool_workdir}: every subset ran after its replicate's full pool and read its
    model.json (im = 0.95 × TR again); all 93 rows done."""
    argv = ["-", *args]
    import h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    s = {k: f["encoders/subsets"][k][:] for k in f["encoders/subsets"]}
    assert len(s["mask"]) == 93 and np.isfinite(s["average"]).all()
    assert np.allclose(s["im_average"], 0.95 * s["average"])
    status = [t.decode() for t in f["tasks/status"][:]]
    assert status.count("done") == 93, status
    print("pool_workdir: 93 subsets after their full pools")


def full_pools_failed_alone(*args):
    """No {pool_workdir}: the three full pools failed and the other 90 subsets are done."""
    argv = ["-", *args]
    import h5py
    f = h5py.File(argv[1] + "/results.h5", "r")
    status = dict(zip((t.decode() for t in f["tasks/id"][:]), (t.decode() for t in f["tasks/status"][:])))
    assert sorted(t for t, st in status.items() if st == "failed") == [f"subsets/r{r}/mask31" for r in (1, 2, 3)]
    assert sum(st == "done" for st in status.values()) == 90, status
    print("without {pool_workdir}: 3 full pools failed alone, 90 done")


def full_pool_failed(*args):
    """The full pool of replicate 2 failed: its 30 other subsets are skipped behind it, the
    other replicates' 62 are done."""
    argv = ["-", *args]
    import h5py
    f = h5py.File(argv[1] + "/results.h5", "r")
    status = dict(zip((t.decode() for t in f["tasks/id"][:]), (t.decode() for t in f["tasks/status"][:])))
    assert [t for t, st in status.items() if st == "failed"] == ["subsets/r2/mask31"], status
    skipped = sorted(t for t, st in status.items() if st == "skipped")
    assert len(skipped) == 30 and all(t.startswith("subsets/r2/") for t in skipped), skipped
    assert sum(st == "done" for st in status.values()) == 62
    print("a failed full pool: its replicate waits, 62 done")


def bad_result_named(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    ids = [t.decode() for t in f["encoders/subsets/task_id"][:]]
    done = ~np.isnan(f["encoders/subsets/average"][:])
    assert done.sum() == 90, done.sum()
    status = dict(zip((t.decode() for t in f["tasks/id"][:]), (t.decode() for t in f["tasks/status"][:])))
    failed = sorted(t for t, st in status.items() if st == "failed")
    assert failed == [f"subsets/r{r}/mask6" for r in (1, 2, 3)], failed
    assert "encoders/analysis/taxonomy" in f
    print("a bad result: 3 tasks failed with the file named, 90 done, analysis written")
