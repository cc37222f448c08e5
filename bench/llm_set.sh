# Sourced by bench/screen.sh and bench/merge.sh (arguments: [DIR] [LAYERS] [HIDDEN]): the
# release binary, MPI as root, and a Llama-shaped BF16 checkpoint set (base + 2 fine-tunes,
# one sharded) generated in DIR on first use, shrunk to fit half the free disk.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
DIR=${1:-${TMPDIR:-/tmp}/compatbench-llm}
LAYERS=${2:-8}
HIDDEN=${3:-2048}
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
need_kb=$(( LAYERS * HIDDEN * HIDDEN * 12 * 2 * 3 / 1024 * 12 / 10 ))
free_kb=$(df -k --output=avail "$(dirname "$DIR")" | tail -1)
if (( need_kb > free_kb / 2 )); then
  echo "shrinking: $((need_kb / 1024)) MB would not fit in half the free disk ($((free_kb / 1024)) MB)"
  while (( need_kb > free_kb / 2 && LAYERS > 1 )); do LAYERS=$((LAYERS / 2)); need_kb=$((need_kb / 2)); done
fi
if [[ ! -e $DIR/base.safetensors ]]; then
  echo "generating $LAYERS layers, hidden $HIDDEN, BF16, in $DIR ..."
  /usr/bin/python3 "$ROOT/tests/e2e/real/make_llm.py" "$DIR" "$LAYERS" "$HIDDEN" 2
fi
du -sh "$DIR"
