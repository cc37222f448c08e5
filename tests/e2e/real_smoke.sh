# The real-network path in small (configs/real-smoke.yaml): PyTorch encoders trained on
# Fashion-MNIST by command tasks, their features through feature_set into the alignment
# study, a pool of them through the encoder-roles study, and fine-tunes of one through the
# merging grid and PRISM's K-way and drift merges, each rank's PyTorch jobs run by one
# long-lived server. 2 ranks with servers and 3 ranks with a process per task give the same
# bytes, a resumed run reruns nothing; a truncated or mismatched fine-tune and a failing evaluation
# script fail their tasks by name while the other merges finish; a missing dataset or
# PyTorch fails its tasks with a message naming the package. Skipped (77) without
# python3-torch or dataset-fashion-mnist.
source "$(dirname "$0")/lib.sh"
if ! "$PY" -c "import torch" 2> /dev/null || [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: needs Debian's python3-torch and dataset-fashion-mnist"; exit 77
fi
CONFIG=$SRC/configs/real-smoke.yaml
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/n2" --log-level warn > "$WORK/run.txt"
grep -q "/alignment/analysis/correlations" "$WORK/run.txt" || { cat "$WORK/run.txt"; fail "no correlation table"; }
# The same config on 3 ranks with a fresh process for every task (`servers: per_task`):
# the same bytes as its long-lived servers on 2 ranks. (3 ranks share 2 cores here: on 1
# rank, starting PyTorch for each task one at a time took 3 of the test's 5 minutes.)
ls "$WORK"/n2/logs/servers/*.log > /dev/null || fail "no server ran"
grep -q "served by" "$WORK"/n2/logs/tasks/real_vision*.log || fail "a task was not served"
mkdir -p "$WORK/per_task"
cp "$SRC"/configs/real-smoke*.yaml "$WORK/per_task/"
sed -i -e "s|{config_dir}/../python|$SRC/python|g" -e '1i runner: {servers: per_task}' \
  "$WORK/per_task/real-smoke.yaml"
expect_code 0 mpi 3 run "$WORK/per_task/real-smoke.yaml" --out "$WORK/n3" --log-level warn > /dev/null
"$BIN" compare "$WORK/n3/results.h5" "$WORK/n2/results.h5" ||
  fail "3 ranks with a process per task and 2 ranks with servers differ"
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/n2" --resume --log-level warn > /dev/null
pycheck real_smoke study_tables "$WORK/n2"
# `compatbench merge` on two of the run's fine-tunes gives a file that PyTorch loads and
# scores exactly as the study's merge of the same pair (in the study's exact arithmetic);
# `screen` reads them too.
R=$WORK/n2/real
cat > "$WORK/merge.yaml" <<YAML
merge_method: task_arithmetic
base_model: $R/models/mlp_sup.safetensors
models:
  - model: $R/finetunes/mlp_sup_fine.safetensors
  - model: $R/finetunes/mlp_sup_digits.safetensors
parameters: {normalize: true}
out_dtype: float32
YAML
expect_code 0 mpi 0 merge "$WORK/merge.yaml" --out "$WORK/merged" --arithmetic exact > /dev/null
expect_code 0 mpi 0 screen --base "$R/models/mlp_sup.safetensors" \
  --models "$R/finetunes/mlp_sup_fine.safetensors" "$R/finetunes/mlp_sup_digits.safetensors" --json > "$WORK/screen.json"
(cd "$SRC/python" && "$PY" -m compatnets.finetune evaluate --checkpoint "$WORK/merged" \
  --base "$R/models/mlp_sup.safetensors" --finetuned "$R/finetunes/mlp_sup_fine.safetensors" \
  "$R/finetunes/mlp_sup_digits.safetensors" --tasks fine digits --data "$R/data" --models "$R" \
  --out "$WORK/merged.json" > /dev/null)
pycheck real_smoke merge_scores_in_torch "$WORK"
# `advise merge`: every pair of the three fine-tunes, screened as the merging study did.
expect_code 0 mpi 0 advise merge --base "$R/models/mlp_sup.safetensors" --json "$WORK/advice.json" \
  --models "$R"/finetunes/mlp_sup_{fine,rotated,digits}.safetensors > /dev/null
pycheck real_smoke advice_as_the_study "$WORK"
# `advise align` on the encoders' exported features: the study's ease, CKA, ceiling, score
# and region for every pair (2 ranks); without paradigms, ranked by ease; short features refused.
sed -e "s|{out}|$WORK/n2|g" "$SRC/configs/real-smoke.features.yaml" > "$WORK/features.yaml"
expect_code 0 mpi 2 advise align --manifest "$WORK/features.yaml" --budget 2 --json "$WORK/align.json" \
  --csv "$WORK/align.csv" --h5 "$WORK/align.h5" > /dev/null
expect_code 0 mpi 0 advise align --features "$R/features" --pairing "$R/data/pairing" --vision mlp_sup cnn_ae \
  --text bow_label > "$WORK/align_np.txt"
grep -q "the ceiling cannot be computed; ranked by ease" "$WORK/align_np.txt" || { cat "$WORK/align_np.txt"; fail "no ease ranking"; }
pycheck real_smoke align_advice_as_the_study "$WORK"
expect_code 0 "$BIN" report "$WORK/align.json" > /dev/null
grep -q "Ranked pairs" "$WORK/align_advice/report/index.html" || fail "no alignment advice page"
mkdir -p "$WORK/short/short"
"$PY" -c "
from compatnets.safetensors import load, save
f = load('$R/features/mlp_sup/probe.safetensors')['features']
save('$WORK/short/short/probe.safetensors', {'features': f[:100]})"
ln -s "$R/features/bow_label" "$WORK/short/bow_label"
expect_code 2 mpi 0 advise align --features "$WORK/short" --pairing "$R/data/pairing" --vision short --text bow_label \
  > "$WORK/short.txt" 2>&1
grep -q "short/probe.safetensors: 100 rows" "$WORK/short.txt" || { cat "$WORK/short.txt"; fail "short features not named"; }
# The same for PRISM: `compatbench merge` of the study's K = 2 members, in its order, scores
# in PyTorch as the study's PRISM merge.
pycheck real_smoke prism_merge_config "$WORK/n2/results.h5" "$R" > "$WORK/prism.yaml"
expect_code 0 mpi 0 merge "$WORK/prism.yaml" --out "$WORK/prism_merged" > /dev/null
TASKS=$(sed -n 's|  - model: .*/mlp_sup_\(.*\)\.safetensors|\1|p' "$WORK/prism.yaml" | tr '\n' ' ')
(cd "$SRC/python" && "$PY" -m compatnets.finetune evaluate --checkpoint "$WORK/prism_merged" \
  --base "$R/models/mlp_sup.safetensors" --finetuned $(for t in $TASKS; do echo "$R/finetunes/mlp_sup_$t.safetensors"; done) \
  --tasks $TASKS --data "$R/data" --models "$R" --out "$WORK/prism_merged.json" > /dev/null)
pycheck real_smoke prism_merge_scores_in_torch "$WORK"
# The report has the real networks' section beside the papers' numbers.
"$BIN" report "$WORK/n2" > "$WORK/report.json"
grep -q '"real"' "$WORK/report.json" || { cat "$WORK/report.json"; fail "no real-networks section"; }
grep -q "benchmark is not informative here\|In words: " "$WORK/n2/report/index.html" || fail "no comparison with the paper"
grep -q "configs/default.yaml and give its results" "$WORK/n2/report/index.html" || fail "no --library hint"
pycheck advise report_section "$WORK/n2" 3
# With a model-library run's results (here the same file, so the numbers must repeat).
"$BIN" report "$WORK/n2" --library "$WORK/n2/results.h5" > /dev/null
grep -q "The model library's: r = " "$WORK/n2/report/index.html" || fail "--library: no library numbers"
# A user's own PyTorch encoder, exported by the example of docs/bring-your-own.md, beside a trained text
# encoder: validated as the config is read, then aligned.
mkdir -p "$WORK/user/features"
"$PY" "$SRC/examples/export_torch_features.py" --data "$WORK/n2/real/data" --out "$WORK/user/features" > /dev/null
ln -s "$WORK/n2/real/features/bow_label" "$WORK/user/features/bow_label"
ln -s "$WORK/n2/real/data" "$WORK/user/data"
cat > "$WORK/user/user.features.yaml" <<'YAML'
features: features
pairing: data/pairing
splits: [train, probe, flickr, coco]
models:
  - {name: my_cnn, modality: vision, family: my_cnn, paradigm: random_init}
  - {name: bow_label, modality: text, family: bow, paradigm: caption_label}
YAML
cat > "$WORK/user/user.yaml" <<'YAML'
experiment: {name: user-model, seed: 1}
tasks:
  - {name: mine, kind: feature_set, table: real/models, manifest: user.features.yaml}
  - {name: align_knn, kind: probe_knn, table: alignment/knn, features: mine, modalities: [vision, text], probe: 256, k: [10, 20]}
  - {name: align_grid, kind: pair_similarity, table: alignment/similarity, knn: align_knn}
  - {name: align_pairs, kind: align_pair, table: alignment/fits, similarity: align_grid, adapter: csa, eval: [flickr, coco], recall_k: [1, 10]}
YAML
expect_code 0 mpi 0 validate "$WORK/user/user.yaml" > /dev/null
expect_code 0 mpi 2 run "$WORK/user/user.yaml" --out "$WORK/user/out" --log-level warn > /dev/null
pycheck real_smoke user_features_run "$WORK/user/out"
# A truncated fine-tune: its check fails naming the file, the merges that need it are
# skipped, the other merge finishes; restored, --resume finishes the rest.
B=$WORK/broken
mkdir -p "$B"
cp "$R/finetunes/mlp_sup_rotated.safetensors" "$B/rotated.safetensors"
head -c 3000 "$B/rotated.safetensors" > "$B/cut.safetensors"
sed -e "s|{out}/real/finetunes/mlp_sup_rotated.safetensors|$B/cut.safetensors|" \
    -e "s|{out}|$WORK/n2|g" "$SRC/configs/real-smoke.checkpoints.yaml" > "$B/ckpt.yaml"
# The K-way merges' evaluation script fails for TIES merges (until it is mended below).
cat > "$B/eval.sh" <<SH
#!/bin/sh
case "\$*" in *_ties_*) echo "error: the evaluation crashed (made to, by the test)" >&2; exit 3;; esac
cd "$SRC/python" && exec "$PY" -m compatnets.finetune evaluate "\$@"
SH
chmod +x "$B/eval.sh"
sed -n '/- name: real_checkpoints$/,/^  # A convolutional backbone/p' "$SRC/configs/real-smoke.yaml" | sed -e '$d' \
    -e '/after: \[real_finetune\]/d' -e "s|manifest: real-smoke.checkpoints.yaml|manifest: ckpt.yaml|" \
    -e '/^    server:/{N;/kway_evaluate/s/^    server:[^\n]*\n//}' \
    -e "/command: &kway_evaluate/{n;s|.*|      $B/eval.sh|}" \
    -e "s|{config_dir}/../python|$SRC/python|" -e "s|{out}/real|$WORK/n2/real|g" > "$B/tasks.yaml"
{ echo "experiment: {name: broken, seed: 1}"; echo "tasks:"; cat "$B/tasks.yaml"; } > "$B/broken.yaml"
expect_code 1 mpi 2 run "$B/broken.yaml" --out "$B/out" --log-level error > "$B/run.txt" 2>&1
grep -q "cut.safetensors" "$B/run.txt" || { cat "$B/run.txt"; fail "the truncated file is not named"; }
pycheck real_smoke truncated_finetune_named "$B/out"
cp "$B/rotated.safetensors" "$B/cut.safetensors"
sed -i '/_ties_/d' "$B/eval.sh"
expect_code 0 mpi 2 run "$B/broken.yaml" --out "$B/out" --resume --log-level error > /dev/null 2>&1
pycheck real_smoke resume_after_repair "$B/out"
# Fine-tunes whose tensors do not match the backbone (a renamed tensor, a reshaped one):
# their checks fail naming the file and the tensor; the matching one passes.
pycheck real_smoke mismatched_tensors_named "$R" "$B" > "$B/tensor.txt"
sed -e "s|{out}/real/finetunes/mlp_sup_rotated.safetensors|$B/renamed.safetensors|" \
    -e "s|{out}/real/finetunes/mlp_sup_digits.safetensors|$B/reshaped.safetensors|" \
    -e "s|{out}|$WORK/n2|g" "$SRC/configs/real-smoke.checkpoints.yaml" > "$B/mismatch.yaml"
cat > "$B/mismatch-run.yaml" <<YAML
experiment: {name: mismatch, seed: 1}
tasks:
  - {name: real_checkpoints, kind: checkpoint_set, table: real/finetunes, manifest: mismatch.yaml}
YAML
expect_code 1 mpi 1 run "$B/mismatch-run.yaml" --out "$B/mismatch" --log-level error > /dev/null 2>&1
pycheck real_smoke mismatch_run_failed "$B/mismatch" "$(cat "$B/tensor.txt")"
# No dataset: the data task fails naming the package; every task after it is skipped.
sed -e 's|--seed 1 --result|--seed 1 --source '"$WORK"'/none --result|' "$CONFIG" > "$WORK/nodata.yaml"
cp "$SRC"/configs/real-smoke.*.yaml "$WORK/"
sed -i -e 's|{config_dir}/../python|'"$SRC"'/python|' "$WORK/nodata.yaml"
expect_code 1 mpi 2 run "$WORK/nodata.yaml" --out "$WORK/nodata" --log-level error > "$WORK/nodata.txt" 2>&1
! grep "analysis .* failed" "$WORK/nodata.txt" || fail "an analysis failed on a run without finished tasks"
grep -q "apt-get install dataset-fashion-mnist" "$WORK"/nodata/logs/tasks/real_data*.log || fail "no package named"
pycheck real_smoke no_dataset_skips_the_rest "$WORK/nodata"
# No PyTorch: a training task's log says what to install.
mkdir -p "$WORK/notorch/torch"
echo 'raise ImportError("No module named torch")' > "$WORK/notorch/torch/__init__.py"
(cd "$SRC/python" && PYTHONPATH=$WORK/notorch "$PY" -m compatnets.train --model mlp_sup --data "$WORK/n2/real/data" \
  --out "$WORK/x" > "$WORK/notorch.txt" 2>&1) && fail "training ran without torch"
grep -q "install Debian's python3-torch" "$WORK/notorch.txt" || { cat "$WORK/notorch.txt"; fail "no package named"; }
pass "real smoke: trained, aligned, merged, deterministic, resumable; a bad checkpoint, a missing dataset and PyTorch named"
