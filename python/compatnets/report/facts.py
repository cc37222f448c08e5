"""The run facts (meta, wall time per task group, the config) and the papers' headline
numbers beside this run's."""
import html

import numpy as np

from .h5 import scalar, table
from .references import PAPER


def measured(f, key):
    """This run's value beside a paper number ("" when the run has none)."""
    if key == "alignment_pairs" and "/alignment/pairs/score" in f:
        return str(len(f["/alignment/pairs/score"]))
    if key == "merges" and "/merging/pairs/score" in f:
        return str(len(f["/merging/pairs/score"]))
    if key == "threshold":
        for path in ("/prism/analysis/screening", "/merging/analysis/screening"):
            t = table(f, path)
            if t is not None and "screen_score" in list(t["score"]):
                i = list(t["score"]).index("screen_score")
                note = "" if t["positives"][i] > 0 else " (no destructive merge: not a real split)"
                return f"{t['best_threshold'][i]:.3g}{note}"
    if key == "drift":
        t = table(f, "/prism/analysis/drift")
        if t is not None and len(t["exponent"]):
            i = list(t["backbone"]).index("all") if "all" in list(t["backbone"]) else 0
            return f"{t['exponent'][i]:.2f} against fine-tuning steps"
    if key == "screen7b":
        return "not in a run: bench/screen.sh measures and extrapolates it"
    if key == "subsets" and "/encoders/subsets/mask" in f:
        m = f["/encoders/subsets/mask"][:]
        return f"{len(set(m.tolist()))} × {len(m) // max(1, len(set(m.tolist())))} replicates"
    return ""


def run_facts(rep, f):
    rep.section("run", "Run facts")
    facts = {k: scalar(f, f"/meta/{k}") for k in ("experiment", "seed", "ranks", "status",
                                                   "config_hash", "git_revision", "version")}
    wall = float(scalar(f, "/meta/end_time", 0) or 0) - float(scalar(f, "/meta/start_time", 0) or 0)
    facts["wall time (s)"] = f"{wall:.1f}"
    rep.add("<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                                  for k, v in facts.items()) + "</table>")
    tasks = table(f, "/tasks")
    if tasks is not None:
        groups = list(dict.fromkeys(tasks["group"]))
        rows = {"group": [], "tasks": [], "task_seconds": [], "span_s": [], "failed": [], "retried": []}
        for g in groups:
            m = tasks["group"] == g
            st, du = tasks["start"][m], tasks["duration"][m]
            ok = np.isfinite(st) & np.isfinite(du)
            rows["group"].append(g)
            rows["tasks"].append(int(m.sum()))
            rows["task_seconds"].append(float(np.nansum(du)))
            rows["span_s"].append(float((st[ok] + du[ok]).max() - st[ok].min()) if ok.any() else np.nan)
            rows["failed"].append(int((tasks["status"][m] == "failed").sum()))
            rows["retried"].append(int((tasks["attempt"][m] > 1).sum()))
        rep.html_table({k: np.array(v) for k, v in rows.items()},
                       ["group", "tasks", "task_seconds", "span_s", "failed", "retried"], limit=100,
                       title="wall time per stage (task group)")
    cfg = scalar(f, "/meta/config_text")
    rep.add(f"<details><summary>config</summary><pre>{html.escape(str(cfg))}</pre></details>")
    rep.section("paper", "The papers' headline numbers (a different model library)")
    rep.add("<p class=note>These are the published studies' numbers on real models; the "
            "measured numbers above come from this run's model library and are not expected "
            "to match them.</p>")
    rep.add("<table><tr><th>study</th><th>quantity</th><th>paper (real models)</th>"
            "<th>this run (model library)</th></tr>" + "".join(
                f"<tr><td>{a}</td><td>{html.escape(b)}</td><td>{html.escape(c)}</td>"
                f"<td>{html.escape(measured(f, k) if k else '')}</td></tr>" for a, b, c, k in PAPER)
            + "</table>")
