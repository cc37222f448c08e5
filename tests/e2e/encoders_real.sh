# The encoder-roles study on "real" models: the example config as shipped, each subset scored
# by a fake training script as a command task (result JSON, im.json, pre-projector features)
# on 2 ranks; the tables checked against numpy/scipy. Then a subset whose result lacks a
# benchmark: that task fails with a message naming the file, the other 92 are done and the
# analysis still runs. With {pool_workdir} in the command, each subset runs after its
# replicate's full pool and reads its model; a full pool that fails holds back its own
# replicate alone, and --resume completes the study.
source "$(dirname "$0")/lib.sh"
sed -e "s#python3 train_subset.py#$PY train_subset.py#" \
  "$SRC/configs/encoders-real.example.yaml" > "$WORK/encoders.yaml"
ln -s "$SRC/tests/checks/user_scripts/train_subset.py" "$WORK/"
cd "$WORK"
expect_code 0 mpi 2 run encoders.yaml --out out --log-level warn > run.txt
grep -q "/encoders/analysis/taxonomy (5 rows)" run.txt || { cat run.txt; fail "no taxonomy table"; }
pycheck encoders_real tables out

# A subset whose result lacks a benchmark fails with the file named; the rest is done.
FAIL_MASK=6 expect_code 1 mpi 2 run encoders.yaml --out bad --log-level warn > bad.txt 2>&1
grep -q "mmvp" bad.txt || { cat bad.txt; fail "the missing benchmark is not named"; }
grep -q "result.json" bad.txt || { cat bad.txt; fail "the result file is not named"; }
pycheck encoders_real bad_result_named bad
# Without {pool_workdir} no subset waits for its full pool: those failing fail alone.
FAIL_MASK=31 expect_code 1 mpi 2 run encoders.yaml --out nopool --log-level warn > /dev/null 2>&1
pycheck encoders_real full_pools_failed_alone nopool
# {pool_workdir}: the subsets read their full pool's model.json (made by the same script).
sed -e 's#--result {result}"#--result {result} --pool-dir {pool_workdir}"#' encoders.yaml > pool.yaml
grep -q "pool-dir {pool_workdir}" pool.yaml || fail "the example config's command changed"
expect_code 0 mpi 2 run pool.yaml --out pool --log-level warn > /dev/null
pycheck encoders_real pool_workdir_run pool
FAIL_MASK=31 FAIL_REPLICATE=2 expect_code 1 mpi 2 run pool.yaml --out pool_bad --log-level warn > pool_bad.txt 2>&1
pycheck encoders_real full_pool_failed pool_bad
expect_code 0 mpi 2 run pool.yaml --out pool_bad --resume --log-level warn > /dev/null
pycheck encoders_real pool_workdir_run pool_bad
pass "encoder roles with a user's training script: tables checked, a bad result named, pools read"
