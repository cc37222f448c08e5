#!/usr/bin/env bash
# `compatbench merge` throughput, every operator, on bench/screen.sh's generated Llama-shaped
# BF16 set (base + 2 fine-tunes), warm, beside this machine's single-core memory read
# bandwidth measured in the same run: seconds, GB/s of input, the passes over the input
# (task arithmetic and DARE 1; SLERP and Model Stock 2, a first pass for their norms or
# dots; PRISM and PRISM-hard 3, σ and then the keep-rate floor's count on matrices;
# norm-matched 4, its update norm; TIES 1 + one selection pass per model), the share of the
# bandwidth that all passes together read at, and per rank the peak RSS (with mapped file
# pages) and the peak anonymous memory (RssAnon). Then task arithmetic and PRISM on 2 ranks,
# and `screen` on 1 rank for comparison.
#   bash bench/merge.sh [DIR] [LAYERS] [HIDDEN]   (build first; the set is kept in DIR)
source "$(dirname "$0")/llm_set.sh"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
bw=$("$BIN" bench memory | sed -E 's/.*1 core: ([0-9.]+) GB\/s.*/\1/')
echo "memory read bandwidth, 1 core: $bw GB/s"
write() {  # NAME METHOD PARAMETERS
  { echo "merge_method: $2"; echo "base_model: $DIR/base.safetensors"; echo "models:"
    echo "  - model: $DIR/ft0.safetensors"; echo "  - model: $DIR/ft1"
    echo "parameters: $3"; } > "$OUT/$1.yaml"
}
write ta task_arithmetic "{coef: 1.0}"
write ties ties "{density: 0.2}"
write dare dare "{drop: 0.5, seed: 1}"
write slerp slerp "{t: 0.5}"
write stock model_stock "{}"
write prism prism "{kappa: 1.0}"
write hard prism_hard "{kappa: 1.0}"
write norm norm_matched "{kappa: 1.0}"
passes() { case $1 in ta|dare) echo 1;; slerp|stock) echo 2;; prism|hard|ties) echo 3;; norm) echo 4;; esac; }
printf "%-6s %5s %8s %9s %8s %9s %10s %10s\n" operator ranks seconds "GB/s" passes "of bw" "peak RSS" "RssAnon"
run() {  # NAME RANKS
  local line
  if (($2 == 1)); then line=$("$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1" | tail -1)
  else line=$(mpirun -n "$2" "$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1_$2" | tail -1); fi
  # "read X GB in S s on R rank(s): G GB/s; per rank at most: peak RSS A MB (...), anonymous memory B MB"
  /usr/bin/python3 - "$1" "$2" "$(passes "$1")" "$bw" "$line" <<'PY'
import re, sys
name, ranks, passes, bw, line = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
gb, s = map(float, re.search(r"read ([0-9.]+) GB in ([0-9.]+) s", line).groups())
rss, anon = map(float, re.search(r"peak RSS ([0-9.]+) MB.*anonymous memory ([0-9.]+) MB", line).groups())
rate = gb * passes / s / ranks
print(f"{name:6s} {ranks:5d} {s:8.2f} {gb / s:9.2f} {passes:8d} {100 * rate / bw:8.0f}% {rss:8.0f}MB {anon:8.0f}MB")
PY
  rm -rf "$OUT"/out_*
}
for m in ta ties dare slerp stock prism hard norm; do run $m 1; done
run ta 2
run prism 2
one=$("$BIN" screen --base "$DIR/base.safetensors" --models "$DIR/ft0.safetensors" "$DIR/ft1" --json)
echo "screen, 1 rank: $(echo "$one" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['seconds']:.3f} s, {d['bytes'] / 1e9 / d['seconds']:.2f} GB/s\")")"
