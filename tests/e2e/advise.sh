# `compatbench advise merge` on a Llama-shaped BF16 set of 8 fine-tunes (one sharded): every
# pair and every triple's statistics equal a numpy computation of methods.md §3.1 from the
# same files (sign conflicts exactly), a pair's equal `compatbench screen`'s, 2 ranks agree
# with 1, the CSV and the report's page follow the JSON; bad input (one fine-tune, another
# base's config, a dtype the reader refuses, a bad --k) is one clear line with exit code 2;
# a model far from the base (another base's weights) is named in a warning.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/checks/user_scripts/make_llm.py" "$WORK/llm" 2 64 8 0.01 0.02 0.03 0.01 0.05 0.01 0.02 0.04
B=$WORK/llm/base.safetensors
M=("$WORK/llm/ft0.safetensors" "$WORK/llm/ft1" "$WORK"/llm/ft[2-7].safetensors)
expect_code 0 mpi 0 advise merge --base "$B" --models "${M[@]}" --json "$WORK/k2.json" --csv "$WORK/k2.csv" \
  --threshold 5e-3 > "$WORK/k2.txt"
grep -q "28 merges of K = 2 from 8 fine-tunes" "$WORK/k2.txt" || { cat "$WORK/k2.txt"; fail "no pair table"; }
expect_code 0 mpi 2 advise merge --base "$B" --models "${M[@]}" --k 3 --coef 0.5 --json "$WORK/k3.json" \
  --scope '*mlp*' > /dev/null
expect_code 0 mpi 0 advise merge --base "$B" --models "${M[@]}" --k 3 --coef 0.5 --json "$WORK/k3_n1.json" \
  --scope '*mlp*' > /dev/null
expect_code 0 mpi 0 screen --base "$B" --models "$WORK/llm/ft1" "$WORK/llm/ft4.safetensors" --json > "$WORK/screen.json"
pycheck advise merges_as_numpy "$WORK"
# The report draws the advice.
expect_code 0 "$BIN" report "$WORK/k2.json" > /dev/null
grep -q "Ranked merges" "$WORK/k2_advice/report/index.html" || fail "no advice page"
# Bad input.
pycheck advise bad_inputs "$WORK/llm"
check_error() {  # check_error WANT ARGS...
  local want=$1; shift
  set +e; "$BIN" advise merge "$@" > "$WORK/err.txt" 2>&1; local got=$?; set -e
  [[ $got == 2 ]] || { cat "$WORK/err.txt"; fail "exit $got, expected 2 for: $*"; }
  grep -qF -- "$want" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "no '$want' for: $*"; }
  [[ $(wc -l < "$WORK/err.txt") == 1 ]] || { cat "$WORK/err.txt"; fail "more than one line for: $*"; }
}
check_error "at least 2 fine-tunes; got 1" --base "$B" --models "${M[0]}"
check_error "--k 9: between 2 and the 8 fine-tunes" --base "$B" --models "${M[@]}" --k 9
check_error "f8.safetensors" --base "$B" --models "${M[0]}" "$WORK/llm/f8.safetensors"
check_error "other/config.json: hidden_size 96, but the base's" --base "$WORK/llm/hf_base" \
  --models "$WORK/llm/hf_ft" "$WORK/llm/other"
# A model of the same shape trained apart from the base is named in a warning (its relative norm
# near √2), and the advice still follows.
expect_code 0 mpi 0 advise merge --base "$B" --models "${M[0]}" "$WORK/llm/far.safetensors" \
  --json "$WORK/far.json" > /dev/null 2> "$WORK/far.txt"
grep -q "warning: $WORK/llm/far.safetensors differs from the base $B by 1.4" "$WORK/far.txt" \
  || { cat "$WORK/far.txt"; fail "no warning for another base's model"; }
[[ $(wc -l < "$WORK/far.txt") == 1 ]] || { cat "$WORK/far.txt"; fail "warnings for more than the far model"; }
# A full disk (where a tmpfs can be mounted): the output is refused by name, exit 2, and no
# half-written file is left.
mkdir -p "$WORK/disk"
if mount -t tmpfs -o size=8k tmpfs "$WORK/disk" 2> /dev/null; then
  dd if=/dev/zero of="$WORK/disk/fill" bs=1k count=8 2> /dev/null || true
  set +e; mpi 2 advise merge --base "$B" --models "${M[@]}" --csv "$WORK/disk/a.csv" > /dev/null 2> "$WORK/full.txt"
  code=$?; set -e
  left=$(ls "$WORK/disk"); umount "$WORK/disk"
  [[ $code != 0 ]] && grep -q "$WORK/disk/a.csv: cannot write" "$WORK/full.txt" && [[ $left == fill ]] \
    || { cat "$WORK/full.txt"; fail "a full disk: exit $code, files left: $left"; }
fi
pass "advise merge: every pair and triple as numpy and screen, 1 and 2 ranks agree, report page; bad input named"
