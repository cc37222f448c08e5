"""The page of an advice file (`compatbench advise merge --json FILE`): the ranked merges'
screening scores against the threshold, flagged ones apart, and the ranked table."""
import json
import os

import matplotlib.pyplot as plt
import numpy as np

from report.page import Report


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
    table = {"rank": rank, "members": np.array(["+".join(m["members"]) for m in merges])}
    for key in ("interference", "rho", "sign_conflict", "score"):
        table[key] = np.array([m[key] if m[key] is not None else np.nan for m in merges], float)
    table["advice"] = np.array([m["operator"] for m in merges])
    rep.html_table(table, ["rank", "members", "interference", "rho", "sign_conflict", "score", "advice"],
                   title=f"Ranked merges (c = {advice['coef']:g})")


def advice_report(path):
    """Writes <path without .json>_advice/report/index.html; returns its path."""
    with open(path) as f:
        advice = json.load(f)
    if advice.get("kind") != "merge":
        raise SystemExit(f"{path}: not an advice file of compatbench advise (no kind: merge)")
    rep = Report(os.path.splitext(path)[0] + "_advice")
    _merge_page(rep, advice)
    return rep.write("compatbench advice", f"from {os.path.abspath(path)}")
