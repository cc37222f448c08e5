#!/usr/bin/env bash
# Builds the safetensors header fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for
# SECONDS (default 60) from a small seed corpus of valid and broken files.
#   bash tests/fuzz/run.sh [SECONDS] [WORKDIR] [LIBFUZZER FLAGS...]
# The test suite passes -seed=1 so that its run is reproducible; run it without a seed, and
# longer, to explore. Add every crash input it finds to tests/fuzz/corpus/.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_TO_RUN=${1:-60}
WORK=${2:-$(mktemp -d)}
shift $(( $# > 2 ? 2 : $# ))
mkdir -p "$WORK/corpus"
CXX=${CXX_FUZZ:-clang++}
command -v "$CXX" > /dev/null || { echo "no $CXX (apt-get install clang libclang-rt-14-dev)"; exit 2; }
"$CXX" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$SRC/workloads" "$SRC/tests/fuzz/safetensors_fuzz.cpp" \
    "$SRC/workloads/formats/safetensors.cpp" "$SRC/workloads/formats/dtype.cpp" \
    "$SRC/workloads/formats/half.cpp" -o "$WORK/fuzz"
# Seeds: inputs that once crashed it (tests/fuzz/corpus/), a valid file with metadata, and a
# few near misses.
cp "$SRC/tests/fuzz/corpus/"* "$WORK/corpus/" 2>/dev/null || true
/usr/bin/python3 - "$WORK/corpus" <<'PY'
import json, struct, sys, os
d = sys.argv[1]
def put(name, header, data):
    text = json.dumps(header).encode()
    open(os.path.join(d, name), "wb").write(struct.pack("<Q", len(text)) + text + data)
put("valid", {"__metadata__": {"k": "v"}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [8, 12]}}, bytes(12))
put("hole", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8))
put("scalar", {"s": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}}, bytes(8))
PY
"$WORK/fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -print_final_stats=1 "$@" "$WORK/corpus" 2>&1 | tail -15
echo "fuzz: ${SECONDS_TO_RUN} s without a crash"
