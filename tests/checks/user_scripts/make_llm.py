"""A Llama-shaped BF16 checkpoint set for screening tests and benchmarks.

  make_llm.py DIR LAYERS HIDDEN [K] [SCALE...]
      DIR/base.safetensors and DIR/ft<i>.safetensors (i < K, default 2): embed_tokens,
      per layer q/k/v/o_proj, gate/up/down_proj (intermediate = 8/3 hidden, rounded to 64),
      input/post-attention norms, a final norm and lm_head; fine-tune i adds a task vector of
      scale SCALE[i] (default 0.01) drawn per tensor, half of it shared across fine-tunes.
      ft1 is written sharded (a folder with model.safetensors.index.json) when LAYERS > 1.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "python"))
from compatnets.safetensors import save  # noqa: E402


def shapes(layers, hidden, vocab=512):
    inter = int(round(hidden * 8 / 3 / 64)) * 64 or 64
    out = {"model.embed_tokens.weight": (vocab, hidden)}
    for l in range(layers):
        p = f"model.layers.{l}."
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[p + f"self_attn.{n}.weight"] = (hidden, hidden)
        out[p + "mlp.gate_proj.weight"] = (inter, hidden)
        out[p + "mlp.up_proj.weight"] = (inter, hidden)
        out[p + "mlp.down_proj.weight"] = (hidden, inter)
        out[p + "input_layernorm.weight"] = (hidden,)
        out[p + "post_attention_layernorm.weight"] = (hidden,)
    out["model.norm.weight"] = (hidden,)
    out["lm_head.weight"] = (vocab, hidden)
    return out


def main():
    root, layers, hidden = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    scales = [float(x) for x in sys.argv[5:]] or [0.01] * k
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(5)
    shp = shapes(layers, hidden)
    base = {n: rng.normal(scale=0.02, size=s).astype(np.float32) for n, s in shp.items()}
    save(os.path.join(root, "base.safetensors"), base, dtypes="BF16")
    shared = {n: rng.normal(size=s).astype(np.float32) for n, s in shp.items()}
    for i in range(k):
        ft = {n: base[n] + scales[i] * (0.5 * shared[n] + 0.5 * rng.normal(size=shp[n])).astype(np.float32)
              for n in shp}
        if i == 1 and layers > 1:
            folder = os.path.join(root, "ft1")
            os.makedirs(folder, exist_ok=True)
            half = list(shp)[: len(shp) // 2]
            parts = {"model-00001-of-00002.safetensors": {n: ft[n] for n in half},
                     "model-00002-of-00002.safetensors": {n: ft[n] for n in shp if n not in half}}
            weight_map = {}
            for file, tensors in parts.items():
                save(os.path.join(folder, file), tensors, dtypes="BF16")
                weight_map.update({n: file for n in tensors})
            json.dump({"metadata": {}, "weight_map": weight_map},
                      open(os.path.join(folder, "model.safetensors.index.json"), "w"))
        else:
            save(os.path.join(root, f"ft{i}.safetensors"), ft, dtypes="BF16")


if __name__ == "__main__":
    main()
