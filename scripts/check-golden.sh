#!/usr/bin/env bash
# The golden check: the smoke config's results.h5, hashed dataset by dataset (run facts
# left out), and `compatbench merge` of a small generated BF16 set (base + 3 fine-tunes,
# one sharded) with every operator, hashed file by file, against
# tests/golden/smoke.x86-64.sha256. It runs the baseline x86-64 build
# (the isa-x86-64 preset, built here if missing): without -march=native the bytes do not
# depend on the CPU's vector units, so a change that moves any number — a refactor that
# reorders a sum, a new default — shows here on any x86-64 machine. (The run's own
# byte-identity across 1, 2 and 3 ranks and across resumes is checked by the ctest suite on
# the native build.) The bytes do not depend on the host either (docs/results.md, "What is
# promised across hosts"): check-isa.sh runs tests/portable_math.py on this binary. glibc's
# libm picks its FMA variants at run time: the golden file was made on a CPU with FMA, as
# every x86-64-v3 machine has.
#   bash scripts/check-golden.sh            compare (exit 1 and the differing datasets)
#   bash scripts/check-golden.sh --update   rewrite the golden file after an intended change
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
GOLDEN=tests/golden/smoke.x86-64.sha256
BIN_X86=build/isa-x86-64/runner/compatbench
step "golden: build the baseline x86-64 binary"
[[ -d build/isa-x86-64 ]] || cmake --preset isa-x86-64 > /dev/null
cmake --build --preset isa-x86-64 -j "$(nproc)" --target compatbench > build/isa-x86-64.golden.log 2>&1 \
  || { tail -n 30 build/isa-x86-64.golden.log >&2; exit 1; }
step "golden: smoke config on 2 ranks"
mpi_environment
OUT=build/golden-smoke
rm -rf "$OUT"
mpirun -n 2 "$BIN_X86" run configs/smoke.yaml --out "$OUT" --log-level warn > "$OUT.log" 2>&1 \
  || { tail -n 30 "$OUT.log" >&2; exit 1; }
/usr/bin/python3 tests/golden/hashes.py "$OUT/results.h5" > "$OUT.sha256"
step "golden: compatbench merge with every operator"
SET=build/golden-merges
rm -rf "$SET"
/usr/bin/python3 tests/checks/user_scripts/make_llm.py "$SET" 2 64 3 0.01 0.02 0.03 > /dev/null
merge_golden() {  # NAME METHOD PARAMETERS MODEL...
  local name=$1 method=$2 params=$3 m; shift 3
  { echo "merge_method: $method"; echo "base_model: base.safetensors"; echo "models:"
    for m in "$@"; do echo "  - model: $m"; done
    echo "parameters: $params"; } > "$SET/$name.yaml"
  "$BIN_X86" merge "$SET/$name.yaml" --out "$SET/out_$name" > /dev/null
  (cd "$SET" && sha256sum "out_$name"/* | awk '{print $1 "  merge:" $2}') >> "$OUT.sha256"
}
ALL=(ft0.safetensors ft1 ft2.safetensors)
merge_golden ta task_arithmetic "{lambda: 0.7, normalize: true}" "${ALL[@]}"
merge_golden ties ties "{density: 0.3}" "${ALL[@]}"
merge_golden dare dare "{drop: 0.5, seed: 3}" "${ALL[@]}"
merge_golden dare_ties dare "{drop: 0.3, seed: 5, dare_then: ties}" "${ALL[@]}"
merge_golden slerp slerp "{t: 0.4}" ft1
merge_golden stock model_stock "{}" "${ALL[@]}"
merge_golden prism prism "{kappa: 1.0}" "${ALL[@]}"
merge_golden hard prism_hard "{kappa: 1.0}" "${ALL[@]}"
merge_golden norm norm_matched "{kappa: 1.0}" "${ALL[@]}"
merge_golden floor prism "{kappa: 3.0, keep_floor: 0.2}" "${ALL[@]}"
if [[ ${1:-} == --update ]]; then
  cp "$OUT.sha256" "$GOLDEN"
  echo "golden: wrote $GOLDEN ($(wc -l < "$GOLDEN") hashes: datasets and merged files)"
  exit 0
fi
step "golden: compare with $GOLDEN"
if ! diff -q "$GOLDEN" "$OUT.sha256" > /dev/null; then
  echo "golden: these differ from $GOLDEN:" >&2
  diff <(awk '{print $2, $1}' "$GOLDEN") <(awk '{print $2, $1}' "$OUT.sha256") \
    | awk '/^[<>]/ {print "  " $2}' | sort -u >&2
  echo "golden: if the change is intended, say why in the commit and run" \
       "'bash scripts/check-golden.sh --update'" >&2
  exit 1
fi
echo "golden: $(wc -l < "$GOLDEN") hashes identical (datasets and merged files)"
