# The report of the smoke results: `compatbench report` writes report/index.html with its
# figures; headless Chromium (closed-network flags) opens it, every image must load, no
# section may be empty, and a screenshot is taken and must not be blank. Then the Python
# example reads the same file and prints the alignment correlation table.
source "$(dirname "$0")/lib.sh"
command -v chromium > /dev/null || { echo "SKIP: no chromium"; exit 77; }
expect_code 0 mpi 2 run "$SRC/configs/smoke.yaml" --out "$WORK/run" --log-level error > /dev/null
expect_code 0 "$BIN" report "$WORK/run" > "$WORK/report.json"
[[ -s $WORK/run/report/index.html ]] || fail "no report/index.html"
# Its advice section: `advise merge` on the zoo's fine-tunes beside the merging study's pairs.
pycheck advise report_section "$WORK/run" 6
# A backbone whose fine-tune is missing, or whose file the advice refuses, is left out with the
# reason; the report still completes.
cp -a "$WORK/run" "$WORK/damaged"
rm "$WORK/damaged/artifacts/models/sup_bb_1+detail.safetensors"
truncate -s 100 "$WORK/damaged/artifacts/models/mae_bb_1+style_a.safetensors"
expect_code 0 "$BIN" report "$WORK/damaged" > /dev/null
for why in "sup_bb_1: left out (no checkpoint in the run folder for sup_bb_1+detail)" \
  "mae_bb_1: left out (compatbench: advise merge: $WORK/damaged/artifacts/models/mae_bb_1+style_a.safetensors"; do
  grep -qF "$why" "$WORK/damaged/report/index.html" || fail "the report does not say: $why"
done
# Run from inside the output folder (whose report/ is not the package), and refused inputs.
(cd "$WORK/run" && expect_code 0 "$BIN" report . > /dev/null)
expect_code 0 "$BIN" report "$WORK/run" --package "$SRC/python/" > /dev/null
# A compatnets/ in the working folder does not shadow the package --package names.
mkdir -p "$WORK/shadow/compatnets/report"
touch "$WORK/shadow/compatnets/__init__.py" "$WORK/shadow/compatnets/report/__init__.py"
echo 'raise SystemExit(3)' > "$WORK/shadow/compatnets/report/__main__.py"
(cd "$WORK/shadow" && expect_code 0 "$BIN" report "$WORK/run" > /dev/null)
expect_code 2 "$BIN" report "$WORK/run" --library "$WORK/none.h5" 2> "$WORK/lib.txt"
grep -q "none.h5: no such results file (--library)" "$WORK/lib.txt" || fail "--library not named"
expect_code 2 "$BIN" report "$WORK/run" --package "$WORK/run" 2> "$WORK/pkg.txt"
grep -q "not the report package" "$WORK/pkg.txt" || fail "--package not refused"
FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --no-first-run --user-data-dir="$WORK/chromium")
timeout 120 chromium "${FLAGS[@]}" --virtual-time-budget=10000 --dump-dom \
  "file://$WORK/run/report/index.html" > "$WORK/dom.html" 2> "$WORK/chromium.log" \
  || { tail "$WORK/chromium.log"; fail "chromium could not open the report"; }
timeout 120 chromium "${FLAGS[@]}" --window-size=1200,2400 --screenshot="$WORK/shot.png" \
  "file://$WORK/run/report/index.html" >> "$WORK/chromium.log" 2>&1 \
  || { tail "$WORK/chromium.log"; fail "no screenshot"; }
pycheck report rendered_report "$WORK/dom.html" "$WORK/shot.png" "$WORK/report.json"
"$PY" "$SRC/examples/read_results.py" "$WORK/run/results.h5" > "$WORK/read.txt"
grep -q "^alignment correlations" "$WORK/read.txt" || fail "the example printed no correlation table"
[[ $(grep -c "r1_coco\|r1_flickr" "$WORK/read.txt") -ge 8 ]] || { cat "$WORK/read.txt"; fail "correlation rows missing"; }
pass "report opened in headless Chromium: every image loaded, no empty section; the Python example reads the results"
