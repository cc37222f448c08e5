# `compatbench merge` on a Llama-shaped BF16 set (3 fine-tunes, one sharded): every method
# runs and writes readable safetensors; task arithmetic, PRISM, Iso-C and TSV-Merge equal numpy within one
# BF16 rounding; out-of-scope and non-merged tensors keep the base; 1 and 2 ranks write the
# same bytes (TIES also in BF16 arithmetic, the default); sharding with an index; out_dtype;
# bad input named with exit code 2.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/checks/user_scripts/make_llm.py" "$WORK/llm" 2 64 3 0.01 0.02 0.03
cd "$WORK/llm"
write() {  # write NAME METHOD PARAMETERS [MODELS...]
  local name=$1 method=$2 params=$3; shift 3
  { echo "merge_method: $method"; echo "base_model: base.safetensors"; echo "models:"
    for m in "$@"; do echo "  - model: $m"; done
    echo "parameters: $params"; } > "$name.yaml"
}
ALL=(ft0.safetensors ft1 ft2.safetensors)
write ta task_arithmetic "{lambda: 0.7, normalize: true}" "${ALL[@]}"
write ties ties "{density: 0.3}" "${ALL[@]}"
write dare dare "{drop: 0.5, seed: 3}" "${ALL[@]}"
write slerp slerp "{t: 0.4}" ft1
write stock model_stock "{}" "${ALL[@]}"
write prism prism "{kappa: 1.0}" "${ALL[@]}"
write hard prism_hard "{kappa: 1.0}" "${ALL[@]}"
write norm norm_matched "{kappa: 1.0}" "${ALL[@]}"
write iso iso_c "{coef: 0.8}" "${ALL[@]}"
for m in ties dare slerp stock prism hard norm iso; do
  expect_code 0 mpi 0 merge $m.yaml --out out_$m > /dev/null
done
# Checked against numpy's exact arithmetic; tests/mergekit checks the default (torch's in BF16).
expect_code 0 mpi 0 merge ta.yaml --out out_ta --arithmetic exact > /dev/null
expect_code 0 mpi 2 merge ties.yaml --out out_ties2 > /dev/null
cmp out_ties/model.safetensors out_ties2/model.safetensors || fail "ties (in BF16) differs on 2 ranks"
"$PY" -c "from compatnets.safetensors import read; m = [read(f'out_{x}/model.safetensors').metadata['arithmetic'] for x in ('ta', 'ties', 'prism')]; assert m == ['exact', 'dtype', 'exact'], m"
# Only mergekit's methods have a dtype arithmetic; an unknown mode is refused by name.
set +e; "$BIN" merge prism.yaml --out out_no --arithmetic dtype > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "arithmetic dtype: prism is compatbench's own operator" err.txt && [[ ! -e out_no ]] \
  || { cat err.txt; fail "--arithmetic dtype on an own operator: exit $code"; }
# sce with select_topk 0 keeps nothing, where mergekit fails: refused before anything is written.
write sce0 sce "{select_topk: 0}" "${ALL[@]}"
set +e; "$BIN" merge sce0.yaml --out out_no > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "select_topk 0.000000 keeps no coordinate, where mergekit fails" err.txt \
  && [[ ! -e out_no ]] || { cat err.txt; fail "sce with select_topk 0: exit $code"; }
# A repeated key (mergekit's yaml.safe_load keeps the last, yaml-cpp the first) is refused
# with its file and line.
{ cat ta.yaml; echo "merge_method: ties"; } > twice.yaml
set +e; "$BIN" merge twice.yaml --out out_no > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "twice.yaml:8:1: merge_method: the key is given twice in one map (first at line 1)" err.txt \
  && [[ ! -e out_no ]] || { cat err.txt; fail "a repeated merge_method: exit $code"; }
set +e; "$BIN" merge ta.yaml --out out_no --arithmetic fast > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "arithmetic" err.txt && [[ ! -e out_no ]] || { cat err.txt; fail "--arithmetic fast: exit $code"; }
expect_code 0 mpi 2 merge dare.yaml --out out_dare2 > /dev/null
expect_code 0 mpi 2 merge prism.yaml --out out_prism2 > /dev/null
cmp out_dare/model.safetensors out_dare2/model.safetensors || fail "dare differs on 2 ranks"
cmp out_prism/model.safetensors out_prism2/model.safetensors || fail "prism differs on 2 ranks"
# floor_kernels: the floor on tensors of more than two dimensions too; this set has none.
write prismk prism "{kappa: 1.0, floor_kernels: true}" "${ALL[@]}"
expect_code 0 mpi 0 merge prismk.yaml --out out_prismk > /dev/null
pycheck merge_cli same_tensors out_prism out_prismk > /dev/null
{ cat ta.yaml; echo "shard_mb: 0.05"; echo "out_dtype: float32"; } > sharded.yaml
expect_code 0 mpi 2 merge sharded.yaml --out out_sharded --arithmetic exact > /dev/null
pycheck merge_cli sharded_equals_single_file
pycheck merge_cli iso_c_equals_numpy
write tsv tsv "{coef: 0.8}" "${ALL[@]}"
expect_code 0 mpi 0 merge tsv.yaml --out out_tsv > /dev/null
pycheck merge_cli tsv_equals_numpy
write badiso iso_c "{kappa: 1.0}" "${ALL[@]}"
set +e; "$BIN" merge badiso.yaml --out out_bad > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "badiso.yaml:.*parameters.kappa" err.txt || { cat err.txt; fail "iso_c kappa: exit $code"; }
# Bad input.
"$PY" -c "
import numpy as np
from compatnets.safetensors import load, save
arr = load('ft0.safetensors')
arr['model.layers.0.mlp.up_proj.weight'] = np.zeros((4, 4), dtype=np.float32)
save('badshape.safetensors', arr, dtypes='BF16')"
write bad task_arithmetic "{lambda: 1}" ft0.safetensors badshape.safetensors
set +e; "$BIN" merge bad.yaml --out out_bad > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -qF "badshape.safetensors: tensor 'model.layers.0.mlp.up_proj.weight' differs in shape" err.txt \
  || { cat err.txt; fail "bad shape: exit $code"; }
write badkey ties "{densty: 0.3}" "${ALL[@]}"
set +e; "$BIN" merge badkey.yaml --out out_bad > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "badkey.yaml:.*parameters.densty" err.txt || { cat err.txt; fail "bad key: exit $code"; }
# Inputs are never written over: --out equal to, inside or containing an input is refused
# before anything is written (the base's bytes unchanged), through a symlink too.
sum_before=$(cat ft1/* | sha256sum)
{ echo "merge_method: task_arithmetic"; echo "base_model: ft1"; echo "models:"
  echo "  - model: ft0.safetensors"; } > into_base.yaml
ln -sfn ft1 link_to_ft1
for out in ft1 ft1/sub link_to_ft1 . ; do
  set +e; "$BIN" merge into_base.yaml --out "$out" --replace > err.txt 2>&1; code=$?; set -e
  [[ $code == 2 ]] && grep -q "inputs are never written over" err.txt \
    || { cat err.txt; fail "--out $out over an input: exit $code"; }
done
[[ $(cat ft1/* | sha256sum) == "$sum_before" && ! -e ft1/sub ]] || fail "an input changed"
# An existing --out is refused without --replace, replaced whole with it (no stale shards);
# a failed merge leaves neither a partial model nor a staging folder.
set +e; "$BIN" merge ta.yaml --out out_sharded > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "pass --replace" err.txt || { cat err.txt; fail "existing --out: exit $code"; }
expect_code 0 mpi 2 merge ta.yaml --out out_sharded --replace --arithmetic exact > /dev/null
[[ $(ls out_sharded | tr '\n' ' ') == "README.md mergekit_config.yml model.safetensors " ]] \
  || fail "stale files after --replace: $(ls out_sharded)"
cmp out_sharded/model.safetensors out_ta/model.safetensors || fail "--replace wrote other bytes"
expect_code 0 mpi 0 merge ta.yaml --out out_shards --out-shard-size 200K > /dev/null
[[ -f out_shards/model.safetensors.index.json ]] || fail "--out-shard-size made no shards"
set +e; "$BIN" merge bad.yaml --out out_failed > /dev/null 2>&1; set -e
[[ ! -e out_failed && -z $(ls -a | grep partial) ]] || fail "a failed merge left files"
# An input named as one of the merge's scratch paths is refused and kept: a folder named as
# the place an old output moves to, a file named as the lock.
mkdir -p .scr.partial.old && cp ft0.safetensors .scr.partial.old/model.safetensors
cp ft2.safetensors .scr2.lock
write scr task_arithmetic "{lambda: 0.5}" ft1 .scr.partial.old
write scr2 task_arithmetic "{lambda: 0.5}" ft1 .scr2.lock
for case in "scr .scr.partial.old" "scr2 .scr2.lock"; do
  read -r name input <<< "$case"
  mkdir -p "$name"
  set +e; "$BIN" merge "$name.yaml" --out "$name" --replace > err.txt 2>&1; code=$?; set -e
  [[ $code == 2 ]] && grep -q "$input: inputs are never written over" err.txt || { cat err.txt; fail "scratch name $input: exit $code"; }
  [[ -e $input ]] || fail "the merge removed its input $input"
done
# A hub id, a LoRA reference and a folder of PyTorch .bin files are named as such.
mkdir -p binmodel && : > binmodel/pytorch_model.bin
for ref in org/some-model-7b "ft1+lora" binmodel; do
  { echo "merge_method: task_arithmetic"; echo "base_model: base.safetensors"; echo "models:"
    echo "  - model: $ref"; } > ref.yaml
  set +e; "$BIN" merge ref.yaml --out out_ref > err.txt 2>&1; code=$?; set -e
  [[ $code == 2 ]] && grep -qE "download a Hugging Face hub model|LoRA|\.bin checkpoints are not read" err.txt \
    || { cat err.txt; fail "model reference $ref: exit $code"; }
done
# One merge per file; the dtype mix docs/bring-your-own.md promises; screen reads the merge YAML.
{ cat ta.yaml; echo "---"; cat ties.yaml; } > two.yaml
set +e; "$BIN" merge two.yaml --out out_two > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "2 YAML documents" err.txt || { cat err.txt; fail "multi-document: exit $code"; }
"$PY" -c "
from compatnets.safetensors import load, save
save('ft0_f16.safetensors', load('ft0.safetensors'), dtypes='F16')
save('base_f32.safetensors', load('base.safetensors'), dtypes='F32')"
{ echo "merge_method: task_arithmetic"; echo "base_model: base_f32.safetensors"; echo "models:"
  echo "  - model: base_f32.safetensors"; echo "  - model: ft0_f16.safetensors"
  echo "    parameters: {weight: 0.5}"; } > mixed.yaml
expect_code 0 mpi 0 merge mixed.yaml --out out_mixed > /dev/null
write ta_sum task_arithmetic "{lambda: 0.5}" "${ALL[@]}"  # no normalize: c = λ·K = 1.5
"$BIN" screen ta_sum.yaml --json > screen_sum.json
"$BIN" screen --base base.safetensors --models "${ALL[@]}" --coef 1.5 --json > screen_cli15.json
"$PY" -c "import json; a, b = (json.load(open(f)) for f in ('screen_sum.json', 'screen_cli15.json')); assert a['coef'] == 1.5 and a['score'] == b['score'], (a['coef'], a['score'], b['score'])"
# YAMLs whose merges are equal screen alike: for task arithmetic, weights 0.5 or 1 with
# normalize (÷ Σw) and weights 0.5 without (Σw = 1); for TIES, weights 0.5 or 1 with normalize.
wyaml() {  # wyaml NAME METHOD WEIGHT NORMALIZE: two models, one weight
  { echo "merge_method: $2"; echo "base_model: base.safetensors"; echo "models:"
    for m in ft0.safetensors ft2.safetensors; do echo "  - model: $m"; echo "    parameters: {weight: $3}"; done
    echo "parameters: {lambda: 0.8, normalize: $4}"; } > "$1.yaml"
  expect_code 0 mpi 0 merge "$1.yaml" --out "out_$1" > /dev/null
  "$BIN" screen "$1.yaml" --json > "screen_$1.json"
}
same_screen() {  # same_screen A B: equal merges, equal screens
  pycheck merge_cli same_tensors "out_$1" "out_$2" > /dev/null || fail "$1 and $2 merge differently"
  "$PY" -c "import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); assert a['coef'] == b['coef'] == 0.8 and a['score'] == b['score'], (a['coef'], b['coef'], a['score'], b['score'])" \
    "screen_$1.json" "screen_$2.json" || fail "$1 and $2 merge alike but screen differently"
}
wyaml ta_half_norm task_arithmetic 0.5 true; wyaml ta_one_norm task_arithmetic 1.0 true
wyaml ta_half_sum task_arithmetic 0.5 false
same_screen ta_half_norm ta_one_norm; same_screen ta_half_norm ta_half_sum
wyaml ties_half ties 0.5 true; wyaml ties_one ties 1.0 true
same_screen ties_half ties_one
set +e; "$BIN" screen slerp.yaml > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "not a sum of task vectors" err.txt || { cat err.txt; fail "screen slerp.yaml: exit $code"; }
"$BIN" screen ta.yaml --json > screen_yaml.json
"$BIN" screen --base base.safetensors --models "${ALL[@]}" --coef 0.7 --json > screen_cli.json
pycheck merge_cli screen_outputs_agree
# The model card and the YAML as mergekit writes them beside the weights.
cmp ta.yaml out_ta/mergekit_config.yml || fail "mergekit_config.yml is not the merge YAML"
grep -q "^This model was merged using the \[Task Arithmetic\](https://arxiv.org/abs/2212.04089) merge method using base.safetensors as a base.$" out_ta/README.md \
  || { cat out_ta/README.md; fail "README.md: no model card"; }
# A donor whose tokenizer mergekit would rebuild (tokenizer.json without tokenizer_config.json)
# is refused before anything is written, unless --no-copy-tokenizer; one with no tokenizer
# files gives a warning.
mkdir -p tok_half tok_none && cp base.safetensors tok_half/model.safetensors
cp base.safetensors tok_none/model.safetensors && echo '{}' > tok_half/tokenizer.json
printf 'merge_method: task_arithmetic\nbase_model: %s\nmodels:\n  - model: ft1\n' tok_half > tok_half.yaml
sed 's/tok_half/tok_none/' tok_half.yaml > tok_none.yaml
set +e; "$BIN" merge tok_half.yaml --out out_tok > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "tok_half has tokenizer files but not tokenizer_config.json" err.txt && [[ ! -e out_tok ]] \
  || { cat err.txt; fail "a half tokenizer: exit $code"; }
expect_code 0 "$BIN" merge tok_half.yaml --out out_tok --no-copy-tokenizer > /dev/null
"$BIN" merge tok_none.yaml --out out_tok_none > /dev/null 2> err.txt || fail "no tokenizer: failed"
grep -q "tok_none: no tokenizer files: the merged model has none" err.txt || { cat err.txt; fail "no tokenizer: no warning"; }
# A tokenizer_source that is not merged is no model of the card (config.py's referenced_models).
mkdir -p tok_full tok_base && cp base.safetensors tok_full/model.safetensors
echo '{"model": {"vocab": {"a": 0}}}' > tok_full/tokenizer.json && echo '{}' > tok_full/tokenizer_config.json
echo '{"vocab_size": 1}' > tok_full/config.json
cp base.safetensors tok_base/model.safetensors && cp tok_full/tokenizer*.json tok_base/
cp -r ft1 tok_ft1 && cp tok_full/tokenizer*.json tok_ft1/
printf 'merge_method: task_arithmetic\nbase_model: tok_base\nmodels:\n  - model: tok_ft1\ntokenizer_source: tok_full\n' > tok_src.yaml
"$BIN" merge tok_src.yaml --out out_tok_src > tok_src.txt 2>&1 || { cat tok_src.txt; fail "a tokenizer_source donor: failed"; }
card=$(sed -n '/^### Models Merged/,/^### Configuration/p' out_tok_src/README.md)
grep -qx '\* tok_ft1' <<< "$card" && ! grep -q tok_full <<< "$card" && grep -q "of 2 models" tok_src.txt \
  && cmp tok_full/tokenizer_config.json out_tok_src/tokenizer_config.json \
  || { cat out_tok_src/README.md tok_src.txt; fail "the tokenizer donor was counted as a merged model"; }
# mergekit's BASE+ADAPTER: a PEFT LoRA applied before the merge (W + (alpha/r)·B·A), equal
# to numpy; refused settings named; the scratch folder gone afterwards; 1 and 2 ranks alike.
pycheck merge_cli make_lora ft0.safetensors lora > /dev/null
printf 'merge_method: task_arithmetic\nbase_model: base.safetensors\nmodels:\n  - model: ft0.safetensors\n  - model: ft0.safetensors+lora\n' > lora.yaml
expect_code 0 mpi 0 merge lora.yaml --out out_lora --arithmetic exact > /dev/null
expect_code 0 mpi 2 merge lora.yaml --out out_lora2 --arithmetic exact > /dev/null
cmp out_lora/model.safetensors out_lora2/model.safetensors || fail "LoRA merge differs on 2 ranks"
pycheck merge_cli lora_equals_numpy base.safetensors ft0.safetensors lora out_lora
[[ ! -e .out_lora.lora && ! -e .out_lora2.lora ]] || fail "the LoRA scratch folder was left behind"
grep -qx '\* ft0.safetensors + lora' out_lora/README.md || { cat out_lora/README.md; fail "the card names the LoRA model otherwise than card.py"; }
set +e; "$BIN" screen lora.yaml > err.txt 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "LoRA reference" err.txt || { cat err.txt; fail "screen of a LoRA YAML: exit $code"; }
for bad in '{"use_dora": true}:use_dora' '{"use_rslora": true}:use_rslora' '{"bias": "all"}:bias' \
           '{"modules_to_save": ["lm_head"]}:modules trained in full' '{"r": 8}:rank 2 where adapter_config.json says r'; do
  pycheck merge_cli make_lora ft0.safetensors lora_bad "${bad%:*}" > /dev/null
  sed 's/+lora/+lora_bad/' lora.yaml > lora_bad.yaml
  set +e; "$BIN" merge lora_bad.yaml --out out_lora_bad > err.txt 2>&1; code=$?; set -e
  [[ $code == 2 ]] && grep -qw "${bad##*:}" err.txt && [[ ! -e out_lora_bad ]] \
    || { cat err.txt; fail "LoRA ${bad##*:}: exit $code"; }
done
# A refused second adapter after a first one applied: the scratch copy is removed too.
printf '  - model: ft2.safetensors+lora_bad\n' | cat lora.yaml - > lora_two.yaml
set +e; "$BIN" merge lora_two.yaml --out out_lora_two > err.txt 2>&1; code=$?; set -e
[[ $code == 2 && ! -e .out_lora_two.lora && ! -e out_lora_two ]] || { cat err.txt; ls -a; fail "a refused LoRA left its scratch (exit $code)"; }
pass "merge: every method, numpy-equal TA, PRISM and Iso-C, rank-independent bytes, sharding, errors, inputs never written over, staged output, --replace, screen of a merge YAML, model card, tokenizer donors, LoRA references"
