"""The section on the language-model library (configs/real*.yaml's lm_* groups): the
specialists, and PRISM's study on them beside the paper's language-model numbers, each with
a plain word on whether it agrees. Every number here is read from a results file."""
import numpy as np

from .h5 import pick, table
from .reanalysis import verdict_in
from .references import PAPER_DRIFT_EXPONENT, PAPER_LM


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
    """Adds the section when the run trained the language models (a /lm/specialists table):
    the drift study's when its merges carry a margin, else the single-level one."""
    if "/lm/specialists" not in f:
        return
    rep.section("lm", "Language models: PRISM in its own regime")
    run = lambda p: table(f, p)  # noqa: E731
    if "/lm/merges/margin" in f:
        return drift_section(rep, f)
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


# The drift study (configs/real-lm.yaml): the regime first, then each claim judged by the rule
# docs/language-models.md fixed before the run.

def _levels(t):
    """The drift levels (backbones lr<rate>) of a table, by rate."""
    return sorted(set(t["backbone"]), key=lambda b: float(b[2:]))


def _at(t, **want):
    keep = np.ones(len(t["backbone"]), bool)
    for k, v in want.items():
        keep &= t[k] == v
    return keep


def _word(ok):
    return "agrees" if ok else "disagrees"


def regime(f):
    """Per level: the specialists' mean relative norm (MLP projections) and the K = 2, c = 1
    task-arithmetic merges, destructive of all; and whether the regime's two gates hold."""
    spec, merges = table(f, "/lm/specialists"), table(f, "/lm/merges")
    out = []
    for b in _levels(merges):
        sel = _at(merges, backbone=b, method="task_arithmetic", k=2, coef=1.0)
        rate = float(b[2:])
        norms = spec["rel_norm_mlp"][np.isclose(spec["lr"], rate)]
        out.append({"level": b, "rel_norm_mlp": float(np.mean(norms)), "rel_norm": float(np.mean(
            spec["rel_norm"][np.isclose(spec["lr"], rate)])), "k2_merges": int(sel.sum()),
            "k2_destructive": int(merges["destructive"][sel].sum()),
            "k2_score": float(np.mean(merges["screen_score"][sel]))})
    span = out[-1]["rel_norm_mlp"] / out[0]["rel_norm_mlp"]
    destroyed = sum(r["k2_destructive"] for r in out)
    both = 0 < destroyed < sum(r["k2_merges"] for r in out)
    return out, span, span >= 5 and both


def _rates(c):
    """The verdict of a confusion count by the fixed rule: recall ≥ 5/7, at most 10% flagged."""
    if c["tp"] + c["fn"] == 0 or c["fp"] + c["tn"] == 0:
        return "no verdict: one kind of merge is missing"
    return _word(c["tp"] / (c["tp"] + c["fn"]) >= 5 / 7 and c["fp"] / (c["fp"] + c["tn"]) <= 0.1)


def _screen_claims(run):
    fixed = pick(run("/lm/analysis/screening_fixed"), "score", "screen_score")
    pre = pick(run("/lm/analysis/screening_preregistered"), "score", "screen_score")
    out = []
    if fixed is not None:
        out.append(("the paper's threshold 1.9e-3 flags collapse", f"{PAPER_LM['caught']} caught, {PAPER_LM['flagged']} flagged",
                    f"{fixed['tp']} of {fixed['tp'] + fixed['fn']} caught, {fixed['fp']} of {fixed['fp'] + fixed['tn']} flagged",
                    _rates(fixed)))
    if pre is not None:
        out.append(("a threshold fixed on half the member sets transfers", "",
                    f"{pre['threshold']:.3g}: {pre['tp']} of {pre['tp'] + pre['fn']} caught, {pre['fp']} of "
                    f"{pre['fp'] + pre['tn']} flagged on the other half", _rates(pre)))
    for path, where in (("screening", "all task-arithmetic merges"), ("screening_k2", "K = 2, c = 1")):
        t = run(f"/lm/analysis/{path}")
        r = pick(t, "score", "screen_score")
        if r is None or "auroc_lo" not in r:
            continue
        others = ", ".join(f"{s} {t['auroc'][i]:.2f}" for i, s in enumerate(t["score"]) if s != "screen_score")
        out.append((f"the score separates the two kinds ({where})", "",
                    f"AUROC {r['auroc']:.2f} [{r['auroc_lo']:.2f}, {r['auroc_hi']:.2f}] ({others})",
                    _word(r["auroc_lo"] > 0.5)))
    return out


def _recovery_claims(run):
    rec = run("/lm/analysis/recovery")
    out = []
    if rec is None:
        return out
    for i in np.flatnonzero(rec["backbone"] == "all"):
        c, n = rec["coef"][i], rec["ta_destroyed"][i]
        if n == 0:
            out.append((f"PRISM recovers what TA destroys (c = {c:g})", f"≥ {PAPER_LM['gain_pp']} pp",
                        "task arithmetic destroyed no merge", "no verdict"))
            continue
        gain = 100 * rec["diff_destroyed"][i]
        size, direction = gain >= PAPER_LM["gain_pp"], rec["wins"][i] > rec["losses"][i] and rec["sign_p"][i] < 0.05
        out.append((f"PRISM recovers what TA destroys (c = {c:g})", f"≥ {PAPER_LM['gain_pp']} pp",
                    f"{gain:+.2f} pp over {n} merges ({rec['wins'][i]} wins, {rec['losses'][i]} losses, "
                    f"p = {rec['sign_p'][i]:.2g})", f"size: {_word(size)}; direction: {_word(direction)}"))
        ok = (rec["screened"][i] >= max(rec["always_ta"][i], rec["always_prism"][i])
              and rec["screened_destructive"][i] <= n)
        out.append((f"screen, then merge (c = {c:g})", "beats either alone",
                    f"{rec['screened'][i]:.4f} ({rec['screened_destructive'][i]} destructive) against always-TA "
                    f"{rec['always_ta'][i]:.4f} ({n}) and always-PRISM {rec['always_prism'][i]:.4f} "
                    f"({rec['prism_destructive'][i]}); {rec['flagged'][i]} of {rec['n'][i]} flagged", _word(ok)))
    return out


def _generation_claim(merges):
    sel = merges["method"] == "task_arithmetic"
    drop = merges["gen"][sel] - merges["base_gen"][sel]
    bad = merges["destructive"][sel] != 0
    if not bad.any() or bad.all():
        return ("collapse shows in generation", "a generation that breaks", "no destructive merges to compare",
                "no verdict")
    d, h = float(np.mean(drop[bad])), float(np.mean(drop[~bad]))
    return ("collapse shows in generation", "a generation that breaks",
            f"exact continuations, merge − base: {100 * d:+.1f} pp (destructive), {100 * h:+.1f} pp (harmless)",
            _word(d < 0 and d < h))


def _model_claims(run, merges, levels):
    out = []
    shares = [r["k2_destructive"] / max(1, r["k2_merges"]) for r in levels]
    out.append(("drift separates harmless from destructive merges at the same K and c", "yes",
                "destructive at K = 2, c = 1: " + ", ".join(f"{r['level']} {r['k2_destructive']} of {r['k2_merges']}"
                                                         for r in levels), _word(shares[-1] > shares[0])))
    scores = [r["k2_score"] for r in levels]
    out.append(("the score grows with drift at fixed K and c", "", "mean score at K = 2, c = 1: " +
                ", ".join(f"{r['level']} {r['k2_score']:.2g}" for r in levels),
                _word(all(b > a for a, b in zip(scores, scores[1:])))))
    return out


def _prism_claims(run):
    out = []
    kap = run("/lm/kappa")
    if kap is not None:
        spans = [100 * np.ptp(kap["merged_mean"][(kap["backbone"] == b) & (kap["members"] == m)])
                 for b, m in sorted(set(zip(kap["backbone"], kap["members"])))]
        out.append(("PRISM is insensitive to κ", f"within {PAPER_LM['kappa_pp']} pp",
                    f"spread over κ per member set and level: {min(spans):.2f}–{max(spans):.2f} pp",
                    _word(max(spans) <= PAPER_LM["kappa_pp"])))
    ops = run("/lm/analysis/operators")
    if ops is not None:
        at1 = ops["coef"] == 1.0
        prism = ops["update_pct"][at1 & (ops["method"] == "prism")]
        others = ops["update_pct"][at1 & ~np.isin(ops["method"], ("prism", "prism_hard", "norm_matched"))]
        if len(prism) and len(others):
            out.append(("PRISM's update is small", f"{PAPER_LM['update_pct']}% against {PAPER_LM['baseline_update']}",
                        f"{prism[0]:.1f}% against {others.min():.0f}–{others.max():.0f}%", _word(prism[0] < others.min())))
    drift = run("/lm/analysis/drift")
    if drift is not None:
        sel = drift["backbone"] != "all"
        exps = drift["exponent"][sel]
        per = "; ".join(f"{b} {', '.join(f'{e:.2f}' for e in exps[drift['backbone'][sel] == b])}"
                        for b in sorted(set(drift["backbone"][sel]), key=lambda b: float(b[2:])))
        out.append(("drift grows as √tokens", "exponent ≈ 0.5",
                    f"per level (K = 2, 4, 8): {per} (constant-rate Adam: √t for noise-dominated steps, t for agreeing ones)",
                    _word(bool(np.all(np.abs(exps - PAPER_DRIFT_EXPONENT) <= 0.1)))))
    return out


# The re-analysis of each pre-registered claim (docs/language-models.md, "Re-analysis"):
# the claims tables it is read from, or why it has none.
_SCREEN, _K2, _PRISM = "/lm/analysis/screening_claims", "/lm/analysis/screening_k2_claims", "/lm/analysis/recovery_claims"
REANALYSED = {
    "drift separates harmless from destructive merges at the same K and c": [(_K2, "drift_separates")],
    "the score grows with drift at fixed K and c": [(_K2, "score_grows_with_drift")],
    "the score separates the two kinds (all task-arithmetic merges)": [(_SCREEN, "screen_separates")],
    "the score separates the two kinds (K = 2, c = 1)": [(_K2, "screen_separates")],
    "PRISM recovers what TA destroys (c = 1)": [(_PRISM, "prism_recovers_c1"), (_PRISM, "prism_recovers_size_c1")],
    "PRISM recovers what TA destroys (c = 0.5)": [(_PRISM, "prism_recovers_c0.5"),
                                                (_PRISM, "prism_recovers_size_c0.5")],
}
NOT_REANALYSED = {
    "the paper's threshold 1.9e-3 flags collapse": "confusion counts at a fixed threshold; the AUROC claims judge the "
                                                   "separation with an interval",
    "a threshold fixed on half the member sets transfers": "confusion counts at a fixed threshold; the AUROC claims "
                                                           "judge the separation with an interval",
    "collapse shows in generation": "no band was registered for it",
    "PRISM is insensitive to κ": "a range over κ: the study records no per-merge standard error to give it a band",
    "PRISM's update is small": "a property of the operator, not a sampled statistic",
}


def _drift_reanalysis(run):
    """The drift exponents' intervals against [0.4, 0.6]: agrees when every level-and-pair fit's
    interval lies inside, disagrees when one lies wholly outside, else inconclusive."""
    drift = run("/lm/analysis/drift")
    if drift is None or "verdict" not in drift:
        return None
    v = [str(x) for b, x in zip(drift["backbone"], drift["verdict"]) if b != "all"]
    if not v or not all(v):
        return None
    counts = ", ".join(f"{v.count(w)} {w}" for w in ("agrees", "disagrees", "inconclusive", "untested") if v.count(w))
    word = ("agrees" if all(x == "agrees" for x in v) else "disagrees" if "disagrees" in v else "inconclusive")
    return f"{word}: of {len(v)} fits' 95% intervals against [0.4, 0.6], {counts}"


def reanalysed(run, claim):
    """The re-analysis of a pre-registered claim, or why there is none."""
    if claim.startswith("screen, then merge"):
        return "not re-analysed: three policies' means, not a paired statistic with a band"
    if claim == "drift grows as √tokens":
        return _drift_reanalysis(run) or "not re-analysed: the drift table has no intervals"
    if claim in NOT_REANALYSED:
        return "not re-analysed: " + NOT_REANALYSED[claim]
    found = [verdict_in(run(p), name) for p, name in REANALYSED.get(claim, [])]
    found = [x for x in found if x is not None]
    return "; ".join(found) if found else "not re-analysed: no claim of this statistic in the results file"


def drift_claims(f):
    """(regime rows, relative-norm span, whether the regime holds, claims): each claim as
    (claim, paper, here, verdict), judged by docs/language-models.md's rules."""
    run = lambda p: table(f, p)  # noqa: E731
    merges = run("/lm/merges")
    levels, span, holds = regime(f)
    claims = (_model_claims(run, merges, levels) + _screen_claims(run) + _recovery_claims(run)
              + [_generation_claim(merges)] + _prism_claims(run))
    if not holds:  # docs/language-models.md: verdicts only where the regime holds
        claims = [(c, p, h, "no verdict: the regime did not appear") for c, p, h, _ in claims]
    return levels, span, holds, claims


def _floors(run):
    """Mean merged accuracy and destructive share of PRISM-hard at κ = 100 per floor, K and level."""
    fl = run("/lm/floors")
    if fl is None:
        return None
    out = {k: [] for k in ("backbone", "k", "keep_floor", "merged_mean", "base_mean", "ft_mean", "margin")}
    for b, k, p in sorted(set(zip(fl["backbone"], fl["k"], fl["keep_floor"]))):
        i = np.flatnonzero((fl["backbone"] == b) & (fl["k"] == k) & (fl["keep_floor"] == p) & (fl["kappa"] == 100))
        for col in ("merged_mean", "base_mean", "ft_mean", "margin"):
            out[col].append(float(np.nanmean(fl[col][i])))
        out["backbone"].append(b), out["k"].append(k), out["keep_floor"].append(p)
    return {k: np.array(v) for k, v in out.items()}


def drift_section(rep, f):
    """The drift study's part of the section: the definitions, the regime, the claims."""
    run = lambda p: table(f, p)  # noqa: E731
    levels, span, holds, claims = drift_claims(f)
    rep.add("<p>Defined before the run (docs/language-models.md): a merge is <b>destructive</b> when its mean "
            "accuracy over its members' domains is below the base's by more than two paired standard errors "
            "over the held-out windows (margin = (merged − base)/SE); generation is the share of held-out lines "
            "continued exactly for 16 bytes after a 64-byte prompt. The regime holds when the highest drift "
            "level's relative norm is at least 5× the lowest's and task arithmetic at K = 2, c = 1 gives both "
            "harmless and destructive merges.</p>")
    rep.html_table({k: np.array([r[k] for r in levels]) for k in levels[0]},
                   ["level", "rel_norm_mlp", "rel_norm", "k2_merges", "k2_destructive", "k2_score"],
                   title=f"The regime: relative norms span {span:.1f}× across the levels; "
                         f"{'it holds' if holds else 'it did not appear'}")
    rep.html_table({"claim": np.array([c[0] for c in claims]), "paper": np.array([c[1] for c in claims]),
                    "here": np.array([c[2] for c in claims]), "verdict": np.array([c[3] for c in claims]),
                    "re-analysis": np.array([reanalysed(run, c[0]) for c in claims], dtype=object)},
                   ["claim", "paper", "here", "verdict", "re-analysis"],
                   title="PRISM's claims beside the paper's, judged by the rules fixed in advance, and "
                         "re-analysed with clustered intervals and bands (docs/language-models.md)")
    base = run("/lm/base")
    curve = [float(base[f"heldout_{i}"][0]) for i in range(1, 11)]
    rep.add(f"<p>The base's held-out loss after each tenth of its steps: {', '.join(f'{c:.3f}' for c in curve)}; "
            f"the last tenth lowered it by {100 * base['last_tenth_gain'][0]:.2f}% "
            f"({'flattened' if base['last_tenth_gain'][0] < 0.01 else 'still falling'}).</p>")
    rep.html_table(run("/lm/specialists"), ["level", "domain", "rel_norm", "rel_norm_mlp", "acc", "base_acc",
                                            "acc_other", "base_acc_other", "loss_other", "base_loss_other", "gen",
                                            "base_gen"], title="The specialists, per drift level (learning rate)")
    rep.html_table(_floors(run), ["backbone", "k", "keep_floor", "merged_mean", "base_mean", "ft_mean", "margin"],
                   title="PRISM-hard at κ = 100: task arithmetic on the top p of |τ̄| (keep_floor), mean over member sets")
