"""bench/plan.sh's comparison: the wall time `compatbench plan` predicted for 1 and 2 ranks
(P1, P2, seconds) beside the measured (M1, M2).

    /usr/bin/python3 bench/plan_check.py M1 P1 M2 P2
"""
import sys
m1, p1, m2, p2 = map(float, sys.argv[1:])
for n, m, p in ((1, m1, p1), (2, m2, p2)):
    print(f"{n} rank(s): measured {m:.2f} s, predicted {p:.2f} s from the 1-rank run's durations: "
          f"{100 * (p - m) / m:+.1f}%")
