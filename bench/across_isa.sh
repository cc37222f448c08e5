#!/usr/bin/env bash
# How far results move between builds for different instruction sets. Runs CONFIG with
# the host build (-march=native) and with the builds of scripts/check-isa.sh (those this
# CPU can run), then compares every dataset outside /meta and /tasks with the host's:
# byte-identical or not, and the largest difference of floating-point values, absolute
# and relative to the column's scale (its largest magnitude).
#   bash scripts/check-isa.sh && bash bench/across_isa.sh [CONFIG]   (default smoke.yaml)
#   BUILDS="release isa-x86-64-v3" bash bench/across_isa.sh configs/default.yaml
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIG=${1:-$ROOT/configs/smoke.yaml}
WORK=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
runs=()
for build in ${BUILDS:-release isa-x86-64 isa-x86-64-v3 isa-x86-64-v4}; do
  bin=$ROOT/build/$build/runner/compatbench
  [[ -x $bin ]] || { echo "$build: not built, left out"; continue; }
  if ! "$bin" --version > /dev/null 2>&1; then
    echo "$build: this CPU cannot run it, left out"
    continue
  fi
  mpirun -n 2 "$bin" run "$CONFIG" --out "$WORK/$build" --log-level error > /dev/null
  runs+=("$build")
done
/usr/bin/python3 - "$WORK" "${runs[@]}" <<'PYEOF'
import sys
import h5py
import numpy as np
work, builds = sys.argv[1], sys.argv[2:]
def datasets(f):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset)
                 and not n.startswith(("meta", "tasks")) else None)
    return out
ref = datasets(h5py.File(f"{work}/{builds[0]}/results.h5", "r"))
print(f"reference: {builds[0]} ({len(ref)} datasets)")
for b in builds[1:]:
    other = datasets(h5py.File(f"{work}/{b}/results.h5", "r"))
    def equal(a, b):
        return a.tobytes() == b.tobytes() if isinstance(a, np.ndarray) else a == b
    same = sum(1 for k in ref if k in other and equal(ref[k], other[k]))
    print(f"{b}: {same}/{len(ref)} datasets byte-identical")
    rows = []
    for k, a in ref.items():
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or k not in other:
            continue
        x, y = a.astype(float), other[k].astype(float)
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.any() or np.array_equal(x[ok], y[ok]):
            continue
        d = np.abs(x[ok] - y[ok])
        rel = d / np.maximum(np.maximum(np.abs(x[ok]), np.abs(y[ok])), 1e-6)
        i = int(np.argmax(rel))
        rows.append((rel[i], d.max(), k, x[ok][i], y[ok][i]))
    rows.sort(reverse=True)
    small = sum(1 for r in rows if r[0] <= 1e-4)
    print(f"  {len(rows)} float datasets differ; {small} of them by at most 1e-4 relative "
          f"(elementwise, |a-b| / max(|a|, |b|, 1e-6)). The largest:")
    for rel, d, k, u, v in rows[:8]:
        print(f"  {rel:9.3g} rel  {d:9.3g} abs  /{k}: {u:.6g} vs {v:.6g}")
PYEOF
