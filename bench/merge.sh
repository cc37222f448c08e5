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
# Then mergekit's arithmetic: task arithmetic, TIES, DARE-TIES, SLERP, Model Stock and DELLA
# (mergekit's YAML) on 1 and 2 ranks in both modes, `--arithmetic exact` and `dtype` (the
# default: as mergekit's torch code computes in the set's BF16, docs/mergekit.md,
# "Arithmetic"), each mode run just before the other, with dtype over exact, and beside them
# mergekit's own kernels in torch on as many threads as ranks (bench/merge_torch.py:
# arithmetic only, a lower bound on mergekit's time; the faster of two runs where one takes
# under 30 s) and torch over dtype. The first table runs every operator in `exact`.
#   bash bench/merge.sh [DIR] [LAYERS] [HIDDEN]   (build first; the set is kept in DIR)
source "$(dirname "$0")/llm_set.sh"
OUT=$(mktemp -d)
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
write dare_ties dare_ties "{density: 0.5}"
write della della "{density: 0.5}"
write slerp slerp "{t: 0.5}" "$DIR/ft1"  # from the base to one model
write stock model_stock "{}"
write prism prism "{kappa: 1.0}"
write hard prism_hard "{kappa: 1.0}"
write norm norm_matched "{kappa: 1.0}"
# Passes over the input: a selection pass per model (TIES, DARE-TIES, DELLA), a first pass
# for norms or dots (SLERP, Model Stock), PRISM's ρ and σ, norm-matched's update norm.
passes() { case $1 in ta|dare) echo 1;; slerp|stock) echo 2;; prism|hard|ties|dare_ties|della) echo 3;; norm) echo 4;; esac; }
HEADER=$(printf "%-9s %5s %8s %9s %8s %9s %9s %10s %10s" operator ranks seconds "GB/s" passes "of bw" "of dd" \
  "peak RSS" "RssAnon")
declare -A SECONDS_OF
run() {  # NAME RANKS [MODE]: the row; SECONDS_OF[NAME.RANKS.MODE]
  local line="" try l mode=${3:-exact}
  for try in 1 2; do  # the faster of two runs: this machine's timings vary run to run
    if (($2 == 1)); then l=$("$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1" --arithmetic "$mode" | tail -1)
    else l=$(mpirun -n "$2" "$BIN" merge "$OUT/$1.yaml" --out "$OUT/out_$1_$2" --arithmetic "$mode" | tail -1); fi
    rm -rf "$OUT"/out_*
    if [[ -z $line ]] || /usr/bin/python3 -c "import re, sys; t = [float(re.search(r' in ([0-9.]+) s', a).group(1)) for a in sys.argv[1:]]; sys.exit(t[0] >= t[1])" "$l" "$line"; then
      line=$l
    fi
  done
  # "read X GB in S s on R rank(s): G GB/s; per rank at most: peak RSS A MB (...), anonymous memory B MB"
  SECONDS_OF[$1.$2.$mode]=$(echo "$line" | sed -E 's/.* in ([0-9.]+) s.*/\1/')
  /usr/bin/python3 "$ROOT/bench/merge_row.py" "$1" "$2" "$(passes "$1")" "$bw" "$pc" "$line"
}
echo "every operator, --arithmetic exact:"
echo "$HEADER"
for m in ta ties dare dare_ties della slerp stock prism hard norm; do run $m 1; done
run ta 2
run prism 2
ratio() { /usr/bin/python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$@"; }
echo "2 ranks over 1: task arithmetic $(ratio "${SECONDS_OF[ta.1.exact]}" "${SECONDS_OF[ta.2.exact]}")x," \
  "PRISM $(ratio "${SECONDS_OF[prism.1.exact]}" "${SECONDS_OF[prism.2.exact]}")x"
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
  t=$("$BIN" merge "$OUT/ta.yaml" --out "$OUT/out_cold" --arithmetic exact | tail -1 | sed -E 's/.* in ([0-9.]+) s.*/\1/')
  rm -rf "$OUT/out_cold"
  gb=$(du -cb "${SET_FILES[@]}" | tail -1 | cut -f1)
  echo "cold: dd $cold GB/s; screen $s; task arithmetic $t s:" \
    "$(/usr/bin/python3 -c "import sys; g=$gb/1e9/$t; print(f'{g:.2f} GB/s, {100*g/$cold:.0f}% of dd')")"
else
  echo "cold: not measured (dropping the page cache needs root)"
fi
MERGEKIT=(ta ties dare_ties slerp stock della)
echo
echo "mergekit's methods, --arithmetic dtype (the default; BF16 here):"
echo "$HEADER"
for ranks in 1 2; do for m in "${MERGEKIT[@]}"; do
  run "$m" "$ranks" exact > /dev/null  # again, beside the dtype run: their ratio in one moment
  run "$m" "$ranks" dtype
done; done
echo
echo "dtype against exact, and against mergekit's kernels in torch (arithmetic only) on as many threads:"
printf "%-9s %5s %9s %9s %8s %9s %9s\n" method ranks exact dtype "/exact" torch "torch/"
for ranks in 1 2; do
  /usr/bin/python3 "$ROOT/bench/merge_torch.py" "$DIR" "$ranks" "${MERGEKIT[@]}" > "$OUT/torch.$ranks"
  # torch's times vary most where they are short (fresh pages for its results): the faster of
  # two runs for the methods under 30 s, as compatbench's own are the faster of two
  # shellcheck disable=SC2046
  /usr/bin/python3 "$ROOT/bench/merge_torch.py" "$DIR" "$ranks" $(awk '$2 < 30 {print $1}' "$OUT/torch.$ranks") \
    >> "$OUT/torch.$ranks"
  for m in "${MERGEKIT[@]}"; do
    torch=$(awk -v m="$m" '$1 == m && (t == "" || $2 < t) {t = $2} END {print t}' "$OUT/torch.$ranks")
    /usr/bin/python3 -c "import sys; e, d, t = map(float, sys.argv[3:]); print(f'{sys.argv[1]:9s} {int(sys.argv[2]):5d} {e:8.2f}s {d:8.2f}s {d / e:7.2f}x {t:8.2f}s {t / d:7.2f}x')" \
      "$m" "$ranks" "${SECONDS_OF[$m.$ranks.exact]}" "${SECONDS_OF[$m.$ranks.dtype]}" "$torch"
  done
done
