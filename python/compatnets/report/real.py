"""The section on the library of real PyTorch networks (configs/real*.yaml): the encoders'
own quality beside the dataset's published baselines, and the studies on them beside the
papers' numbers (and, when a model-library run is given (--library), that run's). The COMPASS
alignment and merging studies show their regime first (the gates of docs/real-networks.md,
"What counts", in real_gates.py), then each claim beside the paper's number, marked
agrees or disagrees by the rules fixed in advance; a study whose gate fails is not
informative and gets no verdict. Every number here is read from a results file."""
import html

import numpy as np

from .h5 import pick, table
from .reanalysis import verdict_in
from .real_gates import (SPLITS, TEST_IMAGES, TEST_IMAGES_BY_TASK, alignment_claims,
                               alignment_regime, capped_table, failed, kernel_comparison,
                               lofo_paradigm_range, merging_claims, merging_regime,
                               variants_table, within_table)
from .references import (BASELINES, PAPER_ALIGNMENT_PARADIGM, PAPER_ALIGNMENT_R,
                               PAPER_DRIFT_EXPONENT, PAPER_MERGING_R, PAPER_THRESHOLD)

# The described attributes whose level each encoder's linear probe reads (compatnets.captions).
ATTRIBUTES = ("ink", "brightness", "aspect", "symmetry", "fill", "texture", "balance", "contrast")
PROBES = ("probe_acc", "probe_attributes") + tuple(f"probe_{a}" for a in ATTRIBUTES)


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


def _encoder_rows(run):
    """(modality, model, {column: value}) per encoder: /real/vision and /real/text, then each
    jointly trained pair of /real/clip as its vision and its text encoder."""
    out = []
    for modality in ("vision", "text"):
        t = run(f"/real/{modality}")
        out += [(modality, r["model"], r) for r in (_rows(t) if t is not None else [])]
    clip = run("/real/clip")
    for r in _rows(clip) if clip is not None else []:
        vision, _, text = str(r["model"]).partition("+")
        out.append(("vision (clip pair)", vision, r))
        mine = {k[len("text_"):]: v for k, v in r.items() if k.startswith("text_")}
        mine.update({k: r[k] for k in ("final_loss", "steps") if k in r})
        out.append(("text (clip pair)", text, mine))
    return out


def encoders_table(rep, run):
    rows = _encoder_rows(run)
    columns = ["modality", "model"] + [c for c in PROBES + ("final_loss", "steps", "params")
                                       if any(c in r for _, _, r in rows)]
    t = {c: np.array([m if c == "modality" else n if c == "model" else r.get(c, "")
                      for m, n, r in rows], dtype=object) for c in columns}
    rep.html_table(t, columns, limit=60,
                   title="encoders: linear-probe accuracy on the test images (text: flickr captions); "
                         "probe_<attribute>: on the described attribute's level (5 levels), "
                         "probe_attributes their mean")
    best = max((float(r["probe_acc"]) for m, _, r in rows if m.startswith("vision") and "probe_acc" in r),
               default=np.nan)
    rep.add("<p class=note>Published Fashion-MNIST test accuracies (the dataset's README, fully "
            "trained classifiers): " + "; ".join(f"{html.escape(n)} {a:.3f}" for n, a in BASELINES)
            + f". The best vision encoder here reaches {best:.3f} through a linear probe on "
              "frozen features after a short training budget.</p>")


def reanalysed(run, claim):
    """The re-analysis of a pre-registered claim (its text as real_gates writes it): the claim
    of the same statistic in the results file's claims tables (docs/real-networks.md,
    "Re-analysis"), as "verdict: value, 95% [lo, hi], band", or why there is none."""
    for path, name in REANALYSED.get(claim, []):
        found = verdict_in(run(path), name)
        if found is not None:
            return found
    if claim in NOT_REANALYSED:
        return "not re-analysed: " + NOT_REANALYSED[claim]
    words = claim.split(" predicts ")
    if len(words) == 2:
        predictor = "score" if words[0] == "the score" else words[0]
        study = "merging" if words[1] == "retention" else "alignment"
        found = verdict_in(run(f"/{study}/analysis/claims"), f"{predictor}_{words[1]}")
        if found is not None:
            return found
    return "not re-analysed: no claim of this statistic in the results file"


REANALYSED = {"PRISM recovers what task arithmetic destroys": [("/prism/analysis/recovery_claims",
                                                                  "prism_recovers")]}
NOT_REANALYSED = {"the vision paradigm that aligns best":
                  "a ranking of paradigm medians has no interval here; the pairs' R@1 by paradigm is above"}


def _claims(rep, claims, title, run=None):
    """The claims as a table (claim, paper, here, verdict as pre-registered and, given the
    results file, its re-analysis), then the judged ones in words."""
    cols = ("claim", "paper", "here", "verdict")
    t = {c: np.array([x[i] for x in claims], dtype=object) for i, c in enumerate(cols)}
    if run is not None:
        t["re-analysis"] = np.array([reanalysed(run, c) for c, _, _, _ in claims], dtype=object)
    rep.html_table(t, list(t), title=title)
    judged = [f"{html.escape(c)}: this {v.split(':')[0]} with the paper ({html.escape(p)})"
              for c, p, _, v in claims if v.startswith(("agrees", "disagrees"))]
    if judged:
        rep.add("<p>In words: " + "; ".join(judged) + ".</p>")


def _gates(rep, gates, title):
    cols = ("gate", "rule", "measured", "threshold", "holds")
    rows = [{**g, "holds": "yes" if g["holds"] else "no"} for g in gates]
    rep.html_table({c: np.array([g[c] for g in rows], dtype=object) for c in cols}, list(cols), title=title)


def _verdict_words(study, gates, paper):
    """In words: the study is informative (its claims are judged) or which gate failed."""
    if all(g["holds"] for g in gates):
        names = ", ".join(g["gate"] for g in gates)
        return (f"<p>{names} {'holds' if len(gates) == 1 else 'hold'}: the {study} benchmark is informative, "
                "and its claims are judged below.</p>")
    return (f"<p><b>The {study} benchmark is not informative here</b> ({html.escape(failed(gates))}): "
            f"its numbers are shown below, and no verdict against the paper's {paper}.</p>")


def _alignment_inputs(run):
    """(pairs, regime, oracle) of the alignment study on the real library, or None without
    its pairs; the split sizes and the oracle come from /real/data (NaN where not recorded)."""
    pairs = run("/alignment/pairs")
    if pairs is None or any(f"r1_{s}" not in pairs for s in SPLITS):
        return None
    data = run("/real/data") or {}
    first = lambda k: float(data[k][0]) if k in data else np.nan  # noqa: E731
    images = {s: first(f"{s}_images") for s in SPLITS}
    images = {s: int(n) if np.isfinite(n) else 0 for s, n in images.items()}
    oracle = {s: first(f"oracle_{s}") for s in SPLITS}
    regime = alignment_regime({s: pairs[f"r1_{s}"] for s in SPLITS}, images, oracle["flickr"])
    return pairs, regime, oracle


def _spread_table(regime, oracle):
    cols = ("split", "pairs", "images", "median", "min", "max", "oracle", "median/oracle", "SE", "spread",
            "spread/SE", "reliability", "cap")
    rows = []
    for s, x in regime["splits"].items():
        rows.append((s, x["n"], x["images"], x["median"], x["min"], x["max"], oracle[s],
                     x["median"] / oracle[s], x["se"], x["spread"], x["ratio"], x["reliability"], x["cap"]))
    return {c: np.array([r[i] for r in rows], dtype=object) for i, c in enumerate(cols)}, list(cols)


def _ease_line(pairs, corr):
    """Ease above chance: the mean ease and ease_excess over the pairs, and what taking the
    ease above its null does to the score's correlation per target."""
    if "ease_excess" not in pairs:
        return ""
    r = {(p, t): _correlation(corr, p, t) for p in ("score", "score_excess") for t in ("r1_" + s for s in SPLITS)}
    change = "; ".join(f"{t}: r {r['score', t]:+.2f} → {r['score_excess', t]:+.2f} "
                       f"({r['score_excess', t] - r['score', t]:+.2f})" for t in ("r1_" + s for s in SPLITS))
    return (f"<p>Ease above chance: mean ease {np.mean(pairs['ease']):.4f}, mean ease_excess (above the "
            f"ease of unrelated neighbours) {np.mean(pairs['ease_excess']):.4f} over the {len(pairs['ease'])} "
            f"pairs. Score → score_excess: {change}.</p>")


def alignment_part(rep, run, lib):
    """COMPASS alignment on the real library: the regime, the claims, every correlation with
    its reliability cap, the ceiling variants and the ease above chance."""
    inputs = _alignment_inputs(run)
    if inputs is None:
        return
    pairs, regime, oracle = inputs
    corr = run("/alignment/analysis/correlations")
    rep.add("<h3>COMPASS alignment on the real library</h3>"
            "<p>Rules fixed before the run (docs/real-networks.md, What counts): the benchmark tells "
            "pairs apart only when their median R@1 on flickr reaches a quarter of the captions' oracle "
            "R@1 (G1) and R@1 spreads across pairs well beyond one pair's sampling error on the split's "
            "images (G2, both splits). A correlation with a target "
            "whose reliability is rel cannot exceed the cap √rel. The score agrees with the paper when "
            f"r = {PAPER_ALIGNMENT_R:.2f} lies in its Pearson 95% CI.</p>")
    _gates(rep, regime["gates"], "The regime: gates")
    table_, cols = _spread_table(regime, oracle)
    rep.html_table(table_, cols, title="R@1 (image→text) across the evaluated pairs, per split")
    rep.add(_verdict_words("alignment", regime["gates"], f"r = {PAPER_ALIGNMENT_R:.2f}"))
    if corr is None:
        return
    _claims(rep, alignment_claims(corr, pairs, regime, PAPER_ALIGNMENT_R, PAPER_ALIGNMENT_PARADIGM),
            "COMPASS alignment: the paper's claims, judged by the rules fixed in advance, and re-analysed",
            run)
    theirs = _library(lib, lambda t: ", ".join(
        f"r = {_correlation(t('/alignment/analysis/correlations'), 'score', f'r1_{s}'):.2f} (r1_{s})"
        for s in SPLITS))
    if theirs:
        rep.add(f"<p>{theirs.strip()}</p>")
    caps = {f"r1_{s}": x["cap"] for s, x in regime["splits"].items()}
    variants = variants_table(corr, caps, PAPER_ALIGNMENT_R)
    rep.html_table(variants, list(variants),
                   title="Ceiling variants: Pearson r against each target, beside its reliability cap")
    rep.html_table(capped_table(corr, caps), ["predictor", "target", "n", "pearson_r", "95% CI", "spearman_rho",
                                              "cap"], limit=80,
                   title="Every correlation, with the reliability-capped r of its target")
    rep.add(_ease_line(pairs, corr))


def _merging_context(rep, run, corr):
    """Beside the pooled score: the within-backbone correlations and the LOFO range by paradigm."""
    within = run("/merging/analysis/within")
    if within is not None:
        t = within_table(within)
        rep.html_table(t, list(t), title="Within one physical backbone (both learning rates): Pearson r "
                                         "against retention per group, and the mean over groups")
    lofo = lofo_paradigm_range(run("/merging/analysis/lofo"))
    words = []
    if lofo is not None:
        words.append(f"Leaving one paradigm out at a time, the score's Pearson r with retention ranges "
                     f"{lofo[0]:+.2f}..{lofo[1]:+.2f} over {lofo[2]} folds.")
    if within is not None:
        words.append(f"Pooled over every merge the score's r is {_correlation(corr, 'score', 'retention'):+.2f}; "
                     f"within one backbone it is {t['score r'][-1]:+.2f} on average. A pooled r well above the "
                     "within-backbone mean is a between-backbone effect: the score then tells the backbones "
                     "apart, not the merges of one backbone.")
    if words:
        rep.add("<p>" + " ".join(words) + "</p>")


def merging_part(rep, run, lib):
    """COMPASS merging on the real fine-tunes: the regime (M1, M2), the claims (the score
    against retention; PRISM's recovery), the within-backbone and leave-one-paradigm-out r."""
    pairs = run("/merging/pairs")
    if pairs is None or any(c not in pairs for c in ("acc_a", "acc_b", "ft_acc_a", "ft_acc_b", "retention")):
        return
    data = run("/real/data")
    images = (int(data["flickr_images"][0]) + int(data["coco_images"][0])
              if data is not None and "coco_images" in data else TEST_IMAGES)
    regime = merging_regime(pairs, images)
    corr = run("/merging/analysis/correlations")
    rep.add("<h3>COMPASS merging on the real fine-tunes</h3>"
            "<p>Rules fixed before the run (docs/real-networks.md, What counts): retention tells merges "
            "apart only when its spread across merges is well beyond one merge's binomial standard error "
            f"(M2; {images} test images per task, {TEST_IMAGES_BY_TASK['digits']} for digits); PRISM's "
            "recovery is tested only with enough destructive merges (M1). The score agrees with the paper "
            f"when r = {PAPER_MERGING_R:.2f} lies in its Pearson 95% CI. Retention: sd {regime['spread']:.4f} "
            f"across {len(pairs['retention'])} merges, median SE of one merge {regime['median_se']:.4f}.</p>")
    _gates(rep, regime["gates"], "The regime: gates")
    rep.add(_verdict_words("merging", regime["gates"][1:], f"r = {PAPER_MERGING_R:.2f}"))
    _claims(rep, merging_claims(corr, regime, run("/prism/analysis/recovery"), PAPER_MERGING_R),
            "COMPASS merging and PRISM's recovery: the papers' claims, judged by the rules fixed in advance, "
            "and re-analysed", run)
    theirs = _library(lib, lambda t: f"r = {_correlation(t('/merging/analysis/correlations'), 'score', 'retention'):.2f}"
                      " (retention)")
    if theirs:
        rep.add(f"<p>{theirs.strip()}</p>")
    if corr is not None:
        _merging_context(rep, run, corr)


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
    return (f"<li>Drift: the screening score grows as steps^{b:.2f} pooled (r² "
            f"{drift['r2']:.2f}; per merge {each.min():.2f} to {each.max():.2f}) along "
            f"fine-tuning, beside the paper's exponent {PAPER_DRIFT_EXPONENT:g} (not judged: no rule "
            f"for it was fixed before this library's run).{_library(lib, _drift_exponent)}</li>")


def _kernels(rep, run, merges):
    """The keep floor on convolution kernels too (/prism/kernels) against matrices only."""
    kernels = run("/prism/kernels")
    if kernels is None:
        return
    t = kernel_comparison(merges, kernels)
    if not len(t["method"]):
        rep.add("<p class=note>No merge of /prism/kernels has its partner in /prism/merges.</p>")
        return
    rep.html_table(t, list(t), title="PRISM-family merges with the keep floor on convolution kernels too, "
                                     "against matrices only (the default), paired on backbone, K, members, "
                                     "method, c and κ; diff = kernels − matrices of merged_mean, sign test")


def prism_comparison(rep, run, lib):
    """PRISM on the real fine-tunes: operators, collapse screening, drift, PRISM against TA,
    the keep floor on kernels."""
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
    _kernels(rep, run, merges)


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
    alignment_part(rep, run, lib)
    merging_part(rep, run, lib)
    prism_comparison(rep, run, lib)
