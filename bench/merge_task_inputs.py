"""bench/merge_task.sh's inputs: random probe features for the two fine-tunes of the set in
DIR, and the checkpoint manifest OUT/manifest.yaml naming its files.

    PYTHONPATH=python /usr/bin/python3 bench/merge_task_inputs.py DIR OUT
"""
import os, sys
import numpy as np
from compatnets.safetensors import save
d, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
for ft in ("ft0", "ft1"):
    os.makedirs(f"{out}/features/b+{ft}", exist_ok=True)
    save(f"{out}/features/b+{ft}/probe.safetensors", {"features": rng.standard_normal((64, 8)).astype(np.float32)})
with open(f"{out}/manifest.yaml", "w") as f:
    f.write(f"features: features\nbackbones: [{{name: b, family: llama, paradigm: sup, checkpoint: {d}/base.safetensors}}]\n"
            f"finetunes:\n  - {{name: b+ft0, base: b, task: t0, checkpoint: {d}/ft0.safetensors}}\n"
            f"  - {{name: b+ft1, base: b, task: t1, checkpoint: {d}/ft1}}\n")
