"""`compatbench advise merge` against what the merging study measured, on a run folder (e.g.
configs/real.yaml's: each backbone's 8 fine-tunes, all 28 pairs, c = 1, beside the study's
112 task-arithmetic merges of the same pairs): the flags at the paper's threshold and at a
threshold fixed on half of the backbones and tested on the rest. The report's section
"Advice before merging, against the merging study" (compatnets.report.advice_study) is the same.
    PYTHONPATH=python /usr/bin/python3 bench/advise_vs_study.py RUN_DIR [COMPATBENCH]
"""
import os
import sys
import tempfile

import h5py

from compatnets.report.advice_study import compare, summary
from compatnets.report.h5 import table


def main(run, binary):
    with h5py.File(os.path.join(run, "results.h5"), "r") as f:
        merges = table(f, "/merging/merges")
    with tempfile.TemporaryDirectory() as d:
        rows, notes = compare(binary, run, merges, d)
    for note in notes:
        print(note)
    if not rows:
        sys.exit(f"{run}: no pair of the study could be advised")
    s = summary(rows)
    line = lambda c: (f"{c['caught']} of {c['destructive']} destructive flagged, "  # noqa: E731
                      f"{c['false_flags']} of {c['harmless']} harmless flagged")
    print(f"{s['pairs']} pairs advised, {s['paper']['destructive']} destructive "
          f"in the study; largest relative difference from the study's score "
          f"{s['max_relative_difference']:.1e}")
    print(f"paper's threshold 1.9e-3: {line(s['paper'])}")
    if "fixed" in s:
        x = s["fixed"]
        print(f"threshold {x['threshold']:.4g} fixed on {x['fit_pairs']} pairs ({', '.join(x['fit_on'])}): "
              f"on the other {s['pairs'] - x['fit_pairs']}, {line(x)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "release", "runner", "compatbench"))
