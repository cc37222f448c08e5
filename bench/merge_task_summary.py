"""bench/merge_task.sh's summary: the inputs' size, the merged checkpoint's, the largest
tensor in F32, each merge task's time in RUN's ledger, and the peak anonymous memory of the
runner alone (BASE_MB) and with the merge tasks (MERGE_MB).

    /usr/bin/python3 bench/merge_task_summary.py DIR RUN BASE_MB MERGE_MB
"""
import glob, json, os, struct, sys
d, run, base, merge = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(f"{d}/base.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
largest = max(4 * eval("*".join(map(str, v["shape"])) or "1") for k, v in header.items() if k != "__metadata__")
inputs = sum(os.path.getsize(p) for p in glob.glob(f"{d}/**/*.safetensors", recursive=True))
merged = [int(open(p).read().split()[0]) for p in glob.glob(f"{run}/work/*/size")]
rows = [json.loads(l) for l in open(f"{run}/ledger.jsonl")]
tasks = [r for r in rows if r["group"] == "merges"]
assert tasks and all(r["status"] == "done" for r in tasks), rows
print(f"inputs {inputs / 1e9:.2f} GB (base + 2 fine-tunes); merged checkpoint {max(merged) / 1e9:.2f} GB; "
      f"largest tensor in F32 {largest / 1e6:.0f} MB")
for r in tasks:
    print(f"  {r['id']}: {r['duration']:.2f} s")
print(f"peak anonymous memory, 1 rank: runner alone {base} MB, with the merge tasks {merge} MB: "
      f"the merges add {merge - base} MB")
