# The README's server example, as it stands there: two ranks that each hold one device,
# each rank's tasks served by one process that sees that rank's device.
source "$(dirname "$0")/lib.sh"
unset CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS SLURM_JOB_GPUS
# The README's python block after "# my_server.py", and its yaml block after that.
awk '/^```python$/ {p = 1; next} /^```$/ {p = 0} p' "$SRC/README.md" |
  sed -n '/^# my_server.py/,$p' > "$WORK/my_server.py"
grep -q "serve(handle)" "$WORK/my_server.py" || fail "no server example in the README"
{
  echo "experiment: {name: served, seed: 1}"
  echo "tasks:"
  awk '/^```yaml$/ {p = 1; next} /^```$/ {p = 0} p' "$SRC/README.md" |
    sed -n '/^  - name: score$/,/outputs:/p'
  echo "    env: {PYTHONPATH: $SRC/python}"
} > "$WORK/served.yaml"
grep -q "server:" "$WORK/served.yaml" || fail "no served group in the README"
CUDA_VISIBLE_DEVICES=0,1 expect_code 0 mpi 2 run "$WORK/served.yaml" --out "$WORK/out" --log-level warn
pycheck servers readme_example "$WORK/out"
pass "the README's server example: each rank's tasks served by one process that sees its device"
