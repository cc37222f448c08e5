# The smoke zoo on 1 (plain), 2 and 3 ranks: identical results and identical artifacts
# (weights, features, world splits), readable by a numpy-only safetensors reader.
source "$(dirname "$0")/lib.sh"
CONFIG=$SRC/configs/smoke.yaml
expect_code 0 mpi 0 run "$CONFIG" --out "$WORK/n1" --log-level warn > "$WORK/n1.txt"
grep -q "/zoo/models (13 rows)" "$WORK/n1.txt" || { cat "$WORK/n1.txt"; fail "the zoo table was not printed"; }
for n in 2 3; do
  expect_code 0 mpi "$n" run "$CONFIG" --out "$WORK/n$n" --log-level warn > /dev/null
  "$BIN" compare "$WORK/n1/results.h5" "$WORK/n$n/results.h5" || fail "results on $n ranks differ"
  diff -r -q "$WORK/n1/artifacts" "$WORK/n$n/artifacts" || fail "artifacts on $n ranks differ"
done
"$PY" - "$WORK/n2" "$SRC/tests/python" <<'PYEOF'
import json, sys, h5py
sys.path.insert(0, sys.argv[2])
from safetensors_np import read
out = sys.argv[1]
f = h5py.File(out + "/results.h5", "r")
m = {k: f["zoo/models"][k][:] for k in f["zoo/models"]}
names = [n.decode() for n in m["name"]]
assert len(names) == 13 and names[0] == "sup_v_1" and names[-1] == "mae_bb_1+detail", names
assert set(x.decode() for x in m["modality"]) == {"vision", "text", "backbone", "finetune"}
assert all(0 <= a <= 1 for a in m["probe_acc"])
world = json.load(open(out + "/artifacts/world/world.json"))
for name in names:
    side = json.load(open(f"{out}/artifacts/models/{name}.json"))
    w = read(f"{out}/artifacts/models/{name}.safetensors")["tensors"]
    first = w["layers.0.weight"]
    assert first["shape"] == [side["spec"]["width"], side["input_dim"]], (name, first["shape"])
    feats = read(f"{out}/artifacts/features/{name}/probe.safetensors")["tensors"]["features"]
    rows = world["splits"]["probe"] * (5 if side["modality"] == "text" else 1)
    assert feats["shape"] == [rows, side["spec"]["out_dim"]], (name, feats["shape"])
    if side["modality"] == "finetune":
        assert "head.weight" in w and side["task"] in name
split = read(out + "/artifacts/world/train.safetensors")["tensors"]
assert split["images"]["shape"] == [2048, 64] and split["captions"]["shape"] == [10240, 48]
print("zoo artifacts: 13 models, weights and features readable with numpy")
PYEOF
# The alignment study on the smoke zoo: tables present, and ease and CKA of every grid pair
# recomputed with numpy from the probe features the k-NN tasks stored.
"$PY" - "$WORK/n2" "$SRC/tests/python" <<'PYEOF'
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[2])
from safetensors_np import read
out = sys.argv[1]
f = h5py.File(out + "/results.h5", "r")
grid = {k: f["alignment/grid"][k][:] for k in f["alignment/grid"]}
assert len(grid["vision"]) == 6
def probe(name):
    t = read(f"{out}/artifacts/knn/align_knn/{name}.safetensors")["tensors"]["probe"]
    return np.asarray(t["values"]).reshape(t["shape"])
def knn(x, k):
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    s = x @ x.T
    np.fill_diagonal(s, -np.inf)
    return np.argsort(-s, axis=1, kind="stable")[:, :k]
def cka(x, y):
    x = x / np.linalg.norm(x, axis=1, keepdims=True); y = y / np.linalg.norm(y, axis=1, keepdims=True)
    x = x - x.mean(0); y = y - y.mean(0)
    return np.linalg.norm(x.T @ y) ** 2 / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y))
for i in range(6):
    v, t = probe(grid["vision"][i].decode()), probe(grid["text"][i].decode())
    for k in (10, 100):
        a, b = knn(v, k), knn(t, k)
        ease = np.mean([len(set(a[r]) & set(b[r])) / k for r in range(len(a))])
        assert abs(ease - grid[f"ease_k{k}"][i]) < 2e-3, (i, k, ease, grid[f"ease_k{k}"][i])
    assert abs(cka(v, t) - grid["cka"][i]) < 1e-9, (i, cka(v, t), grid["cka"][i])
pairs = f["alignment/pairs"]
assert len(pairs["vision"]) == 4 and set(pairs["region"][:]) <= {b"act_now", b"budget_limited", b"ceiling_limited", b"incompatible"}
assert len(f["alignment/budget_fits/epochs"]) == 6
for t in ("correlations", "regions", "kruskal", "budget_search", "budget_curve", "lofo", "lofo_range",
          "k_sensitivity", "metadata_regressor", "budget"):
    assert t in f["alignment/analysis"], t
print("alignment on the smoke zoo: ease and CKA agree with numpy")
PYEOF
# The merging study: every pair of fine-tunes of a backbone merged; interference recomputed
# with numpy from the stored weights; retention and destructive from the accuracies.
"$PY" - "$WORK/n2" "$SRC/tests/python" <<'PYEOF'
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[2])
from safetensors_np import read
out = sys.argv[1]
f = h5py.File(out + "/results.h5", "r")
p = {k: f["merging/pairs"][k][:] for k in f["merging/pairs"]}
assert len(p["model_a"]) == 6
def weights(name):
    t = read(f"{out}/artifacts/models/{name}.safetensors")["tensors"]
    return {k: np.asarray(v["values"]) for k, v in t.items() if not k.startswith("head.")}
for i in range(6):
    base = weights(p["backbone"][i].decode())
    a, b = weights(p["model_a"][i].decode()), weights(p["model_b"][i].decode())
    ta = np.concatenate([a[k] - base[k] for k in sorted(base)])
    tb = np.concatenate([b[k] - base[k] for k in sorted(base)])
    var = np.var(np.stack([ta, tb]), axis=0)                     # population variance, K = 2
    assert abs(var.mean() - p["interference"][i]) < 1e-6 * var.mean() + 1e-12, (i, var.mean(), p["interference"][i])
    assert abs(np.sqrt(var.mean() / 2) - p["screen_score"][i]) < 1e-6 * p["screen_score"][i]
    stack = np.stack([ta, tb])
    cancel = np.abs(stack).mean(0) ** 2 - stack.mean(0) ** 2
    assert abs(cancel.sum() / var.sum() - p["rho"][i]) < 1e-6, (i, cancel.sum() / var.sum(), p["rho"][i])
retention = 0.5 * (p["acc_a"] / p["ft_acc_a"] + p["acc_b"] / p["ft_acc_b"])
assert np.allclose(retention, p["retention"])
assert list(p["destructive"]) == list((p["acc_a"] + p["acc_b"] < p["base_acc_a"] + p["base_acc_b"]).astype(int))
par = f["merging/analysis/paradigms"]
assert sorted(x.decode() for x in par["paradigm"][:]) == ["clip", "masked", "supervised", "untrained"]
assert "screen_score" in [x.decode() for x in f["merging/analysis/correlations/predictor"][:]]
scr = f["merging/analysis/screening"]
assert [x.decode() for x in scr["score"][:]] == ["screen_score", "sign_conflict", "rho"]
assert all(0 <= a <= 1 for a in scr["auroc"][:]) and list(scr["destructive"][:]) == [p["destructive"].sum()] * 3
pre = f["merging/analysis/screening_preregistered"]
assert all(a + b == 6 for a, b in zip(pre["fit_n"][:], pre["test_n"][:]))
print("merging on the smoke zoo: interference agrees with numpy")
PYEOF
pass "smoke zoo: 1/2/3 ranks identical, artifacts identical and readable; alignment and merging checked"
