"""The results report: figures and key tables from a run's results.h5, as one HTML page.

    /usr/bin/python3 report/make_report.py OUT_DIR     (or: compatbench report OUT_DIR)

Writes OUT_DIR/report/index.html and its PNG figures, with a section for each study the
file holds (alignment, merging, PRISM, encoder roles, the real networks: report/real.py)
and the run facts. Uses only h5py,
numpy and matplotlib (Agg).
"""
import html
import json
import os
import sys

import h5py
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from real import real_section  # noqa: E402

REGION_COLOURS = {"act_now": "#2a9d8f", "budget_limited": "#e9c46a",
                  "ceiling_limited": "#f4a261", "incompatible": "#e76f51"}
# The papers' numbers (real models: a different model library from the zoo).
PAPER = [
    ("COMPASS", "alignment pairs trained", "72", "alignment_pairs"),
    ("COMPASS", "task-arithmetic merges", "392", "merges"),
    ("PRISM", "screening threshold (7B LLMs)", "1.9e-3", "threshold"),
    ("PRISM", "destructive cluster lower edge", "4.17e-3", None),
    ("PRISM", "drift exponent of the score vs tokens", "about 0.5", "drift"),
    ("PRISM", "screening a 7B merge (K = 2)", "about 2 min of CPU", "screen7b"),
    ("Encoder roles", "encoder subsets retrained", "31 (5 encoders)", "subsets"),
]


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


def table(f, path):
    """A table group as {column: numpy array} (strings decoded), or None."""
    if path not in f or not isinstance(f[path], h5py.Group):
        return None
    out = {}
    for k, d in f[path].items():
        if not isinstance(d, h5py.Dataset):
            continue
        v = d[()]
        if v.dtype.kind == "S":
            v = np.array([x.decode(errors="replace") for x in v])
        out[k] = v
    return out or None


def scalar(f, path, default=""):
    if path not in f:
        return default
    v = f[path][()]
    return v.decode(errors="replace") if isinstance(v, bytes) else v


class Report:
    def __init__(self, out_dir):
        self.dir = os.path.join(out_dir, "report")
        os.makedirs(self.dir, exist_ok=True)
        self.sections = []  # (id, title, [html parts])
        self.n = 0

    def section(self, sid, title):
        self.sections.append((sid, title, []))

    def add(self, part):
        self.sections[-1][2].append(part)

    def figure(self, fig, caption):
        self.n += 1
        name = f"fig{self.n:02d}.png"
        fig.tight_layout()
        fig.savefig(os.path.join(self.dir, name), dpi=90)
        plt.close(fig)
        self.add(f'<figure><img src="{name}" alt="{html.escape(caption)}">'
                 f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def html_table(self, t, columns=None, limit=40, title=""):
        if t is None:
            return
        columns = [c for c in (columns or sorted(t)) if c in t]
        rows = len(t[columns[0]]) if columns else 0
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = []
        for i in range(min(rows, limit)):
            cells = []
            for c in columns:
                v = t[c][i]
                if isinstance(v, (float, np.floating)):
                    v = "nan" if np.isnan(v) else f"{v:.4g}"
                cells.append(f"<td>{html.escape(str(v))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        more = f"<p class=more>{rows - limit} more rows in results.h5</p>" if rows > limit else ""
        cap = f"<h3>{html.escape(title)}</h3>" if title else ""
        self.add(f"{cap}<table><tr>{head}</tr>{''.join(body)}</table>{more}")

    def write(self, title, subtitle):
        nav = " · ".join(f'<a href="#{s}">{html.escape(t)}</a>' for s, t, _ in self.sections)
        parts = [f'<section id="{s}"><h2>{html.escape(t)}</h2>{"".join(p)}</section>'
                 for s, t, p in self.sections]
        page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}}
figure{{display:inline-block;margin:.5em;vertical-align:top}} img{{max-width:520px}}
table{{border-collapse:collapse;font-size:12px;margin:.5em 0}} td,th{{border:1px solid #ccc;padding:2px 6px}}
pre{{background:#f6f6f6;padding:.5em;overflow:auto;max-height:300px}} .note{{color:#555}}</style></head>
<body><h1>{html.escape(title)}</h1><p class=note>{html.escape(subtitle)}</p><nav>{nav}</nav>
{''.join(parts)}
<script>
// Marks the page once every image has settled, for automated checks (headless browsers).
window.addEventListener('load', () => {{
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.images = imgs.length;
  document.body.dataset.imagesLoaded = ok;
}});
</script></body></html>"""
        with open(os.path.join(self.dir, "index.html"), "w") as fh:
            fh.write(page)
        return os.path.join(self.dir, "index.html")


def fit_line(ax, x, y):
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() >= 2 and np.ptp(x[ok]) > 0:
        b, a = np.polyfit(x[ok], y[ok], 1)
        xs = np.linspace(x[ok].min(), x[ok].max(), 2)
        ax.plot(xs, a + b * xs, "k--", lw=1)


def correlation_of(corr, predictor, target):
    if corr is None:
        return None
    for i in range(len(corr["predictor"])):
        if corr["predictor"][i] == predictor and corr["target"][i] == target:
            return corr["pearson_r"][i], corr["spearman_rho"][i]
    return None


def compass_section(rep, f, study, title):
    pairs = table(f, f"/{study}/pairs")
    if pairs is None:
        return
    a = f"/{study}/analysis/"
    corr = table(f, a + "correlations")
    targets = sorted(set(corr["target"])) if corr is not None else []
    rep.section(study, title)
    rep.add(f"<p>{len(pairs['score'])} evaluated pairs; predictors computed from probe-set "
            "forward passes, targets from training or merging.</p>")
    for target in targets:
        if target not in pairs:
            continue
        fig, axes = plt.subplots(1, 4, figsize=(14, 3.3))
        for ax, p in zip(axes, ["score", "ease", "ceiling", "cka"]):
            if p not in pairs:
                ax.set_visible(False)
                continue
            x, y = pairs[p].astype(float), pairs[target].astype(float)
            ax.scatter(x, y, s=12, c=[REGION_COLOURS.get(r, "grey") for r in pairs["region"]])
            fit_line(ax, x, y)
            rr = correlation_of(corr, p, target)
            ax.set_title(f"{p}: r={rr[0]:.2f}, ρ={rr[1]:.2f}" if rr else p, fontsize=10)
            ax.set_xlabel(p)
            ax.set_ylabel(target)
        rep.figure(fig, f"{title}: predictors vs {target} (colour: region)")
    # The ease-ceiling plane with the median lines, and the target per region.
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    for r, c in REGION_COLOURS.items():
        m = pairs["region"] == r
        ax.scatter(pairs["ease"][m], pairs["ceiling"][m], s=14, c=c, label=f"{r} ({m.sum()})")
    ax.axvline(np.median(pairs["ease"]), color="k", lw=0.8)
    ax.axhline(np.median(pairs["ceiling"]), color="k", lw=0.8)
    ax.set_xlabel("ease")
    ax.set_ylabel("ceiling")
    ax.legend(fontsize=7)
    ax.set_title("ease–ceiling plane, median lines")
    kw = table(f, a + "kruskal")
    if targets:
        t = targets[0]
        groups = [pairs[t][pairs["region"] == r] for r in REGION_COLOURS]
        axes[1].boxplot([g if len(g) else [np.nan] for g in groups], labels=list(REGION_COLOURS))
        axes[1].tick_params(axis="x", labelsize=7)
        h = ""
        if kw is not None:
            for i in range(len(kw["target"])):
                if kw["target"][i] == t:
                    h = f": Kruskal–Wallis H={kw['h'][i]:.2f}, p={kw['p'][i]:.2g}"
        axes[1].set_title(f"{t} per region{h}", fontsize=10)
    rep.figure(fig, f"{title}: regions")
    curve = table(f, a + "budget_curve")
    lofo = table(f, a + "lofo_range")
    ks = table(f, a + "k_sensitivity")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.5))
    if curve is not None:
        for key in sorted(set(zip(curve["predictor"], curve["target"]))):
            m = (curve["predictor"] == key[0]) & (curve["target"] == key[1])
            axes[0].plot(curve["m"][m], curve["best_so_far"][m], label=f"{key[0]} / {key[1]}")
        axes[0].set_xlabel("candidates evaluated, best predicted first")
        axes[0].set_ylabel("best so far")
        axes[0].legend(fontsize=6)
        axes[0].set_title("budget-limited search")
    if lofo is not None:
        labels = [f"{p}\n{t}" for p, t in zip(lofo["predictor"], lofo["target"])]
        lo, hi = lofo["pearson_min"], lofo["pearson_max"]
        axes[1].bar(range(len(lo)), hi - lo, bottom=lo, color="#8ecae6")
        axes[1].set_xticks(range(len(lo)), labels, fontsize=6)
        axes[1].set_title("leave-one-family-out: Pearson r range")
    if ks is not None:
        for key in sorted(set(zip(ks["predictor"], ks["target"]))):
            m = (ks["predictor"] == key[0]) & (ks["target"] == key[1])
            axes[2].plot(ks["k"][m], ks["pearson_r"][m], marker="o", label=f"{key[0]} / {key[1]}")
        axes[2].set_xscale("log")
        axes[2].set_xlabel("k")
        axes[2].set_ylabel("Pearson r")
        axes[2].legend(fontsize=6)
        axes[2].set_title("k-sensitivity")
    rep.figure(fig, f"{title}: budget search, LOFO ranges, k-sensitivity")
    rep.html_table(corr, ["predictor", "target", "n", "pearson_r", "pearson_p", "spearman_rho",
                          "spearman_p"], title="correlations")
    rep.html_table(table(f, a + "screening"), ["score", "n", "positives", "auroc",
                                                "best_threshold", "tp", "fp", "tn", "fn"],
                   title="screening")


def prism_section(rep, f):
    ops = table(f, "/prism/analysis/operators")
    if ops is None:
        return
    rep.section("prism", "PRISM: K-way merges, operators, screening, drift")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for m in dict.fromkeys(ops["method"]):
        sel = ops["method"] == m
        axes[0].plot(ops["coef"][sel], ops["merged_mean"][sel], marker="o", label=m)
    axes[0].axhline(np.nanmean(ops["base_mean"]), color="k", lw=0.8, ls=":", label="base")
    axes[0].set_xlabel("coefficient c")
    axes[0].set_ylabel("mean merged accuracy")
    axes[0].legend(fontsize=6)
    axes[0].set_title("accuracy vs coefficient per operator")
    merges = table(f, "/prism/merges")
    # The screening split that has both kinds of merges: destructive, else low retention.
    scr = None
    for name in ("screening", "screening_retention"):
        t = table(f, "/prism/analysis/" + name)
        if t is not None and "screen_score" in list(t["score"]):
            i = list(t["score"]).index("screen_score")
            if 0 < t["positives"][i] < t["n"][i]:
                scr, scr_name = t, name
                break
    if merges is not None:
        ta = merges["method"] == "task_arithmetic"
        axes[1].scatter(merges["screen_score"][ta], merges["merged_mean"][ta], s=8,
                        c=merges["k"][ta], cmap="viridis")
        x = merges["screen_score"][ta]
        if scr is not None:
            i = list(scr["score"]).index("screen_score")
            thr = scr["best_threshold"][i]
            label = f"best threshold {thr:.3g} ({scr_name}, AUROC {scr['auroc'][i]:.2f})"
            if x.min() <= thr <= x.max():
                axes[1].axvline(thr, color="r", lw=1, label=label)
            else:
                axes[1].plot([], [], " ", label=label + ": outside the scores")
            axes[1].legend(fontsize=6)
        axes[1].set_xlabel("screening score c·√(Ī/K)")
        axes[1].set_ylabel("merged mean accuracy")
        axes[1].set_title("screening score vs merged accuracy (TA; colour K)", fontsize=9)
    abl = table(f, "/prism/analysis/ablation")
    if abl is not None:
        labels = [f"{a}\n− {b}" for a, b in zip(abl["a"], abl["b"])]
        axes[2].bar(range(len(labels)), abl["mean_diff"], yerr=abl["sd_diff"], color="#90be6d")
        axes[2].set_xticks(range(len(labels)), labels, fontsize=6)
        axes[2].axhline(0, color="k", lw=0.8)
        axes[2].set_title("ablations: paired accuracy difference")
    rep.figure(fig, "PRISM: operators, screening, ablations")
    drift = table(f, "/prism/drift")
    fit = table(f, "/prism/analysis/drift")
    if drift is not None:
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for bb in dict.fromkeys(drift["backbone"]):
            m = drift["backbone"] == bb
            ax.plot(drift["step"][m], drift["screen_score"][m], marker=".", lw=0.8, alpha=0.7)
        exp = ""
        if fit is not None and "all" in list(fit["backbone"]):
            i = list(fit["backbone"]).index("all")
            exp = f": pooled exponent {fit['exponent'][i]:.2f} (r² {fit['r2'][i]:.2f})"
            xs = np.array([drift["step"].min(), drift["step"].max()], dtype=float)
            ax.plot(xs, fit["prefactor"][i] * xs ** fit["exponent"][i], "k--", lw=1.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("fine-tuning steps")
        ax.set_ylabel("screening score")
        ax.set_title(f"drift{exp}", fontsize=10)
        rep.figure(fig, "PRISM: screening score along the specialists' fine-tuning")
    rep.html_table(ops, ["method", "coef", "n", "merged_mean", "base_mean", "retention",
                         "destructive", "update_pct", "keep_fraction"], title="operators")
    rep.html_table(table(f, "/prism/analysis/kappa"), ["method", "kappa", "n", "merged_mean",
                   "retention", "update_pct", "keep_fraction"], title="κ sweep, hard vs soft, norm-matched")
    rep.html_table(abl, ["a", "b", "n", "mean_diff", "wins", "losses", "ties", "sign_p"],
                   title="ablations")
    rep.html_table(fit, ["backbone", "n", "exponent", "r2", "first_score", "last_score"],
                   title="drift fits")


def encoders_section(rep, f):
    s = table(f, "/encoders/subsets")
    if s is None:
        return
    a = "/encoders/analysis/"
    rep.section("encoders", "Encoder roles: subsets, capacity and necessity, effective rank")
    masks = sorted(set(s["mask"]))
    mean = {m: np.nanmean(s["average"][s["mask"] == m]) for m in masks}
    size = {m: int(s["size"][s["mask"] == m][0]) for m in masks}
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    xs = [size[m] + np.random.default_rng(m).uniform(-0.12, 0.12) for m in masks]
    axes[0].scatter(xs, [mean[m] for m in masks], s=16, c="#6c757d")
    for z in sorted(set(size.values())):
        best = max((mean[m], m) for m in masks if size[m] == z)
        axes[0].scatter([z], [best[0]], s=60, c="r", marker="*")
    axes[0].set_xlabel("subset size")
    axes[0].set_ylabel("average score (TR)")
    axes[0].set_title(f"all {len(masks)} subsets; best per size ★")
    cn = table(f, a + "capacity_necessity")
    if cn is not None:
        o = cn["category"] == "overall"
        axes[1].scatter(cn["capacity"][o], cn["necessity"][o], c="#3a86ff")
        for e, x, y in zip(cn["encoder"][o], cn["capacity"][o], cn["necessity"][o]):
            axes[1].annotate(e, (x, y), fontsize=7)
        axes[1].set_xlabel("capacity S({e})/S(full)")
        axes[1].set_ylabel("necessity S(full) − S(full∖e)")
        axes[1].set_title("Capacity vs Necessity")
    rk = table(f, a + "rankings")
    if rk is not None:
        idx = np.arange(len(rk["encoder"]))
        for off, col, rank, label in ((-0.2, "tr_loo_drop", "tr_loo_rank", "TR: retrained without it"),
                                      (0.2, "im_loo_drop", "im_loo_rank", "IM: masked at inference")):
            bars = axes[2].bar(idx + off, rk[col], 0.4, label=label)
            for b, r in zip(bars, rk[rank]):
                axes[2].annotate(f"#{r}", (b.get_x() + b.get_width() / 2, b.get_height()),
                                 ha="center", va="bottom", fontsize=7)
        axes[2].set_xticks(idx, rk["encoder"], fontsize=7, rotation=20)
        axes[2].set_ylabel("score drop when left out")
        axes[2].axhline(0, color="k", lw=0.8)
        axes[2].legend(fontsize=7)
        axes[2].set_title("TR vs IM: leave-one-out drop (#rank)")
    rep.figure(fig, "Encoder roles: subsets by size, Capacity–Necessity, TR vs IM")
    er = table(f, a + "erank")
    if er is not None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
        axes[0].scatter(er["singleton_erank"], er["singleton_score"])
        for e, x, y in zip(er["encoder"], er["singleton_erank"], er["singleton_score"]):
            axes[0].annotate(e, (x, y), fontsize=7)
        axes[0].set_xlabel("singleton effective rank")
        axes[0].set_ylabel("singleton score")
        axes[0].set_title("effective rank vs score (singletons)")
        sizes = sorted(int(c[len("mean_erank_size"):]) for c in er if c.startswith("mean_erank_size"))
        for i, e in enumerate(er["encoder"]):
            axes[1].plot(sizes, [er[f"mean_erank_size{z}"][i] for z in sizes], marker="o", label=e)
        axes[1].set_xlabel("subset size")
        axes[1].set_ylabel("mean effective rank")
        axes[1].legend(fontsize=7)
        axes[1].set_title("effective rank by subset size")
        rep.figure(fig, "Encoder roles: pre-projector effective rank")
    rep.html_table(table(f, a + "taxonomy"), ["encoder", "capacity", "necessity", "top_category",
                   "top_category_share", "delta_rank_with_core", "role"], title="taxonomy")
    rep.html_table(table(f, a + "by_size"), ["size", "best", "best_score", "fraction_of_full",
                   "im_best", "im_best_score"], title="best subset per size")
    rep.html_table(table(f, a + "ranking_agreement"), None, title="TR vs IM agreement")


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


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_report.py OUT_DIR")
    out = sys.argv[1]
    path = os.path.join(out, "results.h5")
    if not os.path.exists(path):
        sys.exit(f"{path}: no results file (run compatbench run first)")
    with h5py.File(path, "r") as f:
        rep = Report(out)
        compass_section(rep, f, "alignment", "COMPASS alignment")
        compass_section(rep, f, "merging", "COMPASS merging")
        prism_section(rep, f)
        encoders_section(rep, f)
        real_section(rep, f, table)
        run_facts(rep, f)
        name = scalar(f, "/meta/experiment", "run")
        page = rep.write(f"compatbench report: {name}",
                         f"from {os.path.abspath(path)}; figures show the results as measured")
    print(json.dumps({"report": page, "figures": rep.n,
                      "sections": [s for s, _, _ in rep.sections]}))


if __name__ == "__main__":
    main()
