"""bench/screen.sh's summary: the share of the memory bandwidth BW and of dd's page-cache
rate DD that `screen` read at, its throughput on 1 and 2 ranks against numpy's, and the
extrapolated time for a 7B model with K = 2 in BF16. ONE, TWO and NUMPY are the JSON of
`screen --json` on 1 and 2 ranks and of bench/screen_numpy.py.

    /usr/bin/python3 bench/screen_summary.py ONE TWO NUMPY BW DD
"""
import json, subprocess, sys
one, two, np_ = (json.loads(a) for a in sys.argv[1:4])
bw, pc = float(sys.argv[4]), float(sys.argv[5])
gb = one["bytes"] / 1e9
print(f"1 rank: {100 * gb / one['seconds'] / bw:.0f}% of the memory bandwidth, "
      f"{100 * gb / one['seconds'] / pc:.0f}% of dd's page-cache rate")
print(f"throughput: 1 rank {gb / one['seconds']:.2f} GB/s, 2 ranks {gb / two['seconds']:.2f} GB/s; "
      f"numpy {gb / np_['seconds']:.2f} GB/s -> {np_['seconds'] / two['seconds']:.1f}x numpy (2 ranks), "
      f"{np_['seconds'] / one['seconds']:.1f}x (1 rank)")
seven_b = 3 * 13.5e9
print(f"7B, K = 2, BF16 ({seven_b / 1e9:.1f} GB read): {seven_b / (one['bytes'] / two['seconds']):.1f} s "
      f"extrapolated on 2 ranks (warm)")
