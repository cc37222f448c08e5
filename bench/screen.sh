#!/usr/bin/env bash
# `compatbench screen` throughput on a generated Llama-shaped BF16 checkpoint set (base + 2
# fine-tunes), beside the machine's memory read bandwidth, the rate at which `dd` reads the
# same files from the page cache, and a numpy implementation of the same statistic on the
# same files, warm (page cache) and cold (caches dropped: needs root); then the
# extrapolated time for a 7B model with K = 2 in BF16 (base + 2 x 13.5 GB).
#   bash bench/screen.sh [DIR] [LAYERS] [HIDDEN]   (build first; default 8 layers, hidden
#   2048: about 0.8 GB per checkpoint. The set is kept in DIR for reruns.)
source "$(dirname "$0")/llm_set.sh"
MODELS=("$DIR/ft0.safetensors" "$DIR/ft1")
bw=$("$BIN" bench memory | sed -E 's/.*1 core: ([0-9.]+) GB\/s.*/\1/')
pc=$(dd_rate)
echo "memory read bandwidth, 1 core: $bw GB/s; dd from the page cache: $pc GB/s"
screen() { "$@" screen --base "$DIR/base.safetensors" --models "${MODELS[@]}" --json; }
field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
screen "$BIN" > /dev/null   # warm the page cache
one=$(screen "$BIN")
two=$(screen mpirun -n 2 "$BIN")
echo "screen, warm, 1 rank:  $(echo "$one" | field seconds) s for $(echo "$one" | field bytes) bytes"
echo "screen, warm, 2 ranks: $(echo "$two" | field seconds) s"
np=$(/usr/bin/python3 "$ROOT/bench/screen_numpy.py" "$DIR/base.safetensors" "${MODELS[@]}")
echo "numpy,  warm:          $(echo "$np" | field seconds) s (interference $(echo "$np" | field interference), ours $(echo "$one" | field interference))"
if [[ -w /proc/sys/vm/drop_caches ]]; then
  sync; echo 3 > /proc/sys/vm/drop_caches
  cold=$(screen mpirun -n 2 "$BIN")
  echo "screen, cold, 2 ranks: $(echo "$cold" | field seconds) s"
else
  echo "screen, cold: not measured (dropping the page cache needs root)"
fi
# The merge of the same set (PRISM, written in the input dtype): time and peak memory.
printf 'merge_method: prism\nbase_model: %s\nmodels:\n  - model: %s\n  - model: %s\n' \
  "$DIR/base.safetensors" "${MODELS[0]}" "${MODELS[1]}" > "$DIR/prism.yaml"
rm -rf "$DIR/merged"
mpirun -n 2 "$BIN" merge "$DIR/prism.yaml" --out "$DIR/merged" | tail -2
rm -rf "$DIR/merged"
/usr/bin/python3 "$ROOT/bench/screen_summary.py" "$one" "$two" "$np" "$bw" "$pc"
