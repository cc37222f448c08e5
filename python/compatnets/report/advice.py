"""The page of an advice file (`compatbench advise merge|align --json FILE`): for merges, the
ranked screening scores against the threshold, flagged ones apart; for alignment, every
pair's ease against its ceiling with the regions; and the ranked table."""
import json
import os

import matplotlib.pyplot as plt
import numpy as np

from .page import Report


def _merge_page(rep, advice):
    merges = advice["merges"]
    score = np.array([m["score"] if m["score"] is not None else np.nan for m in merges])
    flagged = np.array([m["flagged"] for m in merges])
    rank = np.arange(1, len(merges) + 1)
    rep.section("merge", f"Which merges: {len(merges)} subsets of K = {advice['k']} of "
                         f"{len(advice['models'])} fine-tunes")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.scatter(rank[~flagged], score[~flagged], s=14, label="below: the plain mean")
    ax.scatter(rank[flagged], score[flagged], s=14, color="tab:red", label="flagged: PRISM")
    ax.axhline(advice["threshold"], color="k", lw=0.8, ls="--", label=f"threshold {advice['threshold']:g}")
    if np.nanmin(score) > 0:
        ax.set_yscale("log")
    ax.set_xlabel("rank (lowest score first)")
    ax.set_ylabel("screening score c·√(Ī/K)")
    ax.legend(fontsize=8)
    rep.figure(fig, "Each merge's screening score, ranked, against the threshold")
    table = {"rank": rank, "members": np.array([", ".join(m["members"]) for m in merges])}
    for key in ("interference", "rho", "sign_conflict", "score"):
        table[key] = np.array([m[key] if m[key] is not None else np.nan for m in merges], float)
    table["advice"] = np.array([m["operator"] for m in merges])
    rep.html_table(table, ["rank", "members", "interference", "rho", "sign_conflict", "score", "advice"],
                   title=f"Ranked merges (c = {advice['coef']:g})")


def _align_page(rep, advice):
    pairs = advice["pairs"]
    val = lambda key: np.array([p[key] if p[key] is not None else np.nan for p in pairs], float)  # noqa: E731
    ease, ceiling, score = val("ease"), val("ceiling"), val("score")
    rep.section("align", f"Which pairs to align: {len(pairs)} vision × text pairs, ranked by "
                         f"{advice['ranked_by']}")
    first = np.array([p["first"] for p in pairs])
    if not np.isnan(ceiling).all():
        fig, ax = plt.subplots(figsize=(6, 4.5))
        sc = ax.scatter(ease, ceiling, c=score, s=18, cmap="viridis")
        ax.scatter(ease[first], ceiling[first], s=80, facecolors="none", edgecolors="tab:red",
                   label=f"the {int(first.sum())} to align first" if first.any() else None)
        ax.axvline(np.median(ease), color="k", lw=0.6, ls="--")
        ax.axhline(np.median(ceiling), color="k", lw=0.6, ls="--")
        for x, y, name in ((0.98, 0.98, "act now"), (0.02, 0.98, "budget-limited"),
                           (0.98, 0.02, "ceiling-limited"), (0.02, 0.02, "incompatible")):
            ax.text(x, y, name, transform=ax.transAxes, ha="right" if x > 0.5 else "left",
                    va="top" if y > 0.5 else "bottom", fontsize=8, color="grey")
        ax.set_xlabel(f"ease (mutual k-NN, k = {advice['k']})")
        ax.set_ylabel("ceiling (paradigm pair)")
        fig.colorbar(sc, ax=ax, label="score = ease × ceiling")
        if first.any():
            ax.legend(fontsize=8, loc="center right")
        rep.figure(fig, "Every pair's ease against its ceiling, with the regions (medians)")
    else:
        rep.add("<p>No paradigm for every model: the ceiling cannot be computed; ranked by ease.</p>")
    table = {"rank": np.arange(1, len(pairs) + 1), "vision": np.array([p["vision"] for p in pairs]),
             "text": np.array([p["text"] for p in pairs]), "ease": ease, "ceiling": ceiling,
             "score": score, "cka": val("cka"),
             "region": np.array([p["region"] or "" for p in pairs]),
             "first": np.array(["yes" if f else "" for f in first])}
    rep.html_table(table, ["rank", "vision", "text", "ease", "ceiling", "score", "cka", "region", "first"],
                   title="Ranked pairs")


def advice_report(path):
    """Writes <path without .json>_advice/report/index.html; returns its path."""
    with open(path) as f:
        advice = json.load(f)
    pages = {"merge": _merge_page, "align": _align_page}
    if advice.get("kind") not in pages:
        raise SystemExit(f"{path}: not an advice file of compatbench advise (kind merge or align)")
    rep = Report(os.path.splitext(path)[0] + "_advice")
    pages[advice["kind"]](rep, advice)
    return rep.write("compatbench advice", f"from {os.path.abspath(path)}")
