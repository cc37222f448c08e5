"""Checks of tests/e2e/zoo_smoke.sh, run as: python3 -m checks zoo_smoke FUNCTION ARGS..."""


def _run(out):
    """The run's results.h5, open, and compatnets' safetensors reader."""
    import h5py
    from compatnets.safetensors import read
    return h5py.File(out + "/results.h5", "r"), read


def tables(out):
    import json
    f, read = _run(out)
    m = {k: f["zoo/models"][k][:] for k in f["zoo/models"]}
    names = [n.decode() for n in m["name"]]
    assert len(names) == 20 and names[0] == "sup_v_1" and names[-1] == "mae_bb_1+detail-long", names
    assert set(x.decode() for x in m["modality"]) == {"vision", "text", "backbone", "finetune", "pool"}
    assert all(0 <= a <= 1 for a in m["probe_acc"])
    world = json.load(open(out + "/artifacts/world/world.json"))
    for name in names:
        side = json.load(open(f"{out}/artifacts/models/{name}.json"))
        w = read(f"{out}/artifacts/models/{name}.safetensors").tensors
        first = w["layers.0.weight"]
        assert first.shape == (side["spec"]["width"], side["input_dim"]), (name, first.shape)
        if name.endswith("-long"):
            continue  # the drift fine-tunes have no features
        feats = read(f"{out}/artifacts/features/{name}/probe.safetensors").tensors["features"]
        rows = world["splits"]["probe"] * (5 if side["modality"] == "text" else 1)
        assert feats.shape == (rows, side["spec"]["out_dim"]), (name, feats.shape)
        if side["modality"] == "finetune":
            assert "head.weight" in w and side["task"] in name
    split = read(out + "/artifacts/world/train.safetensors").tensors
    assert split["images"].shape == (2048, 64) and split["captions"].shape == (10240, 48)
    print("zoo artifacts: 20 models, weights and features readable with numpy")


def alignment_study(out):
    import numpy as np
    f, read = _run(out)
    grid = {k: f["alignment/grid"][k][:] for k in f["alignment/grid"]}
    assert len(grid["vision"]) == 6
    def probe(name):
        return read(f"{out}/artifacts/knn/align_knn/{name}.safetensors").tensors["probe"].astype(np.float64)
    def knn(x, k):
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        s = x @ x.T
        np.fill_diagonal(s, -np.inf)
        return np.argsort(-s, axis=1, kind="stable")[:, :k]
    def cka(x, y):
        x = x / np.linalg.norm(x, axis=1, keepdims=True); y = y / np.linalg.norm(y, axis=1, keepdims=True)
        x = x - x.mean(0); y = y - y.mean(0)
        return np.linalg.norm(x.T @ y) ** 2 / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y))
    for i in range(6):
        v, t = probe(grid["vision"][i].decode()), probe(grid["text"][i].decode())
        for k in (10, 100):
            a, b = knn(v, k), knn(t, k)
            ease = np.mean([len(set(a[r]) & set(b[r])) / k for r in range(len(a))])
            assert abs(ease - grid[f"ease_k{k}"][i]) < 2e-3, (i, k, ease, grid[f"ease_k{k}"][i])
        assert abs(cka(v, t) - grid["cka"][i]) < 1e-9, (i, cka(v, t), grid["cka"][i])
    pairs = f["alignment/pairs"]
    assert len(pairs["vision"]) == 4 and set(pairs["region"][:]) <= {b"act_now", b"budget_limited", b"ceiling_limited", b"incompatible"}
    assert len(f["alignment/budget_fits/epochs"]) == 6
    for t in ("correlations", "regions", "kruskal", "budget_search", "budget_curve", "lofo", "lofo_range",
              "k_sensitivity", "metadata_regressor", "budget"):
        assert t in f["alignment/analysis"], t
    print("alignment on the smoke zoo: ease and CKA agree with numpy")


def merging_study(out):
    import numpy as np
    f, read = _run(out)
    p = {k: f["merging/pairs"][k][:] for k in f["merging/pairs"]}
    assert len(p["model_a"]) == 6
    def weights(name):
        t = read(f"{out}/artifacts/models/{name}.safetensors").tensors
        return {k: v.astype(np.float64).ravel() for k, v in t.items() if not k.startswith("head.")}
    for i in range(6):
        base = weights(p["backbone"][i].decode())
        a, b = weights(p["model_a"][i].decode()), weights(p["model_b"][i].decode())
        ta = np.concatenate([a[k] - base[k] for k in sorted(base)])
        tb = np.concatenate([b[k] - base[k] for k in sorted(base)])
        var = np.var(np.stack([ta, tb]), axis=0)                     # population variance, K = 2
        assert abs(var.mean() - p["interference"][i]) < 1e-6 * var.mean() + 1e-12, (i, var.mean(), p["interference"][i])
        assert abs(np.sqrt(var.mean() / 2) - p["screen_score"][i]) < 1e-6 * p["screen_score"][i]
        stack = np.stack([ta, tb])
        cancel = np.abs(stack).mean(0) ** 2 - stack.mean(0) ** 2
        assert abs(cancel.sum() / var.sum() - p["rho"][i]) < 1e-6, (i, cancel.sum() / var.sum(), p["rho"][i])
    retention = 0.5 * (p["acc_a"] / p["ft_acc_a"] + p["acc_b"] / p["ft_acc_b"])
    assert np.allclose(retention, p["retention"])
    assert list(p["destructive"]) == list((p["acc_a"] + p["acc_b"] < p["base_acc_a"] + p["base_acc_b"]).astype(int))
    par = f["merging/analysis/paradigms"]
    assert sorted(x.decode() for x in par["paradigm"][:]) == ["clip", "masked", "supervised", "untrained"]
    assert "screen_score" in [x.decode() for x in f["merging/analysis/correlations/predictor"][:]]
    scr = f["merging/analysis/screening"]
    assert [x.decode() for x in scr["score"][:]] == ["screen_score", "sign_conflict", "rho"]
    mixed = 0 < p["destructive"].sum() < 6
    assert all((0 <= a <= 1) if mixed else np.isnan(a) for a in scr["auroc"][:])
    assert list(scr["positives"][:]) == [p["destructive"].sum()] * 3
    pre = f["merging/analysis/screening_preregistered"]
    assert all(a + b == 6 for a, b in zip(pre["fit_n"][:], pre["test_n"][:]))
    print("merging on the smoke zoo: interference agrees with numpy")


def prism_study(out):
    import math, numpy as np
    f, read = _run(out)
    g = {k: f["prism/merges"][k][:] for k in f["prism/merges"]}
    assert len(g["method"]) == 78, len(g["method"])
    def weights(name):
        t = read(f"{out}/artifacts/models/{name}.safetensors").tensors
        return {k: (v.astype(np.float64).ravel(), list(v.shape)) for k, v in t.items() if not k.startswith("head.")}
    def update(method, c, kappa, base, models):
        """theta - theta0 per tensor (file order), methods.md 3.2."""
        names = list(base)
        taus = {k: np.stack([m[k][0] - base[k][0] for m in models]) for k in names}
        I = sum(np.var(t, axis=0).sum() for t in taus.values())
        C = sum((np.abs(t).mean(0) ** 2 - t.mean(0) ** 2).sum() for t in taus.values())
        rho = C / I
        out = {}
        for k in names:
            t, m, n = taus[k], taus[k].mean(0), taus[k].shape[1]
            if method == "task_arithmetic":
                d = c * m
            elif method == "ties":
                keep = int(0.2 * n)  # mergekit: int(density * numel)
                tr = np.zeros_like(t)
                for i in range(len(t)):
                    idx = np.argsort(-np.abs(t[i]), kind="stable")[:keep]
                    tr[i, idx] = t[i, idx]
                sign = np.where(tr.sum(0) < 0, -1.0, 1.0)
                agree = (np.sign(tr) == sign) & (tr != 0)
                cnt = agree.sum(0)
                d = c * np.where(cnt > 0, (tr * agree).sum(0) / np.maximum(cnt, 1), 0.0)
            elif method == "slerp":
                a, b = models[0][k][0], models[1][k][0]
                cos = np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1, 1)
                if abs(cos) > 0.9995:
                    d = 0.5 * a + 0.5 * b - base[k][0]
                else:
                    om = math.acos(cos)
                    d = (math.sin(0.5 * om) * a + math.sin(0.5 * om) * b) / math.sin(om) - base[k][0]
            elif method == "model_stock":
                K = len(t)
                cs = [t[i] @ t[j] / (np.linalg.norm(t[i]) * np.linalg.norm(t[j])) for i in range(K) for j in range(i + 1, K)]
                cm = float(np.mean(cs))
                d = K * cm / (1 + (K - 1) * cm) * m
            else:
                lam = 0.0
                if rho >= 0.1:
                    lam = kappa * math.sqrt(np.var(t, axis=0).mean()) * math.sqrt(2 * math.log(n))
                    if len(base[k][1]) == 2:
                        floor = math.ceil(0.001 * n)
                        if (np.abs(m) > lam).sum() < floor < n:
                            lam = np.sort(np.abs(m))[::-1][floor]
                soft = np.sign(m) * np.maximum(np.abs(m) - lam, 0)
                d = {"prism": soft, "prism_hard": m * (np.abs(m) > lam),
                     "norm_matched": m * np.linalg.norm(soft) / np.linalg.norm(m)}[method]
                d = c * d
            out[k] = d
        u = np.concatenate([out[k] for k in names])
        mm = np.concatenate([taus[k].mean(0) for k in names])
        return 100 * np.linalg.norm(u) / np.linalg.norm(mm), np.count_nonzero(u) / u.size
    cache = {}
    checked = 0
    for i in range(len(g["method"])):
        method = g["method"][i].decode()
        if method == "dare":
            assert 0.5 < g["keep_fraction"][i] < 1
            continue
        bb = g["backbone"][i].decode()
        members = [f"{bb}+{t}" for t in g["members"][i].decode().split(",")]
        for n in [bb] + members:
            cache.setdefault(n, weights(n))
        pct, kept = update(method, g["coef"][i], g["kappa"][i], cache[bb], [cache[n] for n in members])
        assert abs(pct - g["update_pct"][i]) < 1e-4 * max(pct, 1e-3), (i, method, pct, g["update_pct"][i])
        assert abs(kept - g["keep_fraction"][i]) < 1e-9, (i, method, kept, g["keep_fraction"][i])
        checked += 1
    assert checked == 78 - (g["method"] == b"dare").sum()
    # The same pair through merge_pair and kway_merge: identical merged accuracy.
    pairs = {k: f["merging/merges"][k][:] for k in f["merging/merges"]}
    same = 0
    for i in np.where((g["method"] == b"task_arithmetic") & (g["k"] == 2) & (g["coef"] == 1.0))[0]:
        tasks = set(g["members"][i].decode().split(","))
        for j in range(len(pairs["task_a"])):
            if pairs["backbone"][j] == g["backbone"][i] and {pairs["task_a"][j].decode(), pairs["task_b"][j].decode()} == tasks:
                assert pairs["merged_mean"][j] == g["merged_mean"][i], (pairs["merged_mean"][j], g["merged_mean"][i])
                assert pairs["base_mean"][j] == g["base_mean"][i]
                same += 1
    assert same == 2, same
    # Drift: 5 checkpoints per backbone, stored; the exponent refitted.
    d = {k: f["prism/drift"][k][:] for k in f["prism/drift"]}
    assert list(d["step"][:5]) == [10, 20, 40, 80, 160], d["step"]
    fit = {k: f["prism/analysis/drift"][k][:] for k in f["prism/analysis/drift"]}
    for r, bb in enumerate(fit["backbone"]):
        if bb == b"all":
            continue
        sel = d["backbone"] == bb
        b = np.polyfit(np.log(d["step"][sel]), np.log(d["screen_score"][sel]), 1)[0]
        assert abs(b - fit["exponent"][r]) < 1e-9, (bb, b, fit["exponent"][r])
        base = weights(bb.decode())
        for step in (10, 160):
            ms = [weights(f"{bb.decode()}+{t}-long.step{step}") for t in ("concept_group", "detail")]
            tau = [np.concatenate([m[k][0] - base[k][0] for k in base]) for m in ms]
            row = np.where(sel & (d["step"] == step))[0][0]
            assert abs(np.var(np.stack(tau), axis=0).mean() - d["interference"][row]) < 1e-6 * d["interference"][row]
    for t in ("operators", "by_k", "kappa", "ablation", "drift", "screening", "screening_preregistered",
              "recovery_pairs", "recovery_claims", "screening_within"):
        assert t in f["prism/analysis"], t
    # The re-analysis (methods.md §5.2-§5.3): PRISM − TA recomputed per place from the merges,
    # each ablation's clustered interval around its mean (or NaN with its reason), and every
    # claim one of the four verdicts against its band.
    pairs = {k: f["prism/analysis/recovery_pairs"][k][:] for k in f["prism/analysis/recovery_pairs"]}
    assert len(pairs["ta"]) > 0 and np.allclose(pairs["prism_minus_ta"], pairs["prism"] - pairs["ta"])
    abl = {k: f["prism/analysis/ablation"][k][:] for k in f["prism/analysis/ablation"]}
    for i in range(len(abl["a"])):
        lo, hi, m = abl["cl_lo"][i], abl["cl_hi"][i], abl["mean_diff"][i]
        assert (np.isnan(lo) and abl["interval_reason"][i]) or lo - 1e-12 <= m <= hi + 1e-12, (abl["a"][i], lo, m, hi)
    claims = f["prism/analysis/recovery_claims"]
    assert set(claims["verdict"][:]) <= {b"agrees", b"disagrees", b"inconclusive", b"untested"}
    print(f"PRISM on the smoke zoo: {checked} merges' update norms and kept fractions agree with numpy; drift refitted;"
          f" {len(pairs['ta'])} PRISM − TA pairs and {len(abl['a'])} ablation intervals")


def encoder_roles_study(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    s = {k: f["encoders/subsets"][k][:] for k in f["encoders/subsets"]}
    assert len(s["mask"]) == 14 and sorted(set(s["mask"])) == list(range(1, 8))
    full = s["mask"] == 7
    assert np.array_equal(s["average"][full], s["im_average"][full])
    assert all(0 < a < 1 for a in s["average"]) and all(s["train_loss"] > 0)
    for i, m in enumerate(s["mask"]):
        for e, name in enumerate(["pool_sup", "pool_detail", "pool_geo"]):
            assert np.isnan(s["erank_" + name][i]) != bool(m & (1 << e))
    # Params grow with the subset (more encoders, a wider projector input).
    assert s["params"][s["mask"] == 7][0] > s["params"][s["mask"] == 3][0] > s["params"][s["mask"] == 1][0]
    S = {m: s["average"][s["mask"] == m].mean() for m in range(1, 8)}
    cn = {k: f["encoders/analysis/capacity_necessity"][k][:] for k in f["encoders/analysis/capacity_necessity"]}
    o = cn["category"] == b"overall"
    assert np.allclose(cn["capacity"][o], [S[1] / S[7], S[2] / S[7], S[4] / S[7]])
    assert np.allclose(cn["necessity"][o], [S[7] - S[6], S[7] - S[5], S[7] - S[3]])
    for t in ("rankings", "ranking_agreement", "by_size", "best_pair", "saturation", "erank",
              "delta_rank", "erank_summary", "taxonomy", "claims"):
        assert t in f["encoders/analysis"], t
    assert "replicate1.safetensors" in str(list(__import__("os").listdir(argv[1] + "/artifacts/encoders/subsets")))
    print("encoder roles on the smoke zoo: 14 subset models; IM, erank pattern and capacity/necessity checked")


def advice_manifest(out):
    """A feature_set manifest of the alignment study's models, paradigms from its own table."""
    import h5py
    s = h5py.File(out + "/results.h5", "r")["alignment/similarity"]
    print(f"features: {out}/artifacts/features\npairing: {out}/artifacts/world\nsplits: [probe]\nmodels:")
    for side in ("vision", "text"):
        seen = {}
        for name, paradigm in zip(s[side][:], s[side + "_paradigm"][:]):
            seen.setdefault(name.decode(), paradigm.decode())
        for name, paradigm in seen.items():
            print(f"  - {{name: {name}, modality: {side}, paradigm: {paradigm}}}")


def _median(v):
    v = sorted(v)
    a, b = v[(len(v) - 1) // 2], v[len(v) // 2]
    return a + (b - a) / 2


def align_advice_as_the_study(w):
    """`advise align` against the study's every-pair table and ceilings; regions by §1.3 over all
    the pairs (the study's own regions are over its trained pairs only)."""
    import json, h5py
    f = h5py.File(w + "/n2/results.h5", "r")
    s = {k: f["alignment/similarity"][k][:] for k in f["alignment/similarity"]}
    c = {k: f["alignment/analysis/ceilings"][k][:] for k in f["alignment/analysis/ceilings"]}
    ceiling = {(a.decode(), b.decode()): v for a, b, v in zip(c["paradigm_a"], c["paradigm_b"], c["ceiling"])}
    advice = {(a["vision"], a["text"]): a for a in json.load(open(w + "/zoo_align.json"))["pairs"]}
    assert len(advice) == len(s["vision"]) == 6, advice.keys()
    want = {}
    for i in range(6):
        key = (s["vision"][i].decode(), s["text"][i].decode())
        a, ceil = advice[key], ceiling[(s["vision_paradigm"][i].decode(), s["text_paradigm"][i].decode())]
        assert a["ease"] == s["ease"][i] and a["ceiling"] == ceil, (key, a, s["ease"][i], ceil)
        assert a["score"] == s["ease"][i] * ceil, (key, a)
        # The study's text probe is its own forward pass over the 1,024 first captions, which
        # differs from the exported 5,120-caption features in float32's last bits (5e-7):
        # the k-NN lists are the same, CKA agrees to 1e-8.
        assert abs(a["cka"] - s["cka"][i]) <= 1e-8 * s["cka"][i], (key, a, s["cka"][i])
        want[key] = (a["ease"], a["ceiling"])
    me, mc = _median([e for e, _ in want.values()]), _median([c for _, c in want.values()])
    names = {(1, 1): "act_now", (0, 1): "budget_limited", (1, 0): "ceiling_limited", (0, 0): "incompatible"}
    for key, (e, c) in want.items():
        assert advice[key]["region"] == names[(int(e >= me), int(c >= mc))], (key, advice[key])
    print("advise align on the smoke zoo: the 6 pairs' ease, ceiling and score exactly as the study's, "
          "CKA to 1e-8, regions by the medians")


def merge_advice_as_the_study(w):
    """`advise merge` on each backbone's three fine-tunes against the merging study's pairs."""
    import json, h5py
    from checks.advise import expect_pair_as_study
    m = h5py.File(w + "/n2/results.h5", "r")["merging/merges"]
    assert len(m["model_a"]) == 6, len(m["model_a"])
    for i in range(len(m["model_a"])):
        bb = m["backbone"][i].decode()
        advice = json.load(open(f"{w}/zoo_advice_{bb}.json"))
        rows = {frozenset(a["members"]): a for a in advice["merges"]}
        a = rows[frozenset((m["model_a"][i].decode(), m["model_b"][i].decode()))]
        expect_pair_as_study(a, m, i, bb)
        assert a["operator"] == ("prism" if a["score"] > advice["threshold"] else "mean"), a
    print(f"advise merge on the smoke zoo: the {len(m['model_a'])} pairs of the merging study screened alike")
