"""GB/s at which `dd` (256 KiB reads, one process) reads the FILEs one after another
(bench/llm_set.sh's dd_rate).

    /usr/bin/python3 bench/llm_set_dd_rate.py FILE...
"""
import os, subprocess, sys, time
total = sum(os.path.getsize(f) for f in sys.argv[1:])
start = time.perf_counter()
for f in sys.argv[1:]:
    subprocess.run(["dd", f"if={f}", "of=/dev/null", "bs=256K"], check=True, stderr=subprocess.DEVNULL)
print(f"{total / 1e9 / (time.perf_counter() - start):.2f}")
