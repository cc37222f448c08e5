# The merging study on "real" checkpoints: safetensors backbones and fine-tunes (a single
# file, a sharded folder, F16), probe features extracted by a fake script as command tasks,
# each merge written as safetensors and evaluated by a fake script; the example config and
# manifest as shipped, on 2 ranks. Then a kept merge checked against numpy, and a fine-tune
# whose tensor has the wrong shape: a clear error naming file and tensor, the rest done.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/checks/user_scripts/make_checkpoints.py" "$WORK"
cp "$SRC/configs/merging-real.example.yaml" "$SRC/configs/merging-real.models.yaml" "$WORK/"
ln -s "$SRC/tests/checks/user_scripts/extract_probe.py" "$SRC/tests/checks/user_scripts/evaluate_merge.py" "$WORK/"
cd "$WORK"
expect_code 0 mpi 2 run merging-real.example.yaml --out out --log-level warn > run.txt
grep -q "/merging/analysis/correlations (5 rows)" run.txt || { cat run.txt; fail "no correlation table"; }
pycheck merging_real tables out

# One merge kept and checked against numpy: θ0 + (τa + τb) / 2, the base's other tensors kept.
sed -e 's/    shard_mb: 4096/    shard_mb: 4096\n    keep_merged: true/' merging-real.example.yaml > keep.yaml
expect_code 0 mpi 1 run keep.yaml --out keep --log-level error > /dev/null
pycheck merging_real kept_merges_match_numpy keep

# A fine-tune with a wrongly shaped tensor: its checks fail, naming file and tensor.
sed -e '/- name: extract/,/^  - name: real_models/{/^  - name: real_models/!d}' \
    -e '/    after: \[extract\]/d' merging-real.example.yaml > bad.yaml
"$PY" -c "
import numpy as np
from compatnets.safetensors import save
rng = np.random.default_rng(1)
save('ckpt/bb_b_t3.safetensors', {'w1': rng.normal(size=(6, 16)).astype(np.float32),
     'w2': rng.normal(size=(16, 9)).astype(np.float32), 'step': np.array([3])})"
expect_code 1 mpi 2 run bad.yaml --out bad --log-level error > /dev/null
pycheck merging_real bad_tensor_named bad
pass "merging study on safetensors checkpoints; merges match numpy; a bad tensor named"
