# `compatbench merge` on mergekit's examples, the configs of mergekit's tests and our own
# (tests/mergekit): supported ones equal the numpy reference of mergekit within one ulp of
# the output dtype (and 1e-6 as float32) with mergekit's config.json and the donor's
# tokenizer files; the others exit 2 naming the method or key, with no output.
source "$(dirname "$0")/lib.sh"
"$PY" "$SRC/tests/mergekit/check_configs.py" "$BIN" "$WORK"
pass "mergekit configs: every fixture merged as mergekit does, or refused"
