# The report of the smoke results: `compatbench report` writes report/index.html with its
# figures; headless Chromium (closed-network flags) opens it, every image must load, no
# section may be empty, and a screenshot is taken and must not be blank. Then the Python
# example reads the same file and prints the alignment correlation table.
source "$(dirname "$0")/lib.sh"
command -v chromium > /dev/null || { echo "SKIP: no chromium"; exit 77; }
expect_code 0 mpi 2 run "$SRC/configs/smoke.yaml" --out "$WORK/run" --log-level error > /dev/null
expect_code 0 "$BIN" report "$WORK/run" > "$WORK/report.json"
[[ -s $WORK/run/report/index.html ]] || fail "no report/index.html"
FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --no-first-run --user-data-dir="$WORK/chromium")
timeout 120 chromium "${FLAGS[@]}" --virtual-time-budget=10000 --dump-dom \
  "file://$WORK/run/report/index.html" > "$WORK/dom.html" 2> "$WORK/chromium.log" \
  || { tail "$WORK/chromium.log"; fail "chromium could not open the report"; }
timeout 120 chromium "${FLAGS[@]}" --window-size=1200,2400 --screenshot="$WORK/shot.png" \
  "file://$WORK/run/report/index.html" >> "$WORK/chromium.log" 2>&1 \
  || { tail "$WORK/chromium.log"; fail "no screenshot"; }
"$PY" - "$WORK/dom.html" "$WORK/shot.png" "$WORK/report.json" <<'PYEOF'
import json, re, sys
import matplotlib.image as mpimg
dom = open(sys.argv[1]).read()
m = re.search(r'<body data-images="(\d+)" data-images-loaded="(\d+)"', dom)
assert m, "the page did not report its images (did its script run?)"
total, loaded = int(m.group(1)), int(m.group(2))
info = json.load(open(sys.argv[3]))
assert total == info["figures"] > 0 and loaded == total, (total, loaded, info["figures"])
sections = re.findall(r'<section id="([^"]+)">(.*?)</section>', dom, re.S)
ids = [s for s, _ in sections]
assert ids == ["alignment", "merging", "prism", "encoders", "run", "paper"], ids
for sid, body in sections:
    assert "<img" in body or "<table" in body, f"section {sid} is empty"
shot = mpimg.imread(sys.argv[2])
assert shot.shape[0] >= 2000 and shot.std() > 0.05, (shot.shape, shot.std())
print(f"report: {total} figures all loaded, {len(sections)} sections, screenshot {shot.shape[1]}x{shot.shape[0]}")
PYEOF
"$PY" "$SRC/examples/read_results.py" "$WORK/run/results.h5" > "$WORK/read.txt"
grep -q "^alignment correlations" "$WORK/read.txt" || fail "the example printed no correlation table"
[[ $(grep -c "r1_coco\|r1_flickr" "$WORK/read.txt") -ge 8 ]] || { cat "$WORK/read.txt"; fail "correlation rows missing"; }
pass "report opened in headless Chromium: every image loaded, no empty section; the Python example reads the results"
