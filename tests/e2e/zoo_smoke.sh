# The smoke zoo on 1 (plain), 2 and 3 ranks: identical results and identical artifacts
# (weights, features, world splits), readable by a numpy-only safetensors reader.
source "$(dirname "$0")/lib.sh"
CONFIG=$SRC/configs/smoke.yaml
expect_code 0 mpi 0 run "$CONFIG" --out "$WORK/n1" --log-level warn > "$WORK/n1.txt"
grep -q "/zoo/models (16 rows)" "$WORK/n1.txt" || { cat "$WORK/n1.txt"; fail "the zoo table was not printed"; }
for n in 2 3; do
  expect_code 0 mpi "$n" run "$CONFIG" --out "$WORK/n$n" --log-level warn > /dev/null
  "$BIN" compare "$WORK/n1/results.h5" "$WORK/n$n/results.h5" || fail "results on $n ranks differ"
  diff -r -q "$WORK/n1/artifacts" "$WORK/n$n/artifacts" || fail "artifacts on $n ranks differ"
done
pycheck zoo_smoke tables "$WORK/n2"
# The alignment study on the smoke zoo: tables present, and ease and CKA of every grid pair
# recomputed with numpy from the probe features the k-NN tasks stored.
pycheck zoo_smoke alignment_study "$WORK/n2"
# The merging study: every pair of fine-tunes of a backbone merged; interference recomputed
# with numpy from the stored weights; retention and destructive from the accuracies.
pycheck zoo_smoke merging_study "$WORK/n2"
# The PRISM study: every K-way merge's update norm and kept fraction recomputed with numpy
# from the stored weights (TA, TIES, SLERP, Model Stock, PRISM, PRISM-hard, norm-matched), a
# pair merged by both merge kinds scored alike, and the drift exponent refitted.
pycheck zoo_smoke prism_study "$WORK/n2"
# The encoder-roles study on a pool of 3: 7 subsets x 2 replicates trained; the full model's
# IM score is its TR score, eranks exactly where the subset has the encoder, and capacity and
# necessity recomputed from the subsets table.
pycheck zoo_smoke encoder_roles_study "$WORK/n2"
# The advice verbs on the smoke zoo's own files give the studies' figures: `advise merge` on
# each backbone's three fine-tunes (the merging study's pairs), `advise align` (2 ranks) on
# the exported probe features with the study's paradigms (its every-pair table and ceilings).
A=$WORK/n2/artifacts
for bb in sup_bb_1 mae_bb_1; do
  expect_code 0 mpi 0 advise merge --base "$A/models/$bb.safetensors" --json "$WORK/zoo_advice_$bb.json" \
    --models "$A/models/$bb+"{concept_group,style_a,detail}.safetensors > /dev/null
done
pycheck zoo_smoke merge_advice_as_the_study "$WORK"
pycheck zoo_smoke advice_manifest "$WORK/n2" > "$WORK/zoo_features.yaml"
expect_code 0 mpi 2 advise align --manifest "$WORK/zoo_features.yaml" --json "$WORK/zoo_align.json" > /dev/null
pycheck zoo_smoke align_advice_as_the_study "$WORK"
# A resume repairs what was deleted or damaged since: the world's train split deleted, a
# model's weights cut in half, a k-NN artifact emptied. The tasks that wrote them run again
# (and the log says why); results and artifacts equal the uninterrupted run's.
cp -a "$WORK/n2" "$WORK/repair"
rm "$WORK/repair/artifacts/world/train.safetensors"
model=$WORK/repair/artifacts/models/sup_v_1.safetensors
truncate -s $(($(stat -c %s "$model") / 2)) "$model"
: > "$(ls "$WORK"/repair/artifacts/knn/align_knn/*.safetensors | head -n 1)"
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/repair" --resume > "$WORK/repair.txt" 2>&1
for why in "train.safetensors is missing" "sup_v_1.safetensors is damaged" "is empty"; do
  grep -q "$why.*the task runs again" "$WORK/repair.txt" || { cat "$WORK/repair.txt"; fail "no repair for '$why'"; }
done
"$BIN" compare "$WORK/n1/results.h5" "$WORK/repair/results.h5" || fail "repaired results differ"
diff -r -q "$WORK/n1/artifacts" "$WORK/repair/artifacts" || fail "repaired artifacts differ"
# A scratch purge: the world and every feature file gone, while the models built from the
# world are whole. The features read the world themselves, so they wait for it to be made
# again, on every rank count.
for n in 1 2 3; do
  cp -a "$WORK/n2" "$WORK/purge$n"
  rm -rf "$WORK/purge$n/artifacts/world" "$WORK/purge$n"/artifacts/features/*
  expect_code 0 mpi "$n" run "$CONFIG" --out "$WORK/purge$n" --resume --log-level warn > /dev/null 2>&1
  "$BIN" compare "$WORK/n1/results.h5" "$WORK/purge$n/results.h5" || fail "purge, $n ranks: results differ"
  diff -r -q "$WORK/n1/artifacts" "$WORK/purge$n/artifacts" || fail "purge, $n ranks: artifacts differ"
done
pass "smoke zoo: 1/2/3 ranks identical, artifacts identical and readable; alignment, merging, PRISM and encoder roles checked, and the advice as the studies; a resume repaired deleted and damaged artifacts, and a purge of a file and the files built from it on 1, 2 and 3 ranks"
