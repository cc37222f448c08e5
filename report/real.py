"""The section on the library of real PyTorch networks (configs/real*.yaml): the encoders'
own quality beside the dataset's published baselines, and the studies' headline numbers
(COMPASS alignment and merging, PRISM's operators, collapse screening and drift) beside the
papers' and, when a model-library run is given (--library), that run's, with a plain note
wherever they disagree. Every number here is read from a results file."""
import html

import numpy as np

from report.h5 import pick, table
from report.references import (BASELINES, PAPER_ALIGNMENT_R, PAPER_DRIFT_EXPONENT,
                               PAPER_MERGING_R, PAPER_THRESHOLD)


def _rows(t):
    return [{k: t[k][i] for k in t} for i in range(len(next(iter(t.values()))))]


def _correlation(corr, predictor, target):
    if corr is None:
        return np.nan
    m = (corr["predictor"] == predictor) & (corr["target"] == target)
    return float(corr["pearson_r"][m][0]) if m.any() else np.nan


def _library(lib, text):
    """" The model library's: TEXT." with TEXT from the library run, or "" without one."""
    if lib is None:
        return ""
    value = text(lib)
    return f" The model library's: {value}." if value is not None else ""


def encoders_table(rep, run):
    rows = {"modality": [], "model": [], "probe_acc": [], "final_loss": [], "params": []}
    for modality in ("vision", "text"):
        t = run(f"/real/{modality}")
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


def _line(run, lib, study, target, paper):
    corr = run(f"/{study}/analysis/correlations")
    r, cka = _correlation(corr, "score", target), _correlation(corr, "cka", target)
    verdict = "agrees with" if abs(r - paper) <= 0.2 else "disagrees with"
    theirs = _library(lib, lambda t: f"r = {_correlation(t(f'/{study}/analysis/correlations'), 'score', target):.2f}")
    return (f"<li>{study}: score vs {target}: r = {r:.2f} (CKA: {cka:.2f}); this {verdict} "
            f"the paper's r = {paper:.2f}.{theirs}</li>")


def comparison(rep, run, lib):
    lines = [_line(run, lib, "alignment", t, PAPER_ALIGNMENT_R) for t in ("r1_flickr", "r1_coco")]
    if run("/merging/analysis/correlations") is not None:
        lines.append(_line(run, lib, "merging", "retention", PAPER_MERGING_R))
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


def _ta_destructive(t):
    merges = t("/prism/merges")
    if merges is None:
        return None
    ta = merges["method"] == "task_arithmetic"
    return f"{int(merges['destructive'][ta].sum())} of {int(ta.sum())}"


def _drift_exponent(t):
    drift = pick(t("/prism/analysis/drift"), "backbone", "all")
    return None if drift is None else f"{drift['exponent']:.2f}"


def _prism_minus_ta(t):
    abl = t("/prism/analysis/ablation")
    if abl is None:
        return None
    m = (abl["a"] == "prism") & (abl["b"] == "task_arithmetic")
    return f"{abl['mean_diff'][int(np.flatnonzero(m)[0])]:+.3f}" if m.any() else None


def _screening_line(run):
    scr = pick(run("/prism/analysis/screening"), "score", "screen_score")
    if scr is not None and 0 < scr["positives"] < scr["n"]:
        return (f"<li>Collapse screening before merging: the score c·√(Ī/K) against "
                f"destructive over the task-arithmetic merges has AUROC {scr['auroc']:.2f}; "
                f"its best threshold {scr['best_threshold']:.3g} (the paper's, for 7B LLMs: "
                f"{PAPER_THRESHOLD:.3g}; thresholds do not transfer across scales).</li>")
    return ("<li>Collapse screening: no AUROC, the task-arithmetic merges are all of one "
            "kind (destructive or not).</li>")


def _drift_line(run, lib):
    fits = run("/prism/analysis/drift")
    drift = pick(fits, "backbone", "all")
    if drift is None:
        return ""
    b = drift["exponent"]
    each = fits["exponent"][fits["backbone"] != "all"]
    verdict = ("agrees with" if abs(b - PAPER_DRIFT_EXPONENT) <= 0.1
               else "is slower than" if b < PAPER_DRIFT_EXPONENT else "is faster than")
    return (f"<li>Drift: the screening score grows as steps^{b:.2f} pooled (r² "
            f"{drift['r2']:.2f}; per merge {each.min():.2f} to {each.max():.2f}) along "
            f"fine-tuning; this {verdict} the paper's square root.{_library(lib, _drift_exponent)}</li>")


def prism_comparison(rep, run, lib):
    """PRISM on the real fine-tunes: operators, collapse screening, drift, PRISM against TA."""
    merges = run("/prism/merges")
    if merges is None:
        return
    rep.html_table(_operators(merges), ["method", "n", "destructive", "retention", "merged_mean",
                                        "base_mean"],
                   title="PRISM K-way merges of the real fine-tunes, per operator (every K and c, κ = 1)")
    lines = [f"<li>{_ta_destructive(run)} task-arithmetic merges are destructive."
             f"{_library(lib, _ta_destructive)}</li>", _screening_line(run), _drift_line(run, lib)]
    diff = _prism_minus_ta(run)
    abl = run("/prism/analysis/ablation")
    if diff is not None:
        i = int(np.flatnonzero((abl["a"] == "prism") & (abl["b"] == "task_arithmetic"))[0])
        lines.append(f"<li>PRISM − task arithmetic, paired on the same merges: {diff} mean "
                     f"accuracy ({abl['wins'][i]} wins, {abl['losses'][i]} losses, sign test "
                     f"p = {abl['sign_p'][i]:.2g}).{_library(lib, _prism_minus_ta)}</li>")
    rep.add("<p>PRISM on the real fine-tunes, measured and not tuned:</p><ul>" + "".join(lines) + "</ul>")


def real_section(rep, f, library=None):
    """Adds the section when the run trained the real library (a /real/vision table);
    `library` is an open results file of a model-library run, or None."""
    if "/real/vision" not in f:
        return
    rep.section("real", "Real networks: PyTorch encoders on Fashion-MNIST")
    run = lambda p: table(f, p)  # noqa: E731
    lib = (lambda p: table(library, p)) if library is not None else None  # noqa: E731
    if lib is None:
        rep.add("<p class=note>To set the model library's numbers beside these, run "
                "configs/default.yaml and give its results: <code>compatbench report OUT "
                "--library RESULTS.h5</code>.</p>")
    encoders_table(rep, run)
    comparison(rep, run, lib)
    prism_comparison(rep, run, lib)
