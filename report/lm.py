"""The section on the language-model library (configs/real*.yaml's lm_* groups): the
specialists, and PRISM's study on them beside the paper's language-model numbers, each with
a plain word on whether it agrees. Every number here is read from a results file."""
import numpy as np

from report.h5 import pick, table
from report.references import PAPER_DRIFT_EXPONENT, PAPER_LM


def _k2_line(merges):
    """PRISM against TA, TIES and DELLA on the K = 2 merge at c = 1."""
    at = (merges["k"] == 2) & (merges["coef"] == 1.0) & np.isin(merges["kappa"], (0.0, 1.0))
    by = {m: merges["merged_mean"][at & (merges["method"] == m)] for m in ("prism", "task_arithmetic", "ties", "della")}
    if any(len(v) != 1 for v in by.values()):
        return ""
    gains = {m: 100 * (by["prism"][0] - v[0]) for m, v in by.items() if m != "prism"}
    verdict = "agrees with" if min(gains.values()) >= PAPER_LM["gain_pp"] else "disagrees with"
    members = merges["members"][at & (merges["method"] == "prism")][0]
    text = ", ".join(f"{g:+.1f} pp over {m}" for m, g in gains.items())
    return (f"<li>The K = 2 merge ({members}): PRISM {text}; this {verdict} the paper's "
            f"≥ {PAPER_LM['gain_pp']} pp on its math + code merge.</li>")


def _kappa_line(kappa):
    sel = kappa["method"] == "prism"
    if not sel.any():
        return ""
    spread = 100 * float(np.ptp(kappa["merged_mean"][sel]))
    verdict = "agrees with" if spread <= PAPER_LM["kappa_pp"] else "disagrees with"
    return (f"<li>κ ∈ {{{', '.join(f'{k:g}' for k in kappa['kappa'][sel])}}}: PRISM's mean accuracy "
            f"spans {spread:.2f} pp; this {verdict} the paper's κ-insensitivity within "
            f"{PAPER_LM['kappa_pp']} pp.</li>")


def _update_line(ops):
    at1 = ops["coef"] == 1.0
    prism = ops["update_pct"][at1 & (ops["method"] == "prism")]
    others = ops["update_pct"][at1 & ~np.isin(ops["method"], ("prism", "prism_hard", "norm_matched"))]
    if not len(prism) or not len(others):
        return ""
    return (f"<li>Update norm at c = 1: PRISM {prism[0]:.1f}% of the mean task vector's, the "
            f"baselines {others.min():.0f}–{others.max():.0f}% (paper: {PAPER_LM['update_pct']}% "
            f"against {PAPER_LM['baseline_update']}).</li>")


def _screening_lines(run):
    fixed = pick(run("/lm/analysis/screening_fixed"), "score", "screen_score")
    pre = pick(run("/lm/analysis/screening_preregistered"), "score", "screen_score")
    lines = []
    if fixed is not None:
        lines.append(f"<li>{fixed['positives']} of {fixed['n']} task-arithmetic merges destructive "
                     f"(paper: {PAPER_LM['destructive']}). At the paper's threshold "
                     f"{fixed['threshold']:.2g}: {fixed['tp']} of {fixed['positives']} caught, "
                     f"{fixed['fp']} of {fixed['n'] - fixed['positives']} harmless flagged (paper: "
                     f"{PAPER_LM['caught']} caught, {PAPER_LM['flagged']} flagged).</li>")
    if pre is not None:
        lines.append(f"<li>A threshold fixed on half of the merges ({pre['threshold']:.3g}) and "
                     f"tested on the other {pre['test_n']}: {pre['tp']} of {pre['tp'] + pre['fn']} "
                     f"caught, {pre['fp']} of {pre['fp'] + pre['tn']} flagged.</li>")
    return lines


def _drift_line(run):
    drift = pick(run("/lm/analysis/drift"), "backbone", "all")
    if drift is None:
        return ""
    b = drift["exponent"]
    verdict = "agrees with" if abs(b - PAPER_DRIFT_EXPONENT) <= 0.1 else "disagrees with"
    return (f"<li>Drift: the screening score grows as steps^{b:.2f} (r² {drift['r2']:.2f}) along "
            f"continued pretraining (tokens = steps × a fixed batch, so the same exponent against "
            f"tokens); this {verdict} the paper's square root.</li>")


def lm_section(rep, f):
    """Adds the section when the run trained the language models (a /lm/specialists table)."""
    if "/lm/specialists" not in f:
        return
    rep.section("lm", "Language models: PRISM in its own regime")
    run = lambda p: table(f, p)  # noqa: E731
    rep.html_table(run("/lm/specialists"), ["domain", "acc", "base_acc", "ppl", "base_ppl", "acc_other",
                                            "base_acc_other"],
                   title="Specialists on their own domain's held-out text, beside the base")
    ops = run("/lm/analysis/operators")
    if ops is not None:
        rep.html_table(ops, ["method", "coef", "n", "merged_mean", "base_mean", "retention", "destructive",
                             "update_pct", "keep_fraction"], limit=60,
                       title="K-way merges at the MLP scope, per operator and c (κ = 1)")
    lines = _screening_lines(run)
    merges = run("/lm/merges")
    if merges is not None:
        lines.append(_k2_line(merges))
    if run("/lm/analysis/kappa") is not None:
        lines.append(_kappa_line(run("/lm/analysis/kappa")))
    if ops is not None:
        lines.append(_update_line(ops))
    lines.append(_drift_line(run))
    rep.add("<p>PRISM on the language models, measured and not tuned:</p><ul>" + "".join(lines) + "</ul>")
