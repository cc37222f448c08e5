#!/usr/bin/env bash
# `compatbench advise align` at the size of the issue's question: 20 vision × 20 text
# encoders, 1,024 probe images (one caption each) and 768 dimensions, features drawn at random
# (seeded) around a shared signal; 1 rank, then 2.
#   bash bench/advise_align.sh [DIR]   (build first; the features are kept in DIR)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
DIR=${1:-${TMPDIR:-/tmp}/compatbench-advise-align}
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [[ ! -e $DIR/features.yaml ]]; then
  (cd "$ROOT/python" && /usr/bin/python3 - "$DIR" <<'PY'
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
PY
  )
fi
for n in 1 2; do
  mpirun -n $n --oversubscribe "$BIN" advise align --manifest "$DIR/features.yaml" --budget 5 --json "$DIR/n$n.json" | tail -1
done
