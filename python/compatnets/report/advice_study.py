"""The advice checked against the merging study: `compatbench advise merge` run on each
backbone's fine-tunes (the very files the run merged, every tensor, at the c the study
screened with), its flags set beside the pairs the study measured as destructive
(merging/merges: the merge's mean accuracy below the base's), at the paper's threshold and at
a threshold fixed on half of the backbones (every other in name order) and tested on the rest. The advice files are kept in report/advice/.
bench/advise_vs_study.py prints the same from a run folder."""
import html
import json
import os
import subprocess

from . import page  # noqa: F401  (Agg before pyplot)
import matplotlib.pyplot as plt
import numpy as np

from .h5 import table
from .references import PAPER_THRESHOLD


def _file(out, name):
    """A model's checkpoint in the run folder: the model library's artifacts, or the real
    library's models and fine-tunes ("mlp_sup+fine" is real/finetunes/mlp_sup_fine); a level
    of a backbone fine-tuned with `--tag` ("cnn_sup_lr3e-3", python/compatnets/finetune.py)
    is the backbone's weights, and its fine-tune "cnn_sup_lr3e-3+fine" is
    real/finetunes/cnn_sup_fine_lr3e-3."""
    model, _, task = name.partition("+")
    stem, _, tag = model.rpartition("_")
    paths = [f"{out}/artifacts/models/{name}.safetensors", f"{out}/real/models/{name}.safetensors",
             f"{out}/real/finetunes/{name.replace('+', '_')}.safetensors"]
    if stem:
        paths.append(f"{out}/real/finetunes/{stem}_{task}_{tag}.safetensors" if task
                     else f"{out}/real/models/{stem}.safetensors")
    return next((path for path in paths if os.path.isfile(path)), None)


def study_pairs(merges):
    """{backbone: {frozenset of the two members: (destructive, the study's score)}}."""
    out = {}
    for i in range(len(merges["model_a"])):
        pair = frozenset((merges["model_a"][i], merges["model_b"][i]))
        out.setdefault(merges["backbone"][i], {})[pair] = (bool(merges["destructive"][i]),
                                                            float(merges["screen_score"][i]))
    return out


def study_coef(merges, backbone):
    """The c the study screened the backbone's pairs at: score = c·√(Ī/2) (methods.md §3.1)."""
    m = merges["backbone"] == backbone
    c = merges["screen_score"][m] / np.sqrt(merges["interference"][m] / 2)
    c = c[np.isfinite(c)]
    return f"{np.median(c):.10g}" if len(c) else "1"


def advise(binary, out, folder, backbone, members, coef):
    """`compatbench advise merge` on the backbone's fine-tunes: (advice, None), or (None, why)
    when a file is not in the run folder (a user's own checkpoints) or the command fails."""
    files = [_file(out, n) for n in [backbone, *members]]
    if None in files:
        missing = [n for n, f in zip([backbone, *members], files) if f is None]
        return None, f"no checkpoint in the run folder for {', '.join(missing)}"
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, backbone + ".json")
    done = subprocess.run([binary, "advise", "merge", "--base", files[0], "--models", *files[1:],
                           "--coef", coef, "--json", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    advice = json.load(open(path))
    names = {os.path.basename(f)[:-len(".safetensors")]: n for f, n in zip(files[1:], members)}
    for m in advice["merges"]:
        m["members"] = [names[n] for n in m["members"]]
    return advice, None


def compare(binary, out, merges, folder):
    """Rows (backbone, advice score, study score, destructive) of every pair of the study with
    finite scores, and notes: the backbones left out and why, the pairs not matched."""
    rows, notes = [], []
    for backbone, pairs in sorted(study_pairs(merges).items()):
        members = sorted({n for p in pairs for n in p})
        advice, why = advise(binary, out, folder, backbone, members, study_coef(merges, backbone))
        if advice is None:
            notes.append(f"{backbone}: left out ({why})")
            continue
        scored = {frozenset(m["members"]): m["score"] for m in advice["merges"]}
        unmatched = 0
        for key, (destructive, study_score) in pairs.items():
            score = scored.get(key)
            if score is None or not np.isfinite(study_score):
                unmatched += 1
                continue
            rows.append((backbone, score, study_score, destructive))
        if unmatched:
            notes.append(f"{backbone}: {unmatched} of the study's pairs without a finite score in "
                         f"both")
    return rows, notes


def _counts(flagged, destructive):
    f, d = np.asarray(flagged, bool), np.asarray(destructive, bool)
    return {"caught": int((f & d).sum()), "destructive": int(d.sum()),
            "false_flags": int((f & ~d).sum()), "harmless": int((~d).sum())}


def summary(rows):
    """The advice's flags against the study's outcomes, at the paper's threshold and at one fixed
    on every other backbone and tested on the rest."""
    backbones = sorted({r[0] for r in rows})
    score = np.array([r[1] for r in rows])
    destructive = np.array([r[3] for r in rows])
    out = {"pairs": len(rows), "max_relative_difference":
           max(abs(r[1] - r[2]) / max(abs(r[2]), 1e-300) for r in rows),
           "paper": _counts(score > PAPER_THRESHOLD, destructive)}
    fit = np.array([backbones.index(r[0]) % 2 == 0 for r in rows])
    if 0 < fit.sum() < len(rows):
        best = max(sorted(set(score[fit])),
                   key=lambda t: int(((score[fit] >= t) == destructive[fit]).sum()))
        out["fixed"] = {"threshold": float(best), "fit_on": backbones[::2], "fit_pairs": int(fit.sum()),
                        **_counts(score[~fit] >= best, destructive[~fit])}
    return out


def _line(c):
    return (f"{c['caught']} of {c['destructive']} destructive merges flagged, "
            f"{c['false_flags']} of {c['harmless']} harmless ones flagged")


def advice_study_section(rep, f, out, binary):
    """Adds the section when the run has a merging study and its checkpoints are in the run."""
    merges = table(f, "/merging/merges")
    if merges is None or "destructive" not in merges or not binary or not os.path.isfile(binary):
        return
    rep.section("advice", "Advice before merging, against the merging study")
    rows, notes = compare(binary, out, merges, os.path.join(rep.dir, "advice"))
    if notes:
        rep.add("<p class=note>" + "; ".join(html.escape(n) for n in notes) + ". Run "
                "<code>compatbench advise merge</code> on those checkpoints yourself "
                "(docs/advise.md).</p>")
    if not rows:
        return
    s = summary(rows)
    lines = [f"<li>{s['pairs']} pairs advised by <code>compatbench advise merge</code> (one pass "
             f"per backbone); its scores equal the study's to {s['max_relative_difference']:.1e} "
             f"(relative).</li>",
             f"<li>At the paper's threshold {PAPER_THRESHOLD:.3g}: {_line(s['paper'])}.</li>"]
    if "fixed" in s:
        x = s["fixed"]
        lines.append(f"<li>At {x['threshold']:.4g}, fixed on the {x['fit_pairs']} pairs of "
                     f"{', '.join(x['fit_on'])} and tested on the other "
                     f"{s['pairs'] - x['fit_pairs']}: {_line(x)}.</li>")
    rep.add("<p>The advice (flag above the threshold: merge with PRISM; below: the plain mean) "
            "beside what the study measured; the advice files are in "
            "<code>report/advice/</code>:</p><ul>" + "".join(lines) + "</ul>")
    fig_rows = sorted(rows, key=lambda r: r[1])
    fig, ax = plt.subplots(figsize=(6, 3.4))
    x = np.arange(len(fig_rows))
    d = np.array([r[3] for r in fig_rows])
    sc = np.array([r[1] for r in fig_rows])
    ax.scatter(x[~d], sc[~d], s=12, label="harmless in the study")
    ax.scatter(x[d], sc[d], s=12, color="C3", label="destructive in the study")
    ax.axhline(PAPER_THRESHOLD, color="k", lw=0.8, ls="--", label="paper's threshold")
    ax.set_xlabel("pairs, by advised score")
    ax.set_ylabel("screening score c·√(Ī/K)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    rep.figure(fig, "advise merge's score of every studied pair, coloured by the study's outcome")
