# The language-model library in small (configs/real-lm-smoke.yaml): a corpus from Debian's
# packages, a Llama-architecture base, specialists at two drift levels, their merges on 2
# ranks. Then `compatbench merge` with mergekit-style YAML on the sharded Hugging Face
# folders scores in PyTorch exactly as the study's merges, and `advise merge` screens them
# alike. Bad input on this path (a missing shard, an index naming a tensor its shard lacks,
# a specialist of another size, a changed corpus file) fails those tasks by name, the
# others finish, and --resume completes after the repair. Skipped (77) without
# python3-torch or the fortunes.
source "$(dirname "$0")/lib.sh"
if ! "$PY" -c "import torch" 2> /dev/null || [[ ! -f /usr/share/games/fortunes/fortunes ]] ||
   [[ ! -d /usr/share/games/fortunes/de ]] || [[ ! -d /usr/share/games/fortunes/es ]]; then
  echo "SKIP: needs Debian's python3-torch, fortunes, fortunes-de and fortunes-es"; exit 77
fi
sed -e "s|{config_dir}/../python|$SRC/python|" "$SRC/configs/real-lm-smoke.yaml" > "$WORK/lm.yaml"
cp "$SRC/configs/real-lm-smoke.lm.yaml" "$WORK/"
expect_code 0 mpi 2 run "$WORK/lm.yaml" --out "$WORK/n2" --log-level warn > "$WORK/run.txt"
grep -q "/lm/analysis/screening_fixed" "$WORK/run.txt" || { cat "$WORK/run.txt"; fail "no fixed-threshold screening"; }
pycheck lm_real tables "$WORK/n2"
# `compatbench merge` as a user runs it: PRISM (MLP scope) and mergekit's task_arithmetic
# (restricted to the MLP by mergekit's own filters) of one of the study's pairs, written
# sharded, loaded back and scored in PyTorch; in the study's exact arithmetic.
pycheck lm_real merge_configs "$WORK/n2" "$WORK"
for m in prism ta; do
  expect_code 0 mpi 0 merge "$WORK/$m.yaml" --out "$WORK/$m" --arithmetic exact > /dev/null
  ls "$WORK/$m"/model-00001-of-*.safetensors > /dev/null || fail "$m: the merge is not sharded"
  (cd "$SRC/python" && "$PY" -m compatnets.lm evaluate --checkpoint "$WORK/$m" --base "$WORK/n2/lm/models/base" \
    --finetuned $(cat "$WORK/members.txt") --tasks $(cat "$WORK/domains.txt") --corpus "$WORK/n2/lm/corpus" \
    --out "$WORK/$m.json" > /dev/null)
done
pycheck lm_real merges_score_as_the_study "$WORK/n2" "$WORK"
# `advise merge` on the same folders gives the study's screening numbers for every merge it
# ran at the higher level (its 6 pairs and the K = 4 merge, at the MLP scope).
for k in 2 4; do
  expect_code 0 mpi 0 advise merge --base "$WORK/n2/lm/models/base" --k $k --json "$WORK/advice$k.json" \
    --models "$WORK"/n2/lm/specialists/lr1e-3/{python,c,english,german} --scope '*gate_proj*' '*up_proj*' '*down_proj*' > /dev/null
done
pycheck lm_real advice_as_the_study "$WORK/n2" "$WORK"
# Broken inputs, first run: the higher level's `c` from a model of another width, its
# `english` with an index that names a tensor its shard lacks. Their checks fail by name;
# the merges without them finish.
S=$WORK/n2/lm/specialists/lr1e-3 B=$WORK/broken
mkdir -p "$B"
cp -r "$S/c" "$B/c"
sed -i 's/"hidden_size": 64/"hidden_size": 96/' "$B/c/config.json"
cp -r "$S/english" "$B/english"
pycheck lm_real misplace_norm_weight "$B/english/model.safetensors.index.json"
sed -e "s|{out}/lm/specialists/lr1e-3/c\"|$B/c\"|" -e "s|{out}/lm/specialists/lr1e-3/english\"|$B/english\"|" \
    -e "s|{out}|$WORK/n2|g" "$SRC/configs/real-lm-smoke.lm.yaml" > "$B/lm.yaml"
sed -n '/^  - name: lm_checkpoints/,/^  - name: lm_kappa/p' "$WORK/lm.yaml" | sed -e '$d' \
    -e '/after: \[lm_specialists\]/d' -e "s|manifest: real-lm-smoke.lm.yaml|manifest: lm.yaml|" \
    -e "s|{out}/lm/corpus|$B/corpus|" > "$B/tasks.yaml"
{ echo "experiment: {name: lm-broken, seed: 1}"; echo "tasks:"; cat "$B/tasks.yaml"; } > "$B/broken.yaml"
cp -r "$WORK/n2/lm/corpus" "$B/corpus"
expect_code 1 mpi 2 run "$B/broken.yaml" --out "$B/out" --log-level error > "$B/run.txt" 2>&1
grep -q "c/config.json: hidden_size 96, but the base's .*config.json has 64" "$B/run.txt" ||
  { cat "$B/run.txt"; fail "the mismatched config is not named"; }
grep -q "has no tensor 'model.norm.weight' although .*english/model.safetensors.index.json" "$B/run.txt" ||
  { cat "$B/run.txt"; fail "the tensor absent from its shard is not named"; }
pycheck lm_real only_sound_done "$B/out" "$WORK/n2"
cp "$S/c/config.json" "$B/c/config.json"
cp "$S/english/model.safetensors.index.json" "$B/english/"
# Second: a missing shard of `english`, and the corpus's c.heldout changed: the check of
# english fails naming the shard, the merges left (which read c's text) fail naming the
# file; repaired, --resume completes.
rm "$B/english/model-00002-of-"*.safetensors
printf 'changed' >> "$B/corpus/c.heldout"
expect_code 1 mpi 2 run "$B/broken.yaml" --out "$B/out" --resume --log-level error > "$B/run2.txt" 2>&1
grep -q "english/model-00002-of-.*safetensors" "$B/run2.txt" || { cat "$B/run2.txt"; fail "the missing shard is not named"; }
grep -q "c.heldout: sha256 differs" "$B"/out/logs/tasks/lm_merges*.log || fail "the changed corpus file is not named"
cp "$S/english"/model-00002-of-*.safetensors "$B/english/"
cp "$WORK/n2/lm/corpus/c.heldout" "$B/corpus/c.heldout"
expect_code 0 mpi 2 run "$B/broken.yaml" --out "$B/out" --resume --log-level error > /dev/null 2>&1
pycheck lm_real resumed_as_the_study "$B/out" "$WORK/n2"
pass "language models: trained at two drift levels, merged, screened; compatbench merge scores as the study; bad shards, configs and corpus files named"
