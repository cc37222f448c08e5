# `compatbench screen` on a Llama-shaped BF16 checkpoint set (one fine-tune sharded): the
# statistics equal a numpy computation from the same files, 1 and 2 ranks agree exactly,
# --scope selects tensors, and bad input (missing tensor, shape, dtype, corrupt file) is a
# clear error naming the file and tensor with exit code 2.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/checks/user_scripts/make_llm.py" "$WORK/llm" 2 64 2 0.01 0.03
M=("$WORK/llm/ft0.safetensors" "$WORK/llm/ft1")
expect_code 0 mpi 0 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --coef 0.5 --json > "$WORK/one.json"
expect_code 0 mpi 2 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --coef 0.5 --json > "$WORK/two.json"
expect_code 0 mpi 0 screen --base "$WORK/llm/base.safetensors" --models "${M[@]}" --json \
  --scope '*gate_proj*' '*up_proj*' '*down_proj*' --threshold 1 > "$WORK/mlp.json"
pycheck screen scope_and_threshold "$WORK"
# Bad input.
pycheck screen bad_input_named "$WORK/llm"
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
