#!/usr/bin/env bash
# `compatbench advise merge` against screening pair by pair, on a generated Llama-shaped BF16
# set of M = 8 fine-tunes (tests/checks/user_scripts/make_llm.py, as the e2e tests make
# them): the one pass over all 8 (every pair, then every triple), one `screen` of a single
# pair, and the 28 `screen` runs a user would otherwise make; warm page cache, 1 rank.
#   bash bench/advise.sh [DIR] [LAYERS] [HIDDEN]   (build first; default 4 layers, hidden
#   1024: about 0.1 GB per checkpoint. The set is kept in DIR for reruns.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
DIR=${1:-${TMPDIR:-/tmp}/compatbench-advise}
LAYERS=${2:-4}
HIDDEN=${3:-1024}
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [[ ! -e $DIR/ft7.safetensors ]]; then
  echo "generating base + 8 fine-tunes: $LAYERS layers, hidden $HIDDEN, BF16, in $DIR ..."
  /usr/bin/python3 "$ROOT/tests/checks/user_scripts/make_llm.py" "$DIR" "$LAYERS" "$HIDDEN" 8 \
    0.01 0.02 0.03 0.01 0.05 0.01 0.02 0.04
fi
du -sh "$DIR"
B=$DIR/base.safetensors
M=("$DIR/ft0.safetensors" "$DIR/ft1" "$DIR"/ft[2-7].safetensors)
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['$1'])" "$2"; }
now() { date +%s.%N; }
"$BIN" advise merge --base "$B" --models "${M[@]}" --json "$DIR/warm.json" > /dev/null  # warm the cache
"$BIN" advise merge --base "$B" --models "${M[@]}" --json "$DIR/k2.json" > /dev/null
"$BIN" advise merge --base "$B" --models "${M[@]}" --k 3 --json "$DIR/k3.json" > /dev/null
"$BIN" screen --base "$B" --models "${M[0]}" "${M[1]}" --json > "$DIR/pair.json"
t0=$(now)
for ((a = 0; a < 8; a++)); do for ((b = a + 1; b < 8; b++)); do
  "$BIN" screen --base "$B" --models "${M[a]}" "${M[b]}" --json > /dev/null
done; done
t1=$(now)
/usr/bin/python3 - "$DIR" "$t0" "$t1" <<'PYEOF'
import json, sys
d, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
k2, k3, pair = (json.load(open(f"{d}/{n}.json")) for n in ("k2", "k3", "pair"))
print(f"advise merge, 28 pairs:   {k2['seconds']:.3f} s for {k2['bytes'] / 1e9:.3f} GB read once")
print(f"advise merge, 56 triples: {k3['seconds']:.3f} s")
print(f"screen, one pair:         {pair['seconds']:.3f} s for {pair['bytes'] / 1e9:.3f} GB")
print(f"screen, all 28 pairs:     {t1 - t0:.3f} s wall (28 processes)")
print(f"ratio to one pair: {k2['seconds'] / pair['seconds']:.2f}x (28 pairs), {k3['seconds'] / pair['seconds']:.2f}x "
      f"(56 triples); to 28 screens: {(t1 - t0) / k2['seconds']:.1f}x faster")
PYEOF
