"""The real PRISM study's operator, c and κ sweeps from a run's results.h5 (docs/real-networks.md):
per operator and c, the mean merged accuracy, retention, destructive share and update norm;
per PRISM-family operator and κ (at its sweep's c) the same with the keep fraction; and the
ablation table's paired differences.
    /usr/bin/python3 bench/prism_sweeps.py RESULTS_H5 [STUDY]
STUDY: the analysis's study (`prism`, the default; `lm` for the language models).
"""
import sys

import h5py


def rows(f, path):
    t = {k: f[path][k][:] for k in f[path]}
    n = len(next(iter(t.values())))
    return [{k: (v[i].decode() if isinstance(v[i], bytes) else v[i]) for k, v in t.items()}
            for i in range(n)]


def main(path, study="prism"):
    f = h5py.File(path, "r")
    print(f"{'operator':>16} {'c':>4} {'n':>4} {'merged':>7} {'base':>6} {'retention':>9} "
          f"{'destr.':>6} {'update %':>9}")
    for r in rows(f, f"{study}/analysis/operators"):
        print(f"{r['method']:>16} {r['coef']:>4.1f} {r['n']:>4} {r['merged_mean']:>7.3f} "
              f"{r['base_mean']:>6.3f} {r['retention']:>9.3f} {r['destructive']:>6.2f} "
              f"{r['update_pct']:>9.1f}")
    print(f"\n{'operator':>16} {'kappa':>5} {'n':>4} {'merged':>7} {'retention':>9} "
          f"{'keep':>7} {'update %':>9}")
    for r in rows(f, f"{study}/analysis/kappa"):
        print(f"{r['method']:>16} {r['kappa']:>5.2f} {r['n']:>4} {r['merged_mean']:>7.3f} "
              f"{r['retention']:>9.3f} {r['keep_fraction']:>7.4f} {r['update_pct']:>9.1f}")
    print()
    for r in rows(f, f"{study}/analysis/ablation"):
        print(f"{r['a']} - {r['b']}: {r['mean_diff']:+.3f} over {r['n']} paired merges "
              f"({r['wins']} wins, {r['losses']} losses, sign test p {r['sign_p']:.2g})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
