"""A fake probe-feature extractor for checkpoints (a user's script, run as a command task).

  extract_probe.py --model NAME --ckpt DIR --probe FILE --out FILE --result FILE

Runs the probe inputs through tanh(x @ w1) @ w2 of the model's checkpoint (DIR/<base>_<task>
as a folder with model.safetensors or a sharded index, or DIR/<base>_<task>.safetensors) and
writes "features" to FILE.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "python"))
from safetensors_np import read, save  # noqa: E402


def load(path):
    """{name: float64 array} of a checkpoint file or folder."""
    files = [path]
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(index):
            files = sorted({os.path.join(path, f) for f in json.load(open(index))["weight_map"].values()})
        else:
            files = [os.path.join(path, "model.safetensors")]
    out = {}
    for f in files:
        for name, t in read(f)["tensors"].items():
            out[name] = np.asarray(t["values"], dtype=np.float64).reshape(t["shape"])
    return out


def main():
    p = argparse.ArgumentParser()
    for flag in ("--model", "--ckpt", "--probe", "--out", "--result"):
        p.add_argument(flag, required=True)
    a = p.parse_args()
    stem = os.path.join(a.ckpt, a.model.replace("+", "_"))
    w = load(stem if os.path.isdir(stem) else stem + ".safetensors")
    t = read(a.probe)["tensors"]["inputs"]
    x = np.asarray(t["values"]).reshape(t["shape"])
    features = np.tanh(x @ w["w1"]) @ w["w2"]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    save(a.out, {"features": features.astype(np.float32)})
    json.dump({"rows": int(features.shape[0])}, open(a.result, "w"))


if __name__ == "__main__":
    main()
