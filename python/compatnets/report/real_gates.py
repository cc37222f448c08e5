"""The rules that judge the real library's COMPASS and PRISM studies against the papers, fixed
before the run (docs/real-networks.md, "What counts"): the regime's gates, the reliability cap
of a correlation with a noisy target, and each claim's verdict. Pure functions of numpy arrays
and tables ({column: array}, as h5.table gives them); nothing here reads a file, and
nothing is tuned. A gate that fails makes its study not informative: its numbers are shown,
and no verdict against the paper."""
import math

import numpy as np

# docs/real-networks.md, "What counts": the thresholds, fixed in advance.
MEDIAN_OF_ORACLE = 0.25  # G1: the pairs' median R@1 on flickr ≥ 0.25 × the captions' oracle R@1
SPREAD_OVER_SE = 4.0  # G2 (per split) and M2: the spread across pairs/merges ≥ 4 × one's SE
MIN_DESTRUCTIVE = 10  # M1: at least 10 destructive pair merges before PRISM's recovery is tested
RECOVERY_P = 0.05  # PRISM recovers: mean gain on the merges TA destroys > 0 and sign test p < 0.05
SPLITS = ("flickr", "coco")
# The fine-tunes' test images per task (python/compatnets/finetune.py): the flickr and coco
# images (2000 in configs/real.yaml; the run's /real/data says) for every task,
# scikit-learn's digits 597.
TEST_IMAGES = 2000
TEST_IMAGES_BY_TASK = {"digits": 597}


def gate(name, rule, measured, threshold):
    """One gate: it holds when measured ≥ threshold (a NaN never holds)."""
    measured, threshold = float(measured), float(threshold)
    return {"gate": name, "rule": rule, "measured": measured, "threshold": threshold,
            "holds": bool(measured >= threshold)}


def failed(gates):
    """The gates that do not hold, in words ("G2 (coco): ..., measured 0.004 < 0.006"); ""
    when all hold."""
    words = []
    for g in gates:
        if g["holds"]:
            continue
        if not (math.isfinite(g["measured"]) and math.isfinite(g["threshold"])):
            words.append(f"{g['gate']}: {g['rule']}, cannot be measured (measured {g['measured']:.4g}, "
                         f"threshold {g['threshold']:.4g}: an input is not in the file)")
        else:
            words.append(f"{g['gate']}: {g['rule']}, measured {g['measured']:.4g} < {g['threshold']:.4g}")
    return "; ".join(words)


def reliability(se, spread):
    """(rel, cap): the share of the targets' variance across pairs that is not one pair's
    sampling error, rel = max(0, 1 − SE²/spread²), and the highest Pearson r a perfect
    predictor could reach against such a target, sqrt(rel)."""
    se, spread = float(se), float(spread)
    rel = max(0.0, 1.0 - se * se / (spread * spread)) if spread > 0 else 0.0
    return rel, math.sqrt(rel)


def split_spread(r1, images):
    """One split's R@1 over the pairs: mean, median, range, one pair's binomial standard error
    on the split's images (SE = sqrt(m̄(1 − m̄)/N)), the spread across pairs (sample sd), their
    ratio, and the reliability and its cap."""
    r1 = np.asarray(r1, float)
    n = len(r1)
    if not n:
        r1 = np.array([math.nan])
    m = float(np.mean(r1))
    se = math.sqrt(m * (1 - m) / images) if images > 0 else math.nan
    spread = float(np.std(r1, ddof=1)) if n > 1 else math.nan
    rel, cap = reliability(se, spread) if np.isfinite(spread) and np.isfinite(se) else (math.nan, math.nan)
    return {"n": n, "images": int(images), "mean": m, "median": float(np.median(r1)),
            "min": float(np.min(r1)), "max": float(np.max(r1)), "se": se, "spread": spread,
            "ratio": spread / se if se > 0 else math.nan, "reliability": rel, "cap": cap}


def alignment_regime(r1, images, oracle_flickr):
    """The alignment study's regime: `r1` {split: the evaluated pairs' image→text R@1},
    `images` {split: its images}, `oracle_flickr` the captions' oracle R@1 on flickr (NaN when
    not recorded). Returns {"splits": {split: split_spread}, "gates": [G1, G2 per split],
    "informative": all gates hold}."""
    splits = {s: split_spread(r1[s], images[s]) for s in SPLITS}
    gates = [gate("G1", f"median R@1 on flickr ≥ {MEDIAN_OF_ORACLE:g} × oracle R@1",
                  splits["flickr"]["median"], MEDIAN_OF_ORACLE * float(oracle_flickr))]
    gates += [gate(f"G2 ({s})", f"spread of R@1 across pairs ≥ {SPREAD_OVER_SE:g} × one pair's SE",
                   splits[s]["spread"], SPREAD_OVER_SE * splits[s]["se"]) for s in SPLITS]
    return {"splits": splits, "gates": gates, "informative": all(g["holds"] for g in gates)}


def ci_verdict(paper, low, high):
    """"agrees" when the paper's r lies inside the measured Pearson 95% CI, else "disagrees";
    no verdict without a finite interval (fewer than 4 pairs, or |r| = 1)."""
    if not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return "no verdict: no finite 95% CI"
    return "agrees" if low <= paper <= high else "disagrees"


def correlation_row(corr, predictor, target):
    """The row of a correlations table for (predictor, target), as {column: value}, or None."""
    if corr is None:
        return None
    i = np.flatnonzero((corr["predictor"] == predictor) & (corr["target"] == target))
    return {k: corr[k][i[0]] for k in corr} if len(i) else None


def score_claim(corr, predictor, target, paper):
    """(measured text, verdict by the CI rule) of one predictor's Pearson r against a target;
    None when the correlations table has no such row."""
    row = correlation_row(corr, predictor, target)
    if row is None:
        return None
    r = float(row["pearson_r"])
    if "pearson_ci_low" not in row:  # a file from before the intervals: no rule to apply
        return f"r = {r:.2f} (n = {row['n']}; no 95% CI recorded)", "no verdict: no 95% CI in the file"
    lo, hi = float(row["pearson_ci_low"]), float(row["pearson_ci_high"])
    return f"r = {r:.2f}, 95% CI [{lo:.2f}, {hi:.2f}] (n = {row['n']})", ci_verdict(paper, lo, hi)


def paradigm_claim(vision, vision_paradigm, r1_flickr):
    """The paper's paradigm story: language-supervised (CLIP-like) vision encoders align best.
    The language paradigm is whatever `vision_paradigm` holds for the vision encoders named
    *_clip; "agrees" when it has the highest median R@1 on flickr of the vision paradigms."""
    vision, paradigms = np.asarray(vision).astype(str), np.asarray(vision_paradigm).astype(str)
    r1 = np.asarray(r1_flickr, float)
    medians = {p: float(np.nanmedian(r1[paradigms == p])) if np.isfinite(r1[paradigms == p]).any()
               else math.nan for p in dict.fromkeys(paradigms)}
    language = sorted(set(paradigms[np.char.endswith(vision, "_clip")]))
    out = {"medians": medians, "language": ", ".join(language)}
    if len(language) != 1:
        out["verdict"] = ("no verdict: no vision encoder named *_clip" if not language else
                          "no verdict: the *_clip vision encoders have several paradigms")
        return out
    if not math.isfinite(medians[language[0]]):
        out["verdict"] = "no verdict: the language paradigm has no finite R@1"
        return out
    best = max(v for v in medians.values() if math.isfinite(v))
    out["verdict"] = "agrees" if medians[language[0]] >= best else "disagrees"
    return out


def capped_table(corr, caps):
    """Every correlation of `corr` beside the reliability cap of its target (`caps`
    {target: cap}; NaN for a target without one): predictor, target, n, pearson_r, the 95% CI,
    spearman_rho, cap."""
    rows = range(len(corr["predictor"]))
    ci = [f"[{corr['pearson_ci_low'][i]:+.2f}, {corr['pearson_ci_high'][i]:+.2f}]"
          if "pearson_ci_low" in corr else "" for i in rows]
    return {"predictor": corr["predictor"], "target": corr["target"], "n": corr["n"],
            "pearson_r": corr["pearson_r"].astype(float), "95% CI": np.array(ci, dtype=object),
            "spearman_rho": corr["spearman_rho"].astype(float),
            "cap": np.array([caps.get(t, math.nan) for t in corr["target"]], float)}


def retention_se(acc_a, acc_b, ft_acc_a, ft_acc_b, task_a, task_b, images=TEST_IMAGES):
    """Per merge, the binomial standard error of its retention ½(acc_a/ft_a + acc_b/ft_b):
    0.5·sqrt(acc_a(1 − acc_a)/n_a/ft_a² + acc_b(1 − acc_b)/n_b/ft_b²), n the task's test images
    (`images` for the Fashion-MNIST tasks)."""
    n = lambda tasks: np.array([TEST_IMAGES_BY_TASK.get(str(t), images) for t in tasks], float)  # noqa: E731
    a, b = np.asarray(acc_a, float), np.asarray(acc_b, float)
    fa, fb = np.asarray(ft_acc_a, float), np.asarray(ft_acc_b, float)
    return 0.5 * np.sqrt(a * (1 - a) / n(task_a) / fa ** 2 + b * (1 - b) / n(task_b) / fb ** 2)


def merging_regime(pairs, images=TEST_IMAGES):
    """The merging study's regime over /merging/pairs: M1 (destructive pair merges, for PRISM's
    recovery) and M2 (retention's spread across merges against one merge's SE; `images` the
    Fashion-MNIST tasks' test images). Returns {"destructive", "spread", "median_se", "gates":
    [M1, M2], "m1", "m2"}."""
    se = retention_se(pairs["acc_a"], pairs["acc_b"], pairs["ft_acc_a"], pairs["ft_acc_b"],
                      pairs["task_a"], pairs["task_b"], images)
    retention = np.asarray(pairs["retention"], float)
    spread = float(np.std(retention, ddof=1)) if len(retention) > 1 else math.nan
    destructive = int(np.sum(np.asarray(pairs["destructive"]) == 1))
    m1 = gate("M1", f"destructive pair merges ≥ {MIN_DESTRUCTIVE}", destructive, MIN_DESTRUCTIVE)
    m2 = gate("M2", f"sd of retention across merges ≥ {SPREAD_OVER_SE:g} × median SE of one merge",
              spread, SPREAD_OVER_SE * float(np.median(se)) if len(se) else math.nan)
    return {"destructive": destructive, "spread": spread, "median_se": float(np.median(se)) if len(se) else math.nan,
            "gates": [m1, m2], "m1": m1["holds"], "m2": m2["holds"]}


def pooled_recovery(rec):
    """The pooled ("all") row of /prism/analysis/recovery, at c = 1 when there are several."""
    if rec is None:
        return None
    rows = np.flatnonzero(rec["backbone"] == "all")
    if not len(rows):
        return None
    at1 = [i for i in rows if float(rec["coef"][i]) == 1.0]
    i = at1[0] if at1 else rows[0]
    return {k: rec[k][i] for k in rec}


def recovery_verdict(row, m1, destructive):
    """PRISM's recovery of what task arithmetic destroys: "agrees: PRISM recovers" when the
    mean gain on the destroyed merges is > 0 with sign test p < 0.05, "disagrees: does not
    recover" otherwise; untested unless M1 holds."""
    if not m1:
        return f"untested: {destructive} destructive merges (< {MIN_DESTRUCTIVE})"
    if row is None:
        return "untested: no pooled recovery row"
    if int(row["ta_destroyed"]) == 0:  # no K-way merge destroyed: nothing to recover
        return "untested: task arithmetic destroys none of the K-way merges"
    ok = float(row["diff_destroyed"]) > 0 and float(row["sign_p"]) < RECOVERY_P
    return "agrees: PRISM recovers" if ok else "disagrees: does not recover"


def within_table(within, target="retention", predictors=("score", "ease")):
    """Per group (one physical backbone, both learning rates) the Pearson r of each predictor
    against the target, and their mean over the groups (NaN rs left out)."""
    groups = list(dict.fromkeys(within["group"]))
    out = {"group": groups + ["mean over groups"]}
    for p in predictors:
        rs = []
        for g in groups:
            row = correlation_row({k: v[within["group"] == g] for k, v in within.items()}, p, target)
            rs.append(float(row["pearson_r"]) if row is not None else math.nan)
        finite = [r for r in rs if np.isfinite(r)]
        out[f"{p} r"] = rs + [float(np.mean(finite)) if finite else math.nan]
    return {k: np.array(v, dtype=object if k == "group" else float) for k, v in out.items()}


def lofo_paradigm_range(lofo, predictor="score", target="retention"):
    """(min, max, folds) of the predictor's Pearson r over the folds that leave out one
    paradigm (held_out "paradigm=..."), or None without such folds."""
    if lofo is None:
        return None
    sel = (np.char.startswith(lofo["held_out"].astype(str), "paradigm=")
           & (lofo["predictor"] == predictor) & (lofo["target"] == target))
    r = lofo["pearson_r"][sel].astype(float)
    return (float(np.nanmin(r)), float(np.nanmax(r)), int(sel.sum())) if np.isfinite(r).any() else None


# The ceiling's readings and the ease above its null, as predictors (docs/real-networks.md).
VARIANTS = ("score", "score_paradigm", "score_leave_pair_out", "score_excess", "ease", "ease_excess",
            "ceiling", "ceiling_paradigm", "ceiling_leave_pair_out", "cka")


def variants_table(corr, caps, paper, targets=("r1_flickr", "r1_coco")):
    """Pearson r of every ceiling variant present against each target, beside the targets'
    reliability caps and the paper's r (for the score only)."""
    present = [p for p in VARIANTS if p in set(corr["predictor"])]
    out = {"predictor": np.array(present, dtype=object),
           "paper": np.array([f"{paper:.2f}" if p == "score" else "" for p in present], dtype=object)}
    for t in targets:
        out[f"r {t}"] = np.array([float(correlation_row(corr, p, t)["pearson_r"])
                                  if correlation_row(corr, p, t) is not None else math.nan
                                  for p in present])
        out[f"cap {t}"] = np.full(len(present), caps.get(t, math.nan))
    return out


def sign_test(diffs):
    """(wins, losses, ties, p): the two-sided exact binomial sign test, ties dropped (as
    workloads/stats' sign_test: p = min(1, 2 · P[X ≤ min(wins, losses)]), NaN without a sign)."""
    d = np.asarray(diffs, float)
    wins, losses, ties = int(np.sum(d > 0)), int(np.sum(d < 0)), int(np.sum(d == 0))
    n = wins + losses
    if n == 0:
        return wins, losses, ties, math.nan
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2.0 ** n
    return wins, losses, ties, min(1.0, 2.0 * tail)


KERNEL_KEY = ("backbone", "k", "members", "method", "coef", "kappa")


def kernel_comparison(matrices, kernels):
    """PRISM-family merges with the keep floor on convolution kernels too (/prism/kernels)
    against the same merges with the floor on matrices only (/prism/merges), paired on
    (backbone, k, members, method, coef, kappa): per method, the paired count, the means of
    merged_mean, update_pct and keep_fraction both ways, and the mean paired difference of
    merged_mean (kernels − matrices) with its sign test."""
    def key(t, i):
        return tuple(str(t[c][i]) if t[c].dtype.kind in "OUS" else float(t[c][i]) for c in KERNEL_KEY)
    index = {}
    for i in range(len(matrices["method"])):
        index.setdefault(key(matrices, i), i)
    pairs = [(index[key(kernels, j)], j) for j in range(len(kernels["method"])) if key(kernels, j) in index]
    cols = ("merged_mean", "update_pct", "keep_fraction")
    both = tuple(f"{c}_{w}" for c in cols for w in ("matrices", "kernels"))
    out = {c: [] for c in ("method", "n") + both + ("diff", "wins", "losses", "ties", "sign_p")}
    for m in dict.fromkeys(kernels["method"][j] for _, j in pairs):
        mine = [(i, j) for i, j in pairs if kernels["method"][j] == m]
        out["method"].append(str(m))
        out["n"].append(len(mine))
        for c in cols:
            out[f"{c}_matrices"].append(float(np.mean([matrices[c][i] for i, _ in mine])))
            out[f"{c}_kernels"].append(float(np.mean([kernels[c][j] for _, j in mine])))
        d = [float(kernels["merged_mean"][j]) - float(matrices["merged_mean"][i]) for i, j in mine]
        out["diff"].append(float(np.mean(d)))
        for k, v in zip(("wins", "losses", "ties", "sign_p"), sign_test(d)):
            out[k].append(v)
    return {k: np.array(v, dtype=object if k == "method" else None) for k, v in out.items()}


# The claims, as (claim, paper, here, verdict) rows; a study whose regime failed gets its
# numbers and "no verdict" (docs/real-networks.md: a failed gate means not informative).

SCORES = ("score", "score_paradigm", "score_leave_pair_out", "score_excess")


def _no_verdict(claims, why):
    return [(c, p, h, v if v.startswith(("no verdict", "untested")) else f"no verdict: {why}")
            for c, p, h, v in claims]


def alignment_claims(corr, pairs, regime, paper_r, paper_paradigm):
    """The alignment study's claims: the score (and each ceiling variant's score) against R@1
    on each split by the CI rule, and the paradigm story; verdicts only when the regime holds."""
    out = []
    for s in SPLITS:
        cap = regime["splits"][s]["cap"] if "splits" in regime else math.nan
        for p in SCORES:
            judged = score_claim(corr, p, f"r1_{s}", paper_r)
            if judged is not None:
                what = "the score" if p == "score" else p
                out.append((f"{what} predicts r1_{s}", f"r = {paper_r:.2f}",
                            f"{judged[0]}; reliability cap {cap:.2f}", judged[1]))
    if pairs is not None and "vision_paradigm" in pairs:
        story = paradigm_claim(pairs["vision"], pairs["vision_paradigm"], pairs["r1_flickr"])
        medians = ", ".join(f"{p} {m:.3f}" for p, m in sorted(story["medians"].items(), key=lambda x: -x[1]))
        out.append(("the vision paradigm that aligns best", paper_paradigm,
                    f"median R@1 on flickr per vision paradigm: {medians} (language: {story['language'] or 'none'})",
                    story["verdict"]))
    return out if regime["informative"] else _no_verdict(out, "the benchmark is not informative")


def merging_claims(corr, regime, recovery, paper_r):
    """The merging study's claims: the score against retention by the CI rule (when M2 holds)
    and PRISM's recovery of what task arithmetic destroys (when M1 holds)."""
    out = []
    judged = score_claim(corr, "score", "retention", paper_r)
    if judged is not None:
        out.append(("the score predicts retention", f"r = {paper_r:.2f}", *judged))
        if not regime["m2"]:
            out = _no_verdict(out, "M2 fails, the merges' retention is not informative")
    row = pooled_recovery(recovery)
    here = "no pooled recovery row"
    if row is not None:
        here = (f"{float(row['diff_destroyed']):+.4f} mean accuracy over the {row['ta_destroyed']} merges task "
                f"arithmetic destroys (c = {float(row['coef']):g}; {row['wins']} wins, {row['losses']} losses, "
                f"sign test p = {float(row['sign_p']):.2g}); over all merges {float(row['diff_all']):+.4f}")
    out.append(("PRISM recovers what task arithmetic destroys", "recovers", here,
                recovery_verdict(row, regime["m1"], regime["destructive"])))
    return out
