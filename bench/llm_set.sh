# Sourced by bench/screen.sh, bench/merge.sh and bench/merge_task.sh (arguments: [DIR]
# [LAYERS] [HIDDEN]): what bench/lib.sh sets (the release binary, MPI as root), and a
# Llama-shaped BF16 checkpoint set (base + 2 fine-tunes, one sharded) generated in DIR on
# first use, shrunk to fit half the free disk.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DIR=${1:-${TMPDIR:-/tmp}/compatbench-llm}
LAYERS=${2:-8}
HIDDEN=${3:-2048}
need_kb=$(( LAYERS * HIDDEN * HIDDEN * 12 * 2 * 3 / 1024 * 12 / 10 ))
free_kb=$(df -k --output=avail "$(dirname "$DIR")" | tail -1)
if (( need_kb > free_kb / 2 )); then
  echo "shrinking: $((need_kb / 1024)) MB would not fit in half the free disk ($((free_kb / 1024)) MB)"
  while (( need_kb > free_kb / 2 && LAYERS > 1 )); do LAYERS=$((LAYERS / 2)); need_kb=$((need_kb / 2)); done
fi
if [[ ! -e $DIR/base.safetensors ]]; then
  echo "generating $LAYERS layers, hidden $HIDDEN, BF16, in $DIR ..."
  /usr/bin/python3 "$ROOT/tests/checks/user_scripts/make_llm.py" "$DIR" "$LAYERS" "$HIDDEN" 2
fi
du -sh "$DIR"
SET_FILES=("$DIR/base.safetensors" "$DIR/ft0.safetensors" "$DIR"/ft1/*.safetensors)
# GB/s at which `dd` (256 KiB reads, one process) reads the set's files one after another:
# the rate at which this machine's kernel copies them out of the page cache (warm), or off
# the disk after drop_cache (cold): the ceiling for any reader of these files on one core.
dd_rate() {
  "$PY" "$ROOT/bench/llm_set_dd_rate.py" "${SET_FILES[@]}"
}
# Drops the page cache (root only); false when it cannot.
drop_cache() { [[ -w /proc/sys/vm/drop_caches ]] && sync && echo 3 > /proc/sys/vm/drop_caches; }
