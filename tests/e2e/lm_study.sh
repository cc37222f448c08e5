# The drift study in small (configs/real-lm-smoke.yaml): a base, specialists at two drift
# levels, every pair and the nested K = 4 merged by five operators, the κ sweep, the keep
# floors and the drift merges, each merge scored on every domain and by generation,
# destructive by its margin; the screening with bootstrap intervals and PRISM's recovery.
# 1 and 2 ranks give the same bytes; the tables are recomputed from the merges; a
# "specialist" trained apart from the base is warned about by name; the report judges each
# claim. Skipped (77) without python3-torch or the fortunes.
source "$(dirname "$0")/lib.sh"
if ! "$PY" -c "import torch" 2> /dev/null || [[ ! -f /usr/share/games/fortunes/fortunes ]] ||
   [[ ! -d /usr/share/games/fortunes/de ]] || [[ ! -d /usr/share/games/fortunes/es ]]; then
  echo "SKIP: needs Debian's python3-torch, fortunes, fortunes-de and fortunes-es"; exit 77
fi
CONFIG=$SRC/configs/real-lm-smoke.yaml
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/n2" --log-level warn > "$WORK/run.txt"
grep -q "/lm/analysis/recovery" "$WORK/run.txt" || { cat "$WORK/run.txt"; fail "no recovery table"; }
expect_code 0 mpi 1 run "$CONFIG" --out "$WORK/n1" --log-level warn > /dev/null
"$BIN" compare "$WORK/n1/results.h5" "$WORK/n2/results.h5" || fail "1 and 2 ranks differ"
pycheck lm_study tables "$WORK/n2"
# A "specialist" pretrained apart from the base (same config, another seed): its check
# passes the config, records a relative norm near √2 and warns naming its folder.
(cd "$SRC/python" && "$PY" -m compatnets.lm pretrain --corpus "$WORK/n2/lm/corpus" --out "$WORK/apart" \
  --hidden 64 --layers 2 --heads 2 --intermediate 160 --steps 60 --batch 8 --lr 3e-3 --seed 2 --shard-mb 0.1 > /dev/null)
mkdir -p "$WORK/far/features/apart"
cp "$WORK/n2/lm/features/lr1e-4+python/probe.safetensors" "$WORK/far/features/apart/"
cat > "$WORK/far/models.yaml" <<YAML
features: features
backbones: [{name: base, family: llama, paradigm: pretrained, checkpoint: $WORK/n2/lm/models/base}]
finetunes:
  - {name: near, base: base, task: python, checkpoint: $WORK/n2/lm/specialists/lr1e-3/python}
  - {name: apart, base: base, task: c, checkpoint: $WORK/apart}
YAML
mkdir -p "$WORK/far/features/near"
cp "$WORK/n2/lm/features/lr1e-3+python/probe.safetensors" "$WORK/far/features/near/"
printf 'experiment: {name: far, seed: 1}\ntasks:\n  - {name: check, kind: checkpoint_set, table: far, manifest: models.yaml}\n' \
  > "$WORK/far/far.yaml"
expect_code 0 mpi 1 run "$WORK/far/far.yaml" --out "$WORK/far/out" --log-level warn > "$WORK/far/run.txt" 2>&1
grep -q "check/apart: fine-tune $WORK/apart differs from its base .* by 1\.[0-9]*x" "$WORK/far/run.txt" "$WORK"/far/out/logs/*.log ||
  { cat "$WORK/far/run.txt"; fail "the model trained apart is not named"; }
pycheck lm_study far "$WORK/far/out"
expect_code 0 "$BIN" report "$WORK/n2" > /dev/null
grep -q "judged by the rules fixed in advance" "$WORK/n2/report/index.html" || fail "no judged claims in the report"
pass "drift study: 1 and 2 ranks alike; margins, recovery and screening recomputed; a model trained apart named; claims judged"
