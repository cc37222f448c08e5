"""The verdicts under the statistics layer (docs/methods.md §5.2-§5.4), read from the results
file: every claim with its value, naive and clustered 95% intervals, band and three-valued
verdict; every predictor beside its plain baseline; correlations with both intervals; AUROCs
within groups; the held-out best pair. Nothing is computed here: the runner wrote it all.
A number that cannot be had is shown as its reason, never as "nan"."""
import math

import h5py
import numpy as np

from .h5 import table


def _finite(v):
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def interval(lo, hi, reason=""):
    """"[lo, hi]", or the reason there is none."""
    if _finite(lo) and _finite(hi):
        return f"[{float(lo):+.3f}, {float(hi):+.3f}]"
    return f"none: {reason}" if reason else "none"


def band(lo, hi):
    """A band as text: [lo, hi], ≥ lo or ≤ hi."""
    lo, hi = float(lo), float(hi)
    if math.isinf(hi) and math.isinf(lo):
        return "any"
    if math.isinf(hi):
        return f"≥ {lo:g}"
    if math.isinf(lo):
        return f"≤ {hi:g}"
    return f"[{lo:g}, {hi:g}]"


def number(v, reason=""):
    """A value as text, or its reason when it is undefined."""
    return f"{float(v):.4g}" if _finite(v) else (f"undefined: {reason}" if reason else "undefined")


def claim_tables(f):
    """[(path, table)] of every claims table the inference layer wrote (it has band_lo)."""
    out = []

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and name.endswith("claims") and "band_lo" in obj:
            out.append(("/" + name, table(f, "/" + name)))
    f.visititems(visit)
    return sorted(out, key=lambda x: x[0])


def claim_rows(t):
    """A claims table as display rows: claim, statistic, n, value, p, intervals, band, verdict."""
    rows = {k: [] for k in ("claim", "statistic", "paper", "n", "value", "p", "naive 95%",
                            "clustered 95%", "clusters", "band", "verdict")}
    for i in range(len(t["claim"])):
        what = t["statistic"][i] + f"({t['x'][i]}" + (f", {t['y'][i]})" if t["y"][i] else ")")
        if t["baseline"][i]:
            what += f" − the same of {t['baseline'][i]}"
        reason = t["reason"][i]
        rows["claim"].append(t["claim"][i])
        rows["statistic"].append(what)
        rows["paper"].append(t["paper"][i])
        rows["n"].append(int(t["n"][i]))
        rows["value"].append(number(t["value"][i], reason))
        rows["p"].append(number(t["p"][i], "no test"))
        rows["naive 95%"].append(interval(t["naive_lo"][i], t["naive_hi"][i], reason))
        rows["clustered 95%"].append(interval(t["lo"][i], t["hi"][i], reason)
                                     + (f" ({t['undefined_draws'][i]} undefined draws)"
                                        if t["undefined_draws"][i] else ""))
        rows["clusters"].append(t["clusters"][i])
        rows["band"].append(band(t["band_lo"][i], t["band_hi"][i]))
        rows["verdict"].append(t["verdict"][i])
    return {k: np.array(v, dtype=object) for k, v in rows.items()}


def verdict_of(f, path, claim):
    """"verdict: value, clustered [lo, hi], band" of one claim, or None without it."""
    return verdict_in(table(f, path), claim)


def verdict_in(t, claim):
    """verdict_of on a table already read."""
    if t is None or "claim" not in t or claim not in list(t["claim"]):
        return None
    i = list(t["claim"]).index(claim)
    lo, hi = ("lo", "hi")
    reason = t["reason"][i] if "reason" in t else ""
    b = band(t["band_lo"][i], t["band_hi"][i]) if "band_lo" in t else t["band"][i]
    return (f"{t['verdict'][i]}: {number(t['value'][i], reason)}, 95% {interval(t[lo][i], t[hi][i], reason)}"
            f", band {b}")


def baseline_rows(t):
    rows = {k: [] for k in ("predictor", "baseline", "target", "statistic", "n", "predictor's",
                            "baseline's", "difference", "naive 95%", "clustered 95%")}
    for i in range(len(t["predictor"])):
        reason = t["reason"][i]
        rows["predictor"].append(t["predictor"][i])
        rows["baseline"].append(t["baseline"][i])
        rows["target"].append(t["target"][i])
        rows["statistic"].append(t["statistic"][i])
        rows["n"].append(int(t["n"][i]))
        rows["predictor's"].append(number(t["value"][i], reason))
        rows["baseline's"].append(number(t["baseline_value"][i], reason))
        rows["difference"].append(number(t["difference"][i], reason))
        rows["naive 95%"].append(interval(t["naive_lo"][i], t["naive_hi"][i], reason))
        rows["clustered 95%"].append(interval(t["lo"][i], t["hi"][i], reason))
    return {k: np.array(v, dtype=object) for k, v in rows.items()}


def correlation_rows(t):
    """Pearson and Spearman with Fisher's, the naive and the clustered interval, and the ratio
    of the clustered width to the naive one."""
    rows = {k: [] for k in ("predictor", "target", "n", "pearson_r", "Fisher 95%", "naive 95%",
                            "clustered 95%", "width ratio", "spearman_rho", "ρ clustered 95%")}
    for i in range(len(t["predictor"])):
        reason = t["interval_reason"][i] or t["reason"][i]
        nl, nh, cl, ch = (float(t[c][i]) for c in ("pearson_naive_lo", "pearson_naive_hi",
                                                    "pearson_cl_lo", "pearson_cl_hi"))
        rows["predictor"].append(t["predictor"][i])
        rows["target"].append(t["target"][i])
        rows["n"].append(int(t["n"][i]))
        rows["pearson_r"].append(number(t["pearson_r"][i], t["reason"][i]))
        rows["Fisher 95%"].append(interval(t["pearson_ci_low"][i], t["pearson_ci_high"][i], t["reason"][i]))
        rows["naive 95%"].append(interval(nl, nh, reason))
        rows["clustered 95%"].append(interval(cl, ch, reason))
        rows["width ratio"].append(f"{(ch - cl) / (nh - nl):.2f}" if all(map(_finite, (nl, nh, cl, ch)))
                                   and nh > nl else "—")
        rows["spearman_rho"].append(number(t["spearman_rho"][i], t["reason"][i]))
        rows["ρ clustered 95%"].append(interval(t["spearman_cl_lo"][i], t["spearman_cl_hi"][i], reason))
    return {k: np.array(v, dtype=object) for k, v in rows.items()}


def with_reasons(t, columns, reason="reason"):
    """A copy of table `t` whose NaN cells in `columns` read "undefined: <reason>"."""
    if t is None or reason not in t:
        return t
    out = dict(t)
    for c in columns:
        if c in t:
            out[c] = np.array([number(v, t[reason][i]) for i, v in enumerate(t[c])], dtype=object)
    return out


def _groups(f, suffix):
    out = []

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and name.endswith(suffix) and "/analysis/" in "/" + name:
            out.append("/" + name)
    f.visititems(visit)
    return sorted(out)


def reanalysis_section(rep, f):
    """The section: claims, baselines, correlations with both intervals, AUROCs within groups
    and the held-out pair, wherever the results file has them."""
    claims = claim_tables(f)
    baselines = [p for p in _groups(f, "baselines") if table(f, p) is not None]
    if not claims and not baselines:
        return
    rep.section("verdicts", "Verdicts: clustered intervals, bands, baselines")
    rep.add("<p>Each claim was stated with the paper's value and a band before the run "
            "(docs/methods.md §5.3): <b>agrees</b> when the clustered 95% interval lies inside the band, "
            "<b>disagrees</b> when it lies outside, <b>inconclusive</b> when it straddles an edge. "
            "Intervals resample the models the rows share (§5.2); the naive interval, which resamples "
            "rows as if independent, is shown beside it.</p>")
    for path, t in claims:
        rep.html_table(claim_rows(t), title=f"claims: {path}", limit=60,
                       columns=["claim", "statistic", "paper", "n", "value", "p", "naive 95%",
                                "clustered 95%", "clusters", "band", "verdict"])
    for path in baselines:
        rows = baseline_rows(table(f, path))
        rep.html_table(rows, list(rows), title=f"each predictor beside its baseline: {path}")
    for path in _groups(f, "correlations"):
        t = table(f, path)
        if t is not None and "pearson_cl_lo" in t:
            rep.html_table(correlation_rows(t), title=f"correlations, naive and clustered: {path}")
    for path in _groups(f, "_within"):
        rows = within_rows(table(f, path))
        rep.html_table(rows, list(rows), title=f"AUROC within groups: {path}", limit=60)
    for path in _groups(f, "held_out_pair"):
        t = table(f, path)
        rep.html_table({**with_reasons(t, ["chosen_score", "capacity_score", "difference"]),
                        "95%": np.array([interval(lo, hi, r) for lo, hi, r in zip(t["lo"], t["hi"], t["reason"])],
                                        dtype=object)},
                       ["selection", "test", "chosen", "capacity", "chosen_score", "capacity_score", "difference",
                        "95%"], title=f"the best pair chosen on held-out replicates: {path}")


def within_rows(t):
    """An AUROC-within-groups table as display rows: the AUROC or why it is undefined, and
    both intervals."""
    return {"column": t["column"], "value": t["value"], "score": t["score"], "n": t["n"],
            "positives": t["positives"],
            "auroc": np.array([number(v, r) for v, r in zip(t["auroc"], t["reason"])], dtype=object),
            "naive 95%": np.array([interval(lo, hi, r) for lo, hi, r in zip(t["naive_lo"], t["naive_hi"],
                                                                          t["reason"])], dtype=object),
            "clustered 95%": np.array([interval(lo, hi, r) for lo, hi, r in zip(t["lo"], t["hi"], t["reason"])],
                                      dtype=object)}
