"""The report's section on the library of real PyTorch networks (configs/real*.yaml): the
encoders' own quality beside the dataset's published baselines, and the studies' headline
numbers beside the papers', with a plain note wherever they disagree."""
import html

import numpy as np

# Test accuracies listed in Fashion-MNIST's README (Debian's dataset-fashion-mnist,
# /usr/share/doc/dataset-fashion-mnist/README.md.gz), submitted benchmarks the dataset's
# authors note they have not re-tested.
BASELINES = [("2 Conv+pooling (TensorFlow's tutorial)", 0.916),
             ("2 Conv, <100K parameters", 0.925),
             ("2 Conv+3 FC, ~500K parameters, augmentation", 0.934)]
# The COMPASS paper's correlations of its score with R@1 (72 real alignment pairs) and with
# retention (392 task-arithmetic merges).
PAPER_ALIGNMENT_R = 0.90
PAPER_MERGING_R = 0.70
# The same correlations on the synthetic model library (configs/default.yaml, 2 ranks,
# measured 2026-12-01; README "Real networks"), per target.
LIBRARY_R = {"r1_flickr": 0.56, "r1_coco": 0.58, "retention": -0.39}


def _rows(table):
    return [{k: table[k][i] for k in table} for i in range(len(next(iter(table.values()))))]


def _correlation(corr, predictor, target):
    if corr is None:
        return np.nan
    m = (corr["predictor"] == predictor) & (corr["target"] == target)
    return float(corr["pearson_r"][m][0]) if m.any() else np.nan


def encoders_table(rep, table_of):
    rows = {"modality": [], "model": [], "probe_acc": [], "final_loss": [], "params": []}
    for modality in ("vision", "text"):
        t = table_of(f"/real/{modality}")
        for r in _rows(t) if t is not None else []:
            rows["modality"].append(modality)
            for k in ("model", "probe_acc", "final_loss", "params"):
                rows[k].append(r[k])
    rep.html_table({k: np.array(v) for k, v in rows.items()}, list(rows), limit=60,
                   title="encoders: linear-probe accuracy on the test images (text: flickr captions)")
    best = max((a for m, a in zip(rows["modality"], rows["probe_acc"]) if m == "vision"), default=np.nan)
    rep.add("<p class=note>Published Fashion-MNIST test accuracies (the dataset's README, fully "
            "trained classifiers): " + "; ".join(f"{html.escape(n)} {a:.3f}" for n, a in BASELINES)
            + f". The best vision encoder here reaches {best:.3f} through a linear probe on "
              "frozen features after a short training budget.</p>")


def _line(corr, target, paper, label):
    r, cka = _correlation(corr, "score", target), _correlation(corr, "cka", target)
    verdict = "agrees with" if abs(r - paper) <= 0.2 else "disagrees with"
    return (f"<li>{label}: score vs {target}: r = {r:.2f} (CKA: {cka:.2f}); this {verdict} "
            f"the paper's r = {paper:.2f}. The model library's: r = {LIBRARY_R[target]:.2f}.</li>")


def comparison(rep, table_of):
    corr = table_of("/alignment/analysis/correlations")
    lines = [_line(corr, t, PAPER_ALIGNMENT_R, "alignment") for t in ("r1_flickr", "r1_coco")]
    merging = table_of("/merging/analysis/correlations")
    if merging is not None:
        lines.append(_line(merging, "retention", PAPER_MERGING_R, "merging"))
    rep.add("<p>COMPASS on the real library, measured and not tuned:</p><ul>"
            + "".join(lines) + "</ul><p class=note>The generated captions name a class and "
            "one to three coarse attributes, so many images fit a caption equally well and R@1 "
            "stays low for every pair; R@5 and R@10 are in /alignment/pairs.</p>")


def real_section(rep, f, table_of):
    """Adds the section when the run trained the real library (a /real/vision table)."""
    if "/real/vision" not in f:
        return
    rep.section("real", "Real networks: PyTorch encoders on Fashion-MNIST")
    encoders_table(rep, lambda p: table_of(f, p))
    comparison(rep, lambda p: table_of(f, p))
