"""`compatbench advise merge` against what the merging study measured: on a configs/real.yaml
run, the advice on each backbone's 8 fine-tunes (all 28 pairs, c = 1) beside the study's 112
task-arithmetic merges of the same pairs (merging/merges: destructive when the merge's mean
accuracy falls below the base's), at the paper's threshold and at a threshold fixed on half
of the backbones (every other in name order) and tested on the rest.
    /usr/bin/python3 bench/advise_vs_study.py RUN_DIR [COMPATBENCH]
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np


def advice(binary, run, backbone, tasks, folder):
    out = os.path.join(folder, backbone + ".json")
    models = [f"{run}/real/finetunes/{backbone}_{t}.safetensors" for t in tasks]
    subprocess.run([binary, "advise", "merge", "--base", f"{run}/real/models/{backbone}.safetensors",
                    "--models", *models, "--json", out], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(out))


def counts(flagged, destructive):
    f, d = np.array(flagged), np.array(destructive)
    return int((f & d).sum()), int(d.sum()), int((f & ~d).sum()), int((~d).sum())


def main(run, binary):
    m = {k: v[:] for k, v in h5py.File(os.path.join(run, "results.h5"), "r")["merging/merges"].items()}
    study = {}
    for i in range(len(m["model_a"])):
        a, b = (x.decode() for x in (m["model_a"][i], m["model_b"][i]))
        study[(a.split("+")[0], frozenset((a.split("+")[1], b.split("+")[1])))] = (
            bool(m["destructive"][i]), float(m["screen_score"][i]))
    backbones = sorted({k[0] for k in study})
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for bb in backbones:
            tasks = sorted({t for k in study if k[0] == bb for t in k[1]})
            for r in advice(binary, run, bb, tasks, d)["merges"]:
                key = (bb, frozenset(n[len(bb) + 1:] for n in r["members"]))
                rows.append((bb, r["score"], study[key][0], abs(r["score"] - study[key][1]) / study[key][1]))
    score = np.array([r[1] for r in rows])
    destructive = [r[2] for r in rows]
    print(f"{len(rows)} pairs advised, {sum(destructive)} destructive in the study; "
          f"largest relative difference from the study's score {max(r[3] for r in rows):.1e}")
    tp, pos, fp, neg = counts(score > 1.9e-3, destructive)
    print(f"paper's threshold 1.9e-3: {tp} of {pos} destructive flagged, {fp} of {neg} harmless flagged")
    fit = [i for i, r in enumerate(rows) if backbones.index(r[0]) % 2 == 0]
    test = [i for i in range(len(rows)) if i not in fit]
    best = max(sorted(set(score[fit])), key=lambda t: sum((score[i] >= t) == destructive[i] for i in fit))
    tp, pos, fp, neg = counts(score[test] >= best, [destructive[i] for i in test])
    print(f"threshold {best:.4g} fixed on {len(fit)} pairs ({', '.join(backbones[::2])}): on the other "
          f"{len(test)}, {tp} of {pos} destructive flagged, {fp} of {neg} harmless flagged")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "release", "runner", "compatbench"))
