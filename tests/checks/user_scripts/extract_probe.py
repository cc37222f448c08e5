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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python"))
from compatnets.safetensors import load as load_checkpoint, read, save  # noqa: E402


def load(path):
    """{name: float64 array} of a checkpoint file or folder."""
    return {name: t.astype(np.float64) for name, t in load_checkpoint(path).items()}


def main():
    p = argparse.ArgumentParser()
    for flag in ("--model", "--ckpt", "--probe", "--out", "--result"):
        p.add_argument(flag, required=True)
    a = p.parse_args()
    stem = os.path.join(a.ckpt, a.model.replace("+", "_"))
    w = load(stem if os.path.isdir(stem) else stem + ".safetensors")
    x = read(a.probe).tensors["inputs"].astype(np.float64)
    features = np.tanh(x @ w["w1"]) @ w["w2"]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    save(a.out, {"features": features.astype(np.float32)})
    json.dump({"rows": int(features.shape[0])}, open(a.result, "w"))


if __name__ == "__main__":
    main()
