"""bench/advise_align.sh's inputs: 20 vision and 20 text encoders' probe features (1,024
images, one caption each, 768 dimensions), drawn at random (seeded) around a shared signal,
with their pairing and the manifest DIR/features.yaml.

    PYTHONPATH=python /usr/bin/python3 bench/advise_align_features.py DIR
"""
import os, sys
import numpy as np
from compatnets.safetensors import save
d = sys.argv[1]
rng = np.random.default_rng(0)
signal = rng.standard_normal((1024, 64))
os.makedirs(f"{d}/pairing", exist_ok=True)
save(f"{d}/pairing/probe.safetensors", {"caption_image": np.arange(1024, dtype=np.int64)})
lines = ["features: .", "pairing: pairing", "splits: [probe]", "models:"]
for modality in ("vision", "text"):
    for i in range(20):
        name = f"{modality}{i:02d}"
        mix = signal @ rng.standard_normal((64, 768)) * (0.2 + 0.04 * i)
        x = (mix + rng.standard_normal((1024, 768))).astype(np.float32)
        os.makedirs(f"{d}/{name}", exist_ok=True)
        save(f"{d}/{name}/probe.safetensors", {"features": x})
        lines.append(f"  - {{name: {name}, modality: {modality}, family: f{i % 4}, paradigm: p{i % 5}}}")
open(f"{d}/features.yaml", "w").write("\n".join(lines) + "\n")
