"""A stand-in for a user's multi-encoder training script (the encoder-roles study on real
models): scores a subset of encoders on the benchmarks without training anything.

  train_subset.py --encoders A,B --mask 5 --replicate 1 --out DIR --result FILE [--no-extras]
                  [--pool-dir POOL]

Writes FILE: {"<benchmark>": score} (each encoder adds to the categories it is good at,
with diminishing returns, plus a little replicate noise); DIR/im.json (the same keys, the
"full-pool model" with the other encoders zeroed: a fixed fraction of TR); and
DIR/features.safetensors, one (256 x 32) tensor per encoder of the subset whose effective
rank grows with the encoder's index. FAIL_MASK=<m> in the environment makes mask m write a
result without its last benchmark (an error the runner must name), and with --pool-dir
exit 1 instead; FAIL_REPLICATE=<r> limits that to replicate r. With --pool-dir (the full-pool task's folder of this replicate), the full
pool writes DIR/model.json and every other subset reads POOL/model.json for its im.json:
a subset run before its full pool fails.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python"))
from compatnets.safetensors import save  # noqa: E402

BENCHMARKS = {"General": ["gqa", "mmb"], "Knowledge": ["sqa", "ai2d"],
              "OCR&Chart": ["textvqa", "chartqa"], "Vision-Centric": ["cvbench", "mmvp"]}
STRENGTH = {"convnext": {"General": 0.3, "Knowledge": 0.2},
            "eva02": {"General": 0.2, "Vision-Centric": 0.1},
            "clip": {"General": 0.25, "Knowledge": 0.25},
            "pix2struct": {"OCR&Chart": 0.4},
            "sam": {"Vision-Centric": 0.35}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoders", required=True)
    ap.add_argument("--mask", type=int, required=True)
    ap.add_argument("--replicate", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--no-extras", action="store_true")
    ap.add_argument("--pool-dir")
    a = ap.parse_args()
    encoders = a.encoders.split("+")
    rng = np.random.default_rng(a.mask * 100 + a.replicate)
    scores = {}
    for cat, names in BENCHMARKS.items():
        gain = sum(STRENGTH[e].get(cat, 0.02) for e in encoders)
        for name in names:
            scores[name] = float(0.3 + 0.6 * (1 - np.exp(-2 * gain)) + rng.normal(0, 0.002))
    replicate = os.environ.get("FAIL_REPLICATE", str(a.replicate))  # default: all
    if os.environ.get("FAIL_MASK") == str(a.mask) and replicate == str(a.replicate):
        if a.pool_dir:
            sys.exit("error: training diverged (made to, by the test)")
        scores.pop("mmvp")
    with open(a.result, "w") as f:
        json.dump(scores, f)
    if a.no_extras:
        return
    im = 0.95
    if a.pool_dir and a.mask == 31:
        with open(os.path.join(a.out, "model.json"), "w") as f:
            json.dump({"im": im}, f)
    elif a.pool_dir:
        with open(os.path.join(a.pool_dir, "model.json")) as f:  # fails before its full pool
            im = json.load(f)["im"]
    with open(os.path.join(a.out, "im.json"), "w") as f:
        json.dump({k: im * v for k, v in scores.items()}, f)
    order = list(STRENGTH)
    feats = {}
    for e in encoders:
        rank = 4 + 4 * order.index(e)
        feats[e] = (rng.normal(size=(256, rank)) @ rng.normal(size=(rank, 32))).astype(np.float32)
    save(os.path.join(a.out, "features.safetensors"), feats)


if __name__ == "__main__":
    main()
