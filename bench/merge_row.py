"""One row of bench/merge.sh's table from the last line `compatbench merge` prints ("read X GB
in S s on R rank(s): ...; per rank at most: peak RSS A MB (...), anonymous memory B MB"):
seconds, GB/s, passes, the share of the memory bandwidth BW and of dd's rate DD that all
passes together read at per rank, peak RSS and RssAnon.

    /usr/bin/python3 bench/merge_row.py NAME RANKS PASSES BW DD LINE
"""
import re, sys
name, ranks, passes, bw, pc, line = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
gb, s = map(float, re.search(r"read ([0-9.]+) GB in ([0-9.]+) s", line).groups())
rss, anon = map(float, re.search(r"peak RSS ([0-9.]+) MB.*anonymous memory ([0-9.]+) MB", line).groups())
rate = gb * passes / s / ranks
print(f"{name:9s} {ranks:5d} {s:8.2f} {gb / s:9.2f} {passes:8d} {100 * rate / bw:8.0f}% {100 * rate / pc:8.0f}% {rss:8.0f}MB {anon:8.0f}MB")
