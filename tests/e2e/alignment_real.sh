# The alignment study on "real" models: a small paired dataset, a fake extraction script run
# as command tasks, the example config and manifest used as shipped, on 2 ranks; then the
# same study with a corrupt feature file: a clear error naming the file, nothing else lost.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/e2e/real/make_data.py" "$WORK"
cp "$SRC/configs/alignment-real.example.yaml" "$SRC/configs/alignment-real.features.yaml" "$WORK/"
ln -s "$SRC/tests/e2e/real/extract_features.py" "$WORK/extract_features.py"
cd "$WORK"
expect_code 0 mpi 2 run alignment-real.example.yaml --out out --log-level warn > run.txt
grep -q "/alignment/analysis/correlations (8 rows)" run.txt || { cat run.txt; fail "no correlation table printed"; }
"$PY" - out <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1] + "/results.h5", "r")
pairs = {k: f["alignment/pairs"][k][:] for k in f["alignment/pairs"]}
assert len(pairs["vision"]) == 6, pairs["vision"]          # 3 vision x 2 text, all fitted
for col in ("vision_family", "text_family", "vision_paradigm", "text_paradigm", "ease", "ceiling",
            "score", "cka", "region", "r1_flickr", "r1_coco", "r5_flickr", "r10_coco"):
    assert col in pairs, col
assert np.allclose(pairs["score"], pairs["ease"] * pairs["ceiling"])
assert all(0 < r <= 1 for r in pairs["r10_flickr"])
grid = f["alignment/grid"]
assert len(grid["ease"]) == 6 and "ease_k100" in grid
corr = f["alignment/analysis/correlations"]
assert [p.decode() for p in corr["predictor"][:]][:2] == ["score", "score"]
models = {k: f["real/models"][k][:] for k in f["real/models"]}
assert list(models["dim"]) == [24] * 5 and models["rows"][0] == 600 + 300 + 80 + 80
assert list(f["meta/alignment/cost/quantity"][:])[0] == b"predictor_tasks"
print("real-model alignment: 6 pairs, grid, correlations, model checks")
PYEOF

# Features present: drop the extraction step and corrupt one model's probe features.
sed -e '/- name: extract_vision/,/^  - name: real_features/{/^  - name: real_features/!d}' \
    -e '/after: \[extract_vision, extract_text\]/d' alignment-real.example.yaml > bad.yaml
grep -q "name: extract_" bad.yaml && fail "extraction groups still in bad.yaml"
head -c 100 features/mae_b16/probe.safetensors > cut && mv cut features/mae_b16/probe.safetensors
expect_code 1 mpi 2 run bad.yaml --out bad --log-level error > bad.txt
"$PY" - bad <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1] + "/results.h5", "r")
ids = [i.decode() for i in f["tasks/id"][:]]
status = dict(zip(ids, [s.decode() for s in f["tasks/status"][:]]))
error = dict(zip(ids, [s.decode() for s in f["tasks/error"][:]]))
assert status["real_features/mae_b16"] == "failed", status
assert "features/mae_b16/probe.safetensors" in error["real_features/mae_b16"], error["real_features/mae_b16"]
assert status["align_knn/mae_b16"] == "skipped" and status["align_pairs/mae_b16+minilm_l6"] == "skipped"
assert status["align_pairs/vit_b16_clip+minilm_l6"] == "done"   # the rest is kept
assert status["real_features/vit_b16_clip"] == "done"
print("corrupt file:", error["real_features/mae_b16"])
PYEOF
pass "alignment study on exported features; a corrupt file named, other pairs kept"
