# The encoder-roles study on "real" models: the example config as shipped, each subset scored
# by a fake training script as a command task (result JSON, im.json, pre-projector features)
# on 2 ranks; the tables checked against numpy/scipy. Then a subset whose result lacks a
# benchmark: that task fails with a message naming the file, the other 92 are done and the
# analysis still runs.
source "$(dirname "$0")/lib.sh"
sed -e "s#python3 train_subset.py#$PY train_subset.py#" \
  "$SRC/configs/encoders-real.example.yaml" > "$WORK/encoders.yaml"
ln -s "$SRC/tests/checks/user_scripts/train_subset.py" "$WORK/"
cd "$WORK"
expect_code 0 mpi 2 run encoders.yaml --out out --log-level warn > run.txt
grep -q "/encoders/analysis/taxonomy (5 rows)" run.txt || { cat run.txt; fail "no taxonomy table"; }
pycheck encoders_real tables out

# A subset whose result lacks a benchmark fails with the file named; the rest is done.
expect_code 1 env FAIL_MASK=6 "$BIN" run encoders.yaml --out bad --log-level warn > bad.txt 2>&1
grep -q "mmvp" bad.txt || { cat bad.txt; fail "the missing benchmark is not named"; }
grep -q "result.json" bad.txt || { cat bad.txt; fail "the result file is not named"; }
pycheck encoders_real bad_result_named bad
pass "encoder roles with a user's training script: tables checked, a bad result named"
