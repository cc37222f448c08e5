"""The studies' sections: COMPASS alignment and merging, PRISM, encoder roles."""
import numpy as np

from .h5 import correlation_of, table
from .reanalysis import number, verdict_of, with_reasons
from .page import fit_line, plt

REGION_COLOURS = {"act_now": "#2a9d8f", "budget_limited": "#e9c46a",
                  "ceiling_limited": "#f4a261", "incompatible": "#e76f51"}


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
    rep.html_table(with_reasons(table(f, a + "screening"), ["auroc", "auroc_p", "best_threshold"]),
                   ["score", "n", "positives", "auroc", "auroc_p", "best_threshold", "tp", "fp", "tn", "fn"],
                   title="screening (an AUROC needs destructive and harmless merges; where it cannot be "
                         "computed, the reason is shown)")


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


def encoders_section(rep, f, study="encoders", title="Encoder roles"):
    s = table(f, f"/{study}/subsets")
    if s is None:
        return
    a = f"/{study}/analysis/"
    rep.section(study, f"{title}: subsets, capacity and necessity, effective rank")
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
    rep.figure(fig, f"{title}: subsets by size, Capacity–Necessity, TR vs IM")
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
        rep.figure(fig, f"{title}: pre-projector effective rank")
    rep.html_table(table(f, a + "taxonomy"), ["encoder", "capacity", "necessity", "top_category",
                   "top_category_share", "delta_rank_with_core", "role"], title="taxonomy")
    rep.html_table(table(f, a + "by_size"), ["size", "best", "best_score", "fraction_of_full",
                   "im_best", "im_best_score"], title="best subset per size")
    rep.html_table(table(f, a + "ranking_agreement"), None, title="TR vs IM agreement")
    rep.html_table(table(f, a + "best_pair"), ["pair", "chosen_by", "score", "anchor", "anchor_delta_rank",
                   "complement", "complement_delta_rank", "gap_closed", "gap_closed_from_anchor"],
                   title="best pair: anchor and complement (gap_closed: from the complement, the seed's)")
    rep.html_table(side_by_side(f, a), ["claim", "statistic", "n", "value", "p", "paper", "verdict",
                                        "re-analysis"],
                   title="the seed's claims: the verdicts as pre-registered (the regime first; methods.md §4) "
                         "and the re-analysis with bands, exact tests and the held-out pair (§5.3)")


def side_by_side(f, a):
    """The pre-registered claims table with a "re-analysis" column from claims_reanalysis."""
    pre = table(f, a + "claims")
    if pre is None:
        return None
    again = [verdict_of(f, a + "claims_reanalysis", c) for c in pre["claim"]]
    out = dict(pre)
    out["p"] = np.array([number(v, "no test") for v in pre["p"]], dtype=object)
    out["value"] = np.array([number(v, "no statistic") for v in pre["value"]], dtype=object)
    out["re-analysis"] = np.array([v or "not re-analysed (a file from before the re-analysis)" for v in again],
                                  dtype=object)
    return out


def roles_variants_section(rep, f):
    """Joint against frozen encoders (configs/real*.yaml run both): per encoder, capacity,
    necessity, singleton erank, mean Δrank and role under each; the claims side by side.
    Rows are matched by name (encoder, claim), not by position."""
    studies = {"joint": "/encoders/analysis/", "frozen": "/encoders_frozen/analysis/"}
    tx = {k: table(f, a + "taxonomy") for k, a in studies.items()}
    if any(t is None for t in tx.values()):
        return
    rep.section("roles_variants", "Encoder roles: encoders tuned jointly against frozen")
    encoders = list(tx["joint"]["encoder"])
    rows = {"encoder": np.array(encoders)}
    for label, a in studies.items():
        er, dr = table(f, a + "erank"), table(f, a + "delta_rank")
        pick = lambda t, col, e: t[col][list(t["encoder"]).index(e)] if t is not None and e in list(t["encoder"]) else np.nan
        rows[f"{label}_capacity"] = np.array([pick(tx[label], "capacity", e) for e in encoders])
        rows[f"{label}_necessity"] = np.array([pick(tx[label], "necessity", e) for e in encoders])
        rows[f"{label}_role"] = np.array([str(pick(tx[label], "role", e)) for e in encoders])
        rows[f"{label}_erank"] = np.array([pick(er, "singleton_erank", e) for e in encoders], float)
        rows[f"{label}_mean_delta_rank"] = np.array(
            [np.nanmean(dr["delta_rank"][dr["encoder"] == e]) if dr is not None and (dr["encoder"] == e).any()
             else np.nan for e in encoders])
    rep.html_table(rows, list(rows), title="per encoder: joint against frozen (Δrank is 0 by construction when frozen)")
    cl = {k: table(f, a + "claims") for k, a in studies.items()}
    if any(t is None for t in cl.values()):
        return
    names = list(cl["joint"]["claim"])
    both = {"claim": np.array(names), "paper": cl["joint"]["paper"]}
    for label, t in cl.items():
        at = {c: i for i, c in enumerate(t["claim"])}
        both[f"{label}_value"] = np.array([number(t["value"][at[c]], "no statistic") if c in at else "not in the file"
                                           for c in names], dtype=object)
        both[f"{label}_verdict"] = np.array([t["verdict"][at[c]] if c in at else "" for c in names])
        a = studies[label]
        both[f"{label}_reanalysis"] = np.array([verdict_of(f, a + "claims_reanalysis", c) or "" for c in names],
                                               dtype=object)
    rep.html_table(both, list(both), title="the seed's claims, joint and frozen")
