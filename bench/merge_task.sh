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
"$PY" "$ROOT/bench/merge_task_inputs.py" "$DIR" "$OUT"
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
/usr/bin/python3 "$ROOT/bench/merge_task_summary.py" "$DIR" "$OUT/run_merge" "$base" "$merge"
