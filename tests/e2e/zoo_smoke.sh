# The smoke zoo on 1 (plain), 2 and 3 ranks: identical results and identical artifacts
# (weights, features, world splits), readable by a numpy-only safetensors reader.
source "$(dirname "$0")/lib.sh"
CONFIG=$SRC/configs/smoke.yaml
expect_code 0 mpi 0 run "$CONFIG" --out "$WORK/n1" --log-level warn > "$WORK/n1.txt"
grep -q "/zoo/models (11 rows)" "$WORK/n1.txt" || { cat "$WORK/n1.txt"; fail "the zoo table was not printed"; }
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
assert len(names) == 11 and names[0] == "sup_v_1" and names[-1] == "mae_bb_1+style_a", names
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
print("zoo artifacts: 11 models, weights and features readable with numpy")
PYEOF
pass "smoke zoo: 1/2/3 ranks identical, artifacts identical and readable"
