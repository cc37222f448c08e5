"""The ETA of each progress line of a run's log against the time the run really took from that
line to its end (bench/eta.sh).
    /usr/bin/python3 bench/eta_score.py RUN_LOG
"""
import re, sys
from datetime import datetime
stamp = r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\] \[r0\] \[info\] "
def t(s): return datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").timestamp()
def secs(eta):
    total = 0
    for n, unit in re.findall(r"(\d+)([hms])", eta):
        total += int(n) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total
lines, start, end = [], None, None
for line in open(sys.argv[1]):
    if start is None and (m := re.match(stamp, line)):
        start = t(m.group(1))
    if m := re.match(stamp + r"progress (\d+)/(\d+) \(([\d.]+)%\).*ETA (\S+)(?: \(between (\S+) and (\S+):)?", line):
        eta = secs(m.group(5))
        low = secs(m.group(6)) if m.group(6) else eta
        high = secs(m.group(7)) if m.group(7) else eta
        lines.append((t(m.group(1)), float(m.group(4)), eta, low, high))
    if m := re.match(stamp + r"(finished|interrupted): ", line):
        end = t(m.group(1))
if end is None or not lines:
    sys.exit("the run did not finish; see its log")
print(f"run: {end - start:.1f} s wall, {len(lines)} progress lines")
def row(label, at):
    true_left = end - at[0]
    err = (at[2] - true_left) / true_left
    inside = at[3] <= true_left <= at[4]
    rng = f"{at[3]:.0f}-{at[4]:.0f}s" if at[3] != at[4] else "(point)"
    print(f"{label:>14}  {at[0] - start:>7.1f}s  {at[1]:>5.1f}%  {at[2]:>7.0f}s  {rng:>14}  "
          f"{true_left:>8.1f}s  {100 * err:>+6.1f}%  {'yes' if inside or at[3] == at[4] else 'NO'}")
    return err
print(f"{'at':>14}  {'elapsed':>8}  {'tasks':>6}  {'ETA':>8}  {'range':>14}  {'true left':>9}  {'error':>7}  in range")
errors = {}
for want in (0, 10, 25, 50, 75):
    at = next((l for l in lines if l[1] >= want), None)
    if at:
        errors[f"{want}% of tasks"] = row(f"{want}% of tasks", at)
for want in (10, 25, 50):
    at = next((l for l in lines if l[0] - start >= want / 100 * (end - start)), None)
    if at:
        errors[f"{want}% of time"] = row(f"{want}% of time", at)
later = [l for l in lines if l[1] >= 10 and end - l[0] > 10]  # from 10% on, 10 s or more left
missed = [l for l in later if not (l[3] <= end - l[0] <= l[4]) and l[3] != l[4]]
off = [l for l in later if abs(l[2] - (end - l[0])) > 0.35 * (end - l[0])]
print(f"from 10% of the tasks on ({len(later)} lines with 10 s or more left): the truth outside "
      f"the range shown on {len(missed)}, the point off by more than ±35% on {len(off)}")
