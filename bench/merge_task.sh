#!/usr/bin/env bash
# The memory of a merge *task* (kway_merge of a checkpoint_set, evaluate: command), as a
# study runs it, on bench/screen.sh's generated Llama-shaped BF16 set (base + 2 fine-tunes):
# one rank (`compatbench run`, no mpirun), the process's anonymous memory (RssAnon, not the
# mapped file pages the kernel may drop) sampled every 20 ms, beside the same run without the
# merges (the runner's own baseline), the largest tensor in F32 and the merged checkpoint's
# size. Each merge is streamed into safetensors and "evaluated" by a command that only writes
# its result, so the figures are the merge's.
#   bash bench/merge_task.sh [DIR] [LAYERS] [HIDDEN]   (build first; the set is kept in DIR)
source "$(dirname "$0")/llm_set.sh"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
(cd "$ROOT/python" && /usr/bin/python3 - "$DIR" "$OUT" <<'PY'
import os, sys
import numpy as np
from compatnets.safetensors import save
d, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
for ft in ("ft0", "ft1"):
    os.makedirs(f"{out}/features/b+{ft}", exist_ok=True)
    save(f"{out}/features/b+{ft}/probe.safetensors", {"features": rng.standard_normal((64, 8)).astype(np.float32)})
with open(f"{out}/manifest.yaml", "w") as f:
    f.write(f"features: features\nbackbones: [{{name: b, family: llama, paradigm: sup, checkpoint: {d}/base.safetensors}}]\n"
            f"finetunes:\n  - {{name: b+ft0, base: b, task: t0, checkpoint: {d}/ft0.safetensors}}\n"
            f"  - {{name: b+ft1, base: b, task: t1, checkpoint: {d}/ft1}}\n")
PY
)
cat > "$OUT/eval.sh" <<'SH'
#!/bin/sh
# $1: the merged checkpoint, $2: the result file. Records the merge's size, scores nothing.
du -sb "$1" > "$(dirname "$2")/size"
printf '{"acc_1": 1, "acc_2": 1, "ft_acc_1": 1, "ft_acc_2": 1, "base_acc_1": 0.5, "base_acc_2": 0.5}' > "$2"
SH
cat > "$OUT/base.yaml" <<YAML
experiment: {name: merge-task-memory, seed: 1}
tasks:
  - {name: fts, kind: checkpoint_set, table: bench/finetunes, manifest: manifest.yaml}
YAML
cp "$OUT/base.yaml" "$OUT/merge.yaml"
cat >> "$OUT/merge.yaml" <<YAML
  - name: merges
    kind: kway_merge
    table: bench/merges
    finetunes: fts
    k: [2]
    methods: [task_arithmetic, ties, prism]
    coefs: [1.0]
    kappas: [1]
    evaluate: command
    command: "sh {config_dir}/eval.sh {checkpoint} {result}"
YAML
peak_anon() {  # CONFIG OUT: runs it, prints the peak RssAnon in MB
  "$BIN" run "$1" --out "$2" --log-level warn > /dev/null &
  local pid=$! peak=0 kb
  while kill -0 "$pid" 2> /dev/null; do
    kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2> /dev/null || echo 0)
    (( ${kb:-0} > peak )) && peak=$kb
    sleep 0.02
  done
  wait "$pid"
  echo $((peak / 1024))
}
base=$(peak_anon "$OUT/base.yaml" "$OUT/run_base")
merge=$(peak_anon "$OUT/merge.yaml" "$OUT/run_merge")
/usr/bin/python3 - "$DIR" "$OUT/run_merge" "$base" "$merge" <<'PY'
import glob, json, os, struct, sys
d, run, base, merge = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(f"{d}/base.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
largest = max(4 * eval("*".join(map(str, v["shape"])) or "1") for k, v in header.items() if k != "__metadata__")
inputs = sum(os.path.getsize(p) for p in glob.glob(f"{d}/**/*.safetensors", recursive=True))
merged = [int(open(p).read().split()[0]) for p in glob.glob(f"{run}/work/*/size")]
rows = [json.loads(l) for l in open(f"{run}/ledger.jsonl")]
tasks = [r for r in rows if r["group"] == "merges"]
assert tasks and all(r["status"] == "done" for r in tasks), rows
print(f"inputs {inputs / 1e9:.2f} GB (base + 2 fine-tunes); merged checkpoint {max(merged) / 1e9:.2f} GB; "
      f"largest tensor in F32 {largest / 1e6:.0f} MB")
for r in tasks:
    print(f"  {r['id']}: {r['duration']:.2f} s")
print(f"peak anonymous memory, 1 rank: runner alone {base} MB, with the merge tasks {merge} MB: "
      f"the merges add {merge - base} MB")
PY
