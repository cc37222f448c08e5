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
    print("encoders on real-model stand-ins: 93 subsets; capacity, necessity, rankings agree; roles", roles)


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
