"""bench/advise.sh's timings: `advise merge` over every pair and every triple of the MODELs,
`screen` of one pair, best of 3 each (wall and the pass it reports) at 1 and 2 ranks; then
the 28 `screen` runs a user would otherwise make, one after another.

    /usr/bin/python3 bench/advise_timings.py COMPATBENCH BASE DIR MODEL...   (8 MODELs; the
    advice is written to DIR/k2.json and DIR/k3.json)
"""
import json, subprocess, sys, time
binary, base, d, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def run(ranks, args, json_path=None):
    cmd = ([binary] if ranks == 1 else ["mpirun", "-n", str(ranks), binary]) + args
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    return wall, json.load(open(json_path)) if json_path else json.loads(out)
def best(ranks, args, json_path=None):
    runs = [run(ranks, args, json_path) for _ in range(3)]
    return min(w for w, _ in runs), min(j["seconds"] for _, j in runs), runs[0][1]
advise = ["advise", "merge", "--base", base, "--models", *models, "--json", f"{d}/k2.json"]
pair = ["screen", "--base", base, "--models", models[0], models[1], "--json"]
run(1, advise, f"{d}/k2.json")  # warm the page cache
wall = {}
for ranks in (1, 2):
    aw, ap, k2 = best(ranks, advise, f"{d}/k2.json")
    wall[ranks] = aw
    sw, sp, one = best(ranks, pair)
    k3 = best(ranks, advise[:-2] + ["--k", "3", "--json", f"{d}/k3.json"], f"{d}/k3.json")
    print(f"{ranks} rank{'s' if ranks > 1 else ''}: advise merge, 28 pairs: {aw:.3f} s wall, "
          f"{ap:.3f} s pass ({k2['bytes'] / 1e9:.3f} GB read once); 56 triples: {k3[0]:.3f} s wall, "
          f"{k3[1]:.3f} s pass")
    print(f"         screen, one pair: {sw:.3f} s wall, {sp:.3f} s pass ({one['bytes'] / 1e9:.3f} GB)")
    print(f"         ratio to one pair: {aw / sw:.2f}x wall (target <= 2), {ap / sp:.2f}x pass "
          f"(bytes alone: {k2['bytes'] / one['bytes']:.1f}x)")
t = time.perf_counter()
for a in range(8):
    for b in range(a + 1, 8):
        run(1, ["screen", "--base", base, "--models", models[a], models[b], "--json"])
screens = time.perf_counter() - t
print(f"screen, all 28 pairs: {screens:.3f} s wall (28 processes, 1 rank): "
      f"{screens / wall[1]:.1f}x the one advise (1 rank)")
