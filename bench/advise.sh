#!/usr/bin/env bash
# `compatbench advise merge` against screening pair by pair, on a generated Llama-shaped BF16
# set of M = 8 fine-tunes (tests/checks/user_scripts/make_llm.py, as the e2e tests make
# them): the one pass over all 8 (every pair, then every triple), one `screen` of a single
# pair, and the 28 `screen` runs a user would otherwise make; warm page cache, 1 and 2 ranks.
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
# Best of 3 of each command as a user runs it (wall: process start, MPI start-up, the pass
# and the output) and of the seconds it reports for its pass alone, at 1 and 2 ranks.
/usr/bin/python3 - "$BIN" "$B" "$DIR" "${M[@]}" <<'PYEOF'
import json, subprocess, sys, time
binary, base, d, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def run(ranks, args, json_path=None):
    cmd = ([binary] if ranks == 1 else ["mpirun", "-n", str(ranks), binary]) + args
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    return wall, json.load(open(json_path)) if json_path else json.loads(out)
def best(ranks, args, json_path=None):
    runs = [run(ranks, args, json_path) for _ in range(3)]
    return min(w for w, _ in runs), min(j["seconds"] for _, j in runs), runs[0][1]
advise = ["advise", "merge", "--base", base, "--models", *models, "--json", f"{d}/k2.json"]
pair = ["screen", "--base", base, "--models", models[0], models[1], "--json"]
run(1, advise, f"{d}/k2.json")  # warm the page cache
wall = {}
for ranks in (1, 2):
    aw, ap, k2 = best(ranks, advise, f"{d}/k2.json")
    wall[ranks] = aw
    sw, sp, one = best(ranks, pair)
    k3 = best(ranks, advise[:-2] + ["--k", "3", "--json", f"{d}/k3.json"], f"{d}/k3.json")
    print(f"{ranks} rank{'s' if ranks > 1 else ''}: advise merge, 28 pairs: {aw:.3f} s wall, "
          f"{ap:.3f} s pass ({k2['bytes'] / 1e9:.3f} GB read once); 56 triples: {k3[0]:.3f} s wall, "
          f"{k3[1]:.3f} s pass")
    print(f"         screen, one pair: {sw:.3f} s wall, {sp:.3f} s pass ({one['bytes'] / 1e9:.3f} GB)")
    print(f"         ratio to one pair: {aw / sw:.2f}x wall (target <= 2), {ap / sp:.2f}x pass "
          f"(bytes alone: {k2['bytes'] / one['bytes']:.1f}x)")
t = time.perf_counter()
for a in range(8):
    for b in range(a + 1, 8):
        run(1, ["screen", "--base", base, "--models", models[a], models[b], "--json"])
screens = time.perf_counter() - t
print(f"screen, all 28 pairs: {screens:.3f} s wall (28 processes, 1 rank): "
      f"{screens / wall[1]:.1f}x the one advise (1 rank)")
PYEOF
