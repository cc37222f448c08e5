"""Small stand-ins for real checkpoints, for the real-model merging test.

  make_checkpoints.py DIR   writes DIR/ckpt/: 2 backbones and 3 task fine-tunes of each:
                            bb_a (single file), bb_a+t1 (sharded folder with an index),
                            bb_a+t2 (F16), bb_b ..., and DIR/data/probe.safetensors (the
                            probe inputs the fake extractor runs through each model).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python"))
from compatnets.safetensors import save  # noqa: E402


def save_sharded(folder, tensors):
    os.makedirs(folder, exist_ok=True)
    names = sorted(tensors)
    weight_map = {}
    for i, name in enumerate(names):
        shard = f"model-{i + 1:05d}-of-{len(names):05d}.safetensors"
        save(os.path.join(folder, shard), {name: tensors[name]})
        weight_map[name] = shard
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(folder, "model.safetensors.index.json"), "w"))


def main():
    root = sys.argv[1]
    os.makedirs(os.path.join(root, "ckpt"), exist_ok=True)
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    rng = np.random.default_rng(11)
    save(os.path.join(root, "data", "probe.safetensors"),
         {"inputs": rng.normal(size=(400, 6)).astype(np.float32)})
    for b, scale in (("bb_a", 0.05), ("bb_b", 0.4)):
        base = {"w1": rng.normal(size=(6, 16)).astype(np.float32),
                "w2": rng.normal(size=(16, 8)).astype(np.float32),
                "step": np.array([3], dtype=np.int64)}   # not floating point: never merged
        save(os.path.join(root, "ckpt", b + ".safetensors"), base)
        for t in ("t1", "t2", "t3"):
            ft = {k: (v + scale * rng.normal(size=v.shape)).astype(np.float32) if v.dtype == np.float32
                  else v for k, v in base.items()}
            ft["head"] = rng.normal(size=(8, 2)).astype(np.float32)  # extra: not merged
            if t == "t1":
                save_sharded(os.path.join(root, "ckpt", f"{b}_{t}"), ft)
            elif t == "t2":
                ft = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in ft.items()}
                save(os.path.join(root, "ckpt", f"{b}_{t}.safetensors"), ft)
            else:
                save(os.path.join(root, "ckpt", f"{b}_{t}.safetensors"), ft)


if __name__ == "__main__":
    main()
