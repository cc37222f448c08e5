# `compatbench merge` on mergekit's examples, the configs of mergekit's tests and our own
# (tests/mergekit): supported ones, with `--arithmetic exact`, equal the numpy reference of
# mergekit within one ulp of the output dtype (and 1e-6 as float32) with mergekit's
# config.json and the donor's tokenizer files; with the default arithmetic (the YAML's
# dtype, and float32) they equal torch running mergekit's kernels (tests/mergekit/
# torch_reference.py) bit for bit or within the stated units (dtype_check.py); the others
# exit 2 naming the method or key, with no output.
source "$(dirname "$0")/lib.sh"
"$PY" -c "import torch" 2> /dev/null || fail "the torch reference needs Debian's python3-torch (scripts/test.sh installs it)"
"$PY" "$SRC/tests/mergekit/check_configs.py" "$BIN" "$WORK"
pass "mergekit configs: every fixture merged as mergekit does (exactly, and as torch in the dtype), or refused"
