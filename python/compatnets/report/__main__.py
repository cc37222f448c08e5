"""python3 -m compatnets.report OUT_DIR [--library RESULTS.h5]: see the package's docstring."""
import argparse
import json
import os
import sys

import h5py

from .advice import advice_report
from .advice_study import advice_study_section
from .facts import run_facts
from .h5 import scalar
from .page import Report
from .lm import lm_section
from .real import real_section
from .reanalysis import reanalysis_section
from .studies import compass_section, encoders_section, prism_section, roles_variants_section


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m compatnets.report",
                                     description="The HTML report of a run's results.h5.")
    parser.add_argument("out", help="the run's output folder, or an advice JSON file")
    parser.add_argument("--library", help="results.h5 of a model-library run, set beside the "
                                          "real networks' numbers")
    parser.add_argument("--compatbench", help="the compatbench binary, for the advice checked "
                                              "against the merging study (compatbench report gives it)")
    args = parser.parse_args(argv)
    if os.path.isfile(args.out) and args.out.endswith(".json"):  # an advice file
        print(json.dumps({"report": advice_report(args.out)}))
        return
    path = os.path.join(args.out, "results.h5")
    for p in (path, args.library):
        if p is not None and not os.path.exists(p):
            sys.exit(f"{p}: no results file (run compatbench run first)")
    library = h5py.File(args.library, "r") if args.library else None
    with h5py.File(path, "r") as f:
        rep = Report(args.out)
        compass_section(rep, f, "alignment", "COMPASS alignment")
        compass_section(rep, f, "merging", "COMPASS merging")
        prism_section(rep, f)
        advice_study_section(rep, f, args.out, args.compatbench)
        encoders_section(rep, f)
        encoders_section(rep, f, "encoders_frozen", "Encoder roles, encoders frozen")
        roles_variants_section(rep, f)
        real_section(rep, f, library)
        lm_section(rep, f)
        reanalysis_section(rep, f)
        run_facts(rep, f)
        name = scalar(f, "/meta/experiment", "run")
        page = rep.write(f"compatbench report: {name}",
                         f"from {os.path.abspath(path)}; figures show the results as measured")
    if library is not None:
        library.close()
    print(json.dumps({"report": page, "figures": rep.n,
                      "sections": [s for s, _, _ in rep.sections]}))


if __name__ == "__main__":
    main()
