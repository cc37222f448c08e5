"""A fake feature extractor standing in for a user's script (a `command` task).

  extract_features.py --model NAME --modality vision|text --data DIR --out DIR --result FILE

Writes OUT/NAME/<split>.safetensors ("features", one row per image or caption) from the raw
inputs in DIR/<split>.safetensors through a random two-layer network seeded by the model's
name, and {"rows": total rows} to FILE, as the runner's command protocol asks.
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python"))
from compatnets.safetensors import read, save  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for flag in ("--model", "--modality", "--data", "--out", "--result"):
        p.add_argument(flag, required=True)
    a = p.parse_args()
    rng = np.random.default_rng(zlib.crc32(a.model.encode()))
    key = "images" if a.modality == "vision" else "captions"
    rows = 0
    w1 = w2 = None
    for split in ("train", "probe", "flickr", "coco"):
        x = read(os.path.join(a.data, split + ".safetensors")).tensors[key].astype(np.float64)
        if w1 is None:
            w1 = rng.normal(size=(x.shape[1], 32)) / np.sqrt(x.shape[1])
            w2 = rng.normal(size=(32, 24)) / np.sqrt(32)
        f = np.tanh(x @ w1) @ w2
        os.makedirs(os.path.join(a.out, a.model), exist_ok=True)
        save(os.path.join(a.out, a.model, split + ".safetensors"), {"features": f.astype(np.float32)})
        rows += f.shape[0]
    json.dump({"rows": rows}, open(a.result, "w"))


if __name__ == "__main__":
    main()
