"""The report's section on the library of real PyTorch networks (configs/real*.yaml): the
encoders' own quality beside the dataset's published baselines, and the studies' headline
numbers (COMPASS alignment and merging, PRISM's operators, collapse screening and drift)
beside the papers' and the model library's, with a plain note wherever they disagree."""
import html

import numpy as np

# Test accuracies listed in Fashion-MNIST's README (Debian's dataset-fashion-mnist,
# /usr/share/doc/dataset-fashion-mnist/README.md.gz), submitted benchmarks the dataset's
# authors note they have not re-tested.
BASELINES = [("2 Conv+pooling (TensorFlow's tutorial)", 0.916),
             ("2 Conv, <100K parameters", 0.925),
             ("2 Conv+3 FC, ~500K parameters, augmentation", 0.934)]
# The COMPASS paper's correlations of its score with R@1 (72 real alignment pairs) and with
# retention (392 task-arithmetic merges).
PAPER_ALIGNMENT_R = 0.90
PAPER_MERGING_R = 0.70
# The same correlations on the synthetic model library (configs/default.yaml, 2 ranks,
# measured 2026-12-01; docs/real-networks.md), per target.
LIBRARY_R = {"r1_flickr": 0.56, "r1_coco": 0.58, "retention": -0.39}
# PRISM's claims (methods.md §3.1): the screening score of a specialist grows about as the
# square root of its fine-tuning (exponent 1/2), and 1.9e-3 flags destructive merges of 7B
# LLMs (a threshold that does not transfer across scales).
PAPER_DRIFT_EXPONENT = 0.5
PAPER_THRESHOLD = 1.9e-3
# The same study on the synthetic model library (configs/default.yaml, 2 ranks, measured
# 2026-12-01): task-arithmetic merges below their base, the pooled drift exponent, and
# PRISM's mean paired accuracy difference against task arithmetic.
LIBRARY_PRISM = {"ta_destructive": "0 of 392", "drift_exponent": 0.74, "prism_minus_ta": -0.098}


def _rows(table):
    return [{k: table[k][i] for k in table} for i in range(len(next(iter(table.values()))))]


def _correlation(corr, predictor, target):
    if corr is None:
        return np.nan
    m = (corr["predictor"] == predictor) & (corr["target"] == target)
    return float(corr["pearson_r"][m][0]) if m.any() else np.nan


def encoders_table(rep, table_of):
    rows = {"modality": [], "model": [], "probe_acc": [], "final_loss": [], "params": []}
    for modality in ("vision", "text"):
        t = table_of(f"/real/{modality}")
        for r in _rows(t) if t is not None else []:
            rows["modality"].append(modality)
            for k in ("model", "probe_acc", "final_loss", "params"):
                rows[k].append(r[k])
    rep.html_table({k: np.array(v) for k, v in rows.items()}, list(rows), limit=60,
                   title="encoders: linear-probe accuracy on the test images (text: flickr captions)")
    best = max((a for m, a in zip(rows["modality"], rows["probe_acc"]) if m == "vision"), default=np.nan)
    rep.add("<p class=note>Published Fashion-MNIST test accuracies (the dataset's README, fully "
            "trained classifiers): " + "; ".join(f"{html.escape(n)} {a:.3f}" for n, a in BASELINES)
            + f". The best vision encoder here reaches {best:.3f} through a linear probe on "
              "frozen features after a short training budget.</p>")


def _line(corr, target, paper, label):
    r, cka = _correlation(corr, "score", target), _correlation(corr, "cka", target)
    verdict = "agrees with" if abs(r - paper) <= 0.2 else "disagrees with"
    return (f"<li>{label}: score vs {target}: r = {r:.2f} (CKA: {cka:.2f}); this {verdict} "
            f"the paper's r = {paper:.2f}. The model library's: r = {LIBRARY_R[target]:.2f}.</li>")


def comparison(rep, table_of):
    corr = table_of("/alignment/analysis/correlations")
    lines = [_line(corr, t, PAPER_ALIGNMENT_R, "alignment") for t in ("r1_flickr", "r1_coco")]
    merging = table_of("/merging/analysis/correlations")
    if merging is not None:
        lines.append(_line(merging, "retention", PAPER_MERGING_R, "merging"))
    rep.add("<p>COMPASS on the real library, measured and not tuned:</p><ul>"
            + "".join(lines) + "</ul><p class=note>The generated captions name a class and "
            "one to three coarse attributes, so many images fit a caption equally well and R@1 "
            "stays low for every pair; R@5 and R@10 are in /alignment/pairs.</p>")


def _operators(merges):
    """Per operator over all its merges at κ = 1: count, destructive share, retention."""
    rows = {"method": [], "n": [], "destructive": [], "retention": [], "merged_mean": [], "base_mean": []}
    plain = (merges["kappa"] == 1) | (merges["kappa"] == 0)
    for m in dict.fromkeys(merges["method"]):
        sel = plain & (merges["method"] == m)
        rows["method"].append(m)
        rows["n"].append(int(sel.sum()))
        for k in ("destructive", "retention", "merged_mean", "base_mean"):
            rows[k].append(float(np.mean(merges[k][sel])))
    return {k: np.array(v) for k, v in rows.items()}


def _pick(table, column, value):
    if table is None or value not in list(table[column]):
        return None
    i = list(table[column]).index(value)
    return {k: table[k][i] for k in table}


def prism_comparison(rep, table_of):
    """PRISM on the real fine-tunes: operators, collapse screening, drift, PRISM against TA."""
    merges = table_of("/prism/merges")
    if merges is None:
        return
    rep.html_table(_operators(merges), ["method", "n", "destructive", "retention", "merged_mean",
                                        "base_mean"],
                   title="PRISM K-way merges of the real fine-tunes, per operator (every K and c, κ = 1)")
    ta = merges["method"] == "task_arithmetic"
    lines = [f"<li>{int(merges['destructive'][ta].sum())} of {int(ta.sum())} task-arithmetic "
             f"merges are destructive (the model library: {LIBRARY_PRISM['ta_destructive']}).</li>"]
    scr = _pick(table_of("/prism/analysis/screening"), "score", "screen_score")
    if scr is not None and 0 < scr["positives"] < scr["n"]:
        lines.append(f"<li>Collapse screening before merging: the score c·√(Ī/K) against "
                     f"destructive over the task-arithmetic merges has AUROC {scr['auroc']:.2f}; "
                     f"its best threshold {scr['best_threshold']:.3g} (the paper's, for 7B LLMs: "
                     f"{PAPER_THRESHOLD:.3g}; thresholds do not transfer across scales).</li>")
    else:
        lines.append("<li>Collapse screening: no AUROC, the task-arithmetic merges are all of one "
                     "kind (destructive or not).</li>")
    fits = table_of("/prism/analysis/drift")
    drift = _pick(fits, "backbone", "all")
    if drift is not None:
        b = drift["exponent"]
        each = fits["exponent"][fits["backbone"] != "all"]
        verdict = ("agrees with" if abs(b - PAPER_DRIFT_EXPONENT) <= 0.1
                   else "is slower than" if b < PAPER_DRIFT_EXPONENT else "is faster than")
        lines.append(f"<li>Drift: the screening score grows as steps^{b:.2f} pooled (r² "
                     f"{drift['r2']:.2f}; per merge {each.min():.2f} to {each.max():.2f}) along "
                     f"fine-tuning; this {verdict} the paper's square root. The model "
                     f"library's: {LIBRARY_PRISM['drift_exponent']:.2f}.</li>")
    abl = table_of("/prism/analysis/ablation")
    if abl is not None:
        m = (abl["a"] == "prism") & (abl["b"] == "task_arithmetic")
        if m.any():
            i = int(np.flatnonzero(m)[0])
            lines.append(f"<li>PRISM − task arithmetic, paired on the same merges: "
                         f"{abl['mean_diff'][i]:+.3f} mean accuracy ({abl['wins'][i]} wins, "
                         f"{abl['losses'][i]} losses, sign test p = {abl['sign_p'][i]:.2g}). The "
                         f"model library's: {LIBRARY_PRISM['prism_minus_ta']:+.3f}.</li>")
    rep.add("<p>PRISM on the real fine-tunes, measured and not tuned:</p><ul>" + "".join(lines) + "</ul>")


def real_section(rep, f, table_of):
    """Adds the section when the run trained the real library (a /real/vision table)."""
    if "/real/vision" not in f:
        return
    rep.section("real", "Real networks: PyTorch encoders on Fashion-MNIST")
    encoders_table(rep, lambda p: table_of(f, p))
    comparison(rep, lambda p: table_of(f, p))
    prism_comparison(rep, lambda p: table_of(f, p))
