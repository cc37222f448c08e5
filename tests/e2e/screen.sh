# `compatbench screen` on a Llama-shaped BF16 checkpoint set (one fine-tune sharded): the
# statistics equal a numpy computation from the same files, 1 and 2 ranks agree exactly,
# --scope selects tensors, and bad input (missing tensor, shape, dtype, corrupt file) is a
# clear error naming the file and tensor with exit code 2.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/e2e/real/make_llm.py" "$WORK/llm" 2 64 2 0.01 0.03
M=("$WORK/llm/ft0.safetensors" "$WORK/llm/ft1")
expect_code 0 mpi 0 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --coef 0.5 --json > "$WORK/one.json"
expect_code 0 mpi 2 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --coef 0.5 --json > "$WORK/two.json"
expect_code 0 mpi 0 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --json \
  --scope '*gate_proj*' '*up_proj*' '*down_proj*' --threshold 1 > "$WORK/mlp.json"
"$PY" - "$WORK" "$SRC/python" <<'PYEOF'
import json, os, sys, numpy as np
sys.path.insert(0, sys.argv[2])
from compatnets.safetensors import load as load_file
w = sys.argv[1]
one, two, mlp = (json.load(open(f"{w}/{n}.json")) for n in ("one", "two", "mlp"))
for key in ("interference", "rho", "score"):
    assert one[key] == two[key], (key, one[key], two[key])   # same bytes on 1 and 2 ranks
assert one["k"] == 2 and one["coef"] == 0.5 and two["ranks"] == 2
def load(path):
    return {n: t.astype(np.float64).ravel() for n, t in load_file(path).items()}
base, a, b = load(f"{w}/llm/base.safetensors"), load(f"{w}/llm/ft0.safetensors"), load(f"{w}/llm/ft1")
tot_i = tot_c = count = 0.0
per = {}
for n in base:
    t = np.stack([a[n] - base[n], b[n] - base[n]])
    i = t.var(axis=0)
    c = np.abs(t).mean(0) ** 2 - t.mean(0) ** 2
    per[n] = (i.mean(), c.sum() / i.sum())
    tot_i += i.sum(); tot_c += c.sum(); count += i.size
mean_i = tot_i / count
assert abs(one["interference"] - mean_i) < 1e-5 * mean_i, (one["interference"], mean_i)
assert abs(one["rho"] - tot_c / tot_i) < 1e-4, (one["rho"], tot_c / tot_i)
assert abs(one["score"] - 0.5 * np.sqrt(mean_i / 2)) < 1e-5 * one["score"]
for t in one["tensors"]:
    assert abs(t["interference"] - per[t["name"]][0]) < 1e-5 * per[t["name"]][0], t
names = [t["name"] for t in mlp["tensors"]]
assert len(names) == 6 and all("mlp" in n for n in names) and mlp["verdict"] == "harmless", names
assert one["verdict"] == ("destructive" if one["score"] > 1.9e-3 else "harmless")
print(f"screen: I = {mean_i:.4g}, rho = {tot_c / tot_i:.4f} as numpy; 1 and 2 ranks equal")
PYEOF
# Bad input.
"$PY" - "$WORK/llm" "$SRC/python" <<'PYEOF'
import sys, numpy as np
sys.path.insert(0, sys.argv[2])
from compatnets.safetensors import load, save
d = sys.argv[1]
t = load(d + "/ft0.safetensors")
missing = {n: v for n, v in t.items() if n != "model.layers.1.mlp.up_proj.weight"}
save(d + "/missing.safetensors", missing, dtypes="BF16")
shape = dict(t)
shape["model.norm.weight"] = np.zeros(65, dtype=np.float32)
save(d + "/shape.safetensors", shape, dtypes="BF16")
save(d + "/f32.safetensors", t)
open(d + "/cut.safetensors", "wb").write(open(d + "/ft0.safetensors", "rb").read()[:5000])
PYEOF
check_error() {  # check_error MODEL WANT...
  local model=$1; shift
  set +e; "$BIN" screen --base "$WORK/llm/base.safetensors" --models "$WORK/llm/ft0.safetensors" "$WORK/llm/$model" > "$WORK/err.txt" 2>&1; local got=$?; set -e
  [[ $got == 2 ]] || { cat "$WORK/err.txt"; fail "$model: exit $got, expected 2"; }
  for want in "$@"; do grep -qF "$want" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$model: no '$want'"; }; done
}
check_error missing.safetensors "missing.safetensors: no tensor 'model.layers.1.mlp.up_proj.weight'"
check_error shape.safetensors "shape.safetensors: tensor 'model.norm.weight' differs in shape"
# Mixed float dtypes are read through float32: ft0's values stored as F32 screen as ft0.
for m in f32.safetensors ft0.safetensors; do
  "$BIN" screen --base "$WORK/llm/base.safetensors" --models "$WORK/llm/ft1" "$WORK/llm/$m" --json \
    | "$PY" -c "import json, sys; j = json.load(sys.stdin); print(j['interference'], j['rho'])"
done > "$WORK/mixed.txt"
[[ $(sort -u "$WORK/mixed.txt" | wc -l) == 1 ]] || { cat "$WORK/mixed.txt"; fail "F32 copy screens differently"; }
check_error cut.safetensors "cut.safetensors"
check_error nothing.safetensors "nothing.safetensors"
pass "screen: numpy-equal statistics, rank-independent, scoped; bad files named"
