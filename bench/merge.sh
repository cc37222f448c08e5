#!/usr/bin/env bash
# `compatbench merge` throughput, every operator, on bench/screen.sh's generated Llama-shaped
# BF16 set (base + 2 fine-tunes), warm, beside this machine's single-core memory read
# bandwidth and the rate at which `dd` reads the same files out of the page cache (the
# ceiling for any reader on one core here: see llm_set.sh), both measured in the same run:
# seconds, GB/s of input, the passes over the input (task arithmetic and DARE 1; SLERP and
# Model Stock 2, a first pass for their norms or dots; PRISM and PRISM-hard 3, the merge's ρ
# over the in-scope tensors, then σ (keeping |τ̄| for the keep-rate floor); norm-matched 4,
# its update norm; TIES 1 + one selection pass per model), the share of the bandwidth and
# of `dd`'s rate that all passes together read at, and per rank the peak RSS and the peak
# anonymous memory (RssAnon), each the faster of two runs. Then task arithmetic and PRISM
# on 2 ranks with their speed-up over 1 rank, `screen` on 1 rank, and cold (page cache
# dropped before each; root only): `dd`, `screen` and task arithmetic, each as a share of
# `dd`'s cold rate.
# mergekit's methods (task arithmetic, TIES, SLERP, Model Stock) run in `--arithmetic exact`,
# the streamed kernels these figures have always measured; ARITHMETIC=dtype times mergekit's
# arithmetic in the set's BF16 instead (docs/mergekit.md, "Arithmetic").
#   bash bench/merge.sh [DIR] [LAYERS] [HIDDEN]   (build first; the set is kept in DIR)
source "$(dirname "$0")/llm_set.sh"
OUT=$(mktemp -d)
MODE=(--arithmetic "${ARITHMETIC:-exact}")
mode() {  # NAME: the mode for mergekit's methods; compatbench's own compute exactly only
  case $1 in ta|ties|slerp|stock) echo "${MODE[@]}";; esac
}
trap 'rm -rf "$OUT"' EXIT
bw=$("$BIN" bench memory | sed -E 's/.*1 core: ([0-9.]+) GB\/s.*/\1/')
dd "if=${SET_FILES[0]}" of=/dev/null bs=256K 2> /dev/null  # warm the page cache
pc=$(dd_rate)
echo "memory read bandwidth, 1 core: $bw GB/s; dd from the page cache: $pc GB/s"
write() {  # NAME METHOD PARAMETERS [MODELS]  (default: both fine-tunes)
  local models=${4:-"$DIR/ft0.safetensors $DIR/ft1"} m
  { echo "merge_method: $2"; echo "base_model: $DIR/base.safetensors"; echo "models:"
    for m in $models; do echo "  - model: $m"; done
    echo "parameters: $3"; } > "$OUT/$1.yaml"
}
write ta task_arithmetic "{normalize: true}"
write ties ties "{density: 0.2}"
write dare dare "{drop: 0.5, seed: 1}"
write slerp slerp "{t: 0.5}" "$DIR/ft1"  # from the base to one model
write stock model_stock "{}"
write prism prism "{kappa: 1.0}"
write hard prism_hard "{kappa: 1.0}"
write norm norm_matched "{kappa: 1.0}"
passes() { case $1 in ta|dare) echo 1;; slerp|stock) echo 2;; prism|hard|ties) echo 3;; norm) echo 4;; esac; }
printf "%-6s %5s %8s %9s %8s %9s %9s %10s %10s\n" operator ranks seconds "GB/s" passes "of bw" "of dd" \
  "peak RSS" "RssAnon"
declare -A SECONDS_OF
run() {  # NAME RANKS
  local line="" try l
  for try in 1 2; do  # the faster of two runs: this machine's timings vary run to run
    # shellcheck disable=SC2046  # mode's words split on purpose
    if (($2 == 1)); then l=$("$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1" $(mode "$1") | tail -1)
    else l=$(mpirun -n "$2" "$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1_$2" $(mode "$1") | tail -1); fi
    rm -rf "$OUT"/out_*
    if [[ -z $line ]] || /usr/bin/python3 -c "import re, sys; t = [float(re.search(r' in ([0-9.]+) s', a).group(1)) for a in sys.argv[1:]]; sys.exit(t[0] >= t[1])" "$l" "$line"; then
      line=$l
    fi
  done
  # "read X GB in S s on R rank(s): G GB/s; per rank at most: peak RSS A MB (...), anonymous memory B MB"
  SECONDS_OF[$1.$2]=$(echo "$line" | sed -E 's/.* in ([0-9.]+) s.*/\1/')
  /usr/bin/python3 "$ROOT/bench/merge_row.py" "$1" "$2" "$(passes "$1")" "$bw" "$pc" "$line"
}
for m in ta ties dare slerp stock prism hard norm; do run $m 1; done
run ta 2
run prism 2
ratio() { /usr/bin/python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$@"; }
echo "2 ranks over 1: task arithmetic $(ratio "${SECONDS_OF[ta.1]}" "${SECONDS_OF[ta.2]}")x," \
  "PRISM $(ratio "${SECONDS_OF[prism.1]}" "${SECONDS_OF[prism.2]}")x"
screen_line() {  # DD_RATE: the `dd` rate (warm or cold) the screen's is set against
  "$BIN" screen --base "$DIR/base.safetensors" --models "$DIR/ft0.safetensors" "$DIR/ft1" --json |
    /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); g=d['bytes']/1e9/d['seconds']; print(f\"{d['seconds']:.3f} s, {g:.2f} GB/s: {100*g/$bw:.0f}% of bw, {100*g/$1:.0f}% of dd\")"
}
echo "screen, 1 rank: $(screen_line "$pc")"
if drop_cache; then
  cold=$(dd_rate)
  drop_cache
  s=$(screen_line "$cold")
  drop_cache
  t=$("$BIN" merge "$OUT/ta.yaml" --out "$OUT/out_cold" "${MODE[@]}" | tail -1 | sed -E 's/.* in ([0-9.]+) s.*/\1/')
  rm -rf "$OUT/out_cold"
  gb=$(du -cb "${SET_FILES[@]}" | tail -1 | cut -f1)
  echo "cold: dd $cold GB/s; screen $s; task arithmetic $t s:" \
    "$(/usr/bin/python3 -c "import sys; g=$gb/1e9/$t; print(f'{g:.2f} GB/s, {100*g/$cold:.0f}% of dd')")"
else
  echo "cold: not measured (dropping the page cache needs root)"
fi
