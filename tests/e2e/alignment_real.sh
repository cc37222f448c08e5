# The alignment study on "real" models: a small paired dataset, a fake extraction script run
# as command tasks, the example config and manifest used as shipped, on 2 ranks; then the
# same study with a corrupt feature file: a clear error naming the file, nothing else lost.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/checks/user_scripts/make_data.py" "$WORK"
cp "$SRC/configs/alignment-real.example.yaml" "$SRC/configs/alignment-real.features.yaml" "$WORK/"
ln -s "$SRC/tests/checks/user_scripts/extract_features.py" "$WORK/extract_features.py"
cd "$WORK"
expect_code 0 mpi 2 run alignment-real.example.yaml --out out --log-level warn > run.txt
grep -q "/alignment/analysis/correlations (8 rows)" run.txt || { cat run.txt; fail "no correlation table printed"; }
pycheck alignment_real tables out

# Features present: drop the extraction step and corrupt one model's probe features.
sed -e '/- name: extract_vision/,/^  - name: real_features/{/^  - name: real_features/!d}' \
    -e '/after: \[extract_vision, extract_text\]/d' alignment-real.example.yaml > bad.yaml
grep -q "name: extract_" bad.yaml && fail "extraction groups still in bad.yaml"
# With nothing left to write them, the files are checked when the config is read: `validate`
# and `run` name the broken file before any task runs.
expect_code 0 "$BIN" validate bad.yaml > /dev/null
cp features/mae_b16/probe.safetensors good_probe.safetensors
head -c 100 features/mae_b16/probe.safetensors > cut && mv cut features/mae_b16/probe.safetensors
expect_code 2 "$BIN" validate bad.yaml 2> bad_validate.txt
grep -q "features/mae_b16/probe.safetensors" bad_validate.txt || { cat bad_validate.txt; fail "validate did not name the broken file"; }
expect_code 2 mpi 2 run bad.yaml --out bad --log-level error 2> bad_run.txt
grep -q "features/mae_b16/probe.safetensors" bad_run.txt || { cat bad_run.txt; fail "run did not name the broken file"; }
[[ ! -e bad/results.h5 ]] || fail "a run with a broken input file started"
# A probe larger than the probe split: said at validate time, with both sizes.
sed -e 's/probe: [0-9]*/probe: 5000/' bad.yaml > big_probe.yaml
grep -q "probe: 5000" big_probe.yaml || fail "no probe key to change in the example config"
cp good_probe.safetensors features/mae_b16/probe.safetensors
expect_code 2 "$BIN" validate big_probe.yaml 2> big_probe.txt
grep -q "the probe needs 5000 images; the probe split of 'real_features' has" big_probe.txt \
  || { cat big_probe.txt; fail "a short probe split was not reported at validate time"; }
pass "alignment study on exported features; a broken file and a short probe split named before any task runs"
