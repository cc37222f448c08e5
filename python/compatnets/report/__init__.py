"""The report of a run: figures and key tables from its results.h5, as one HTML page.

    python3 -m compatnets.report OUT_DIR [--library RESULTS.h5]   (or: compatbench report OUT_DIR)

Writes OUT_DIR/report/index.html and its PNG figures, with a section for each study the file
holds (alignment, merging, PRISM, encoder roles, the real networks) and the run facts.
`--library` names the results file of a model-library run (configs/default.yaml): the real
networks' section sets its numbers beside that run's and the papers'. Nothing measured is
written into this package; the papers' published numbers are in references.py. Uses only
h5py, numpy and matplotlib (Agg): Debian's packages, or `pip install "./python[report]"`.
Importing compatnets alone does not import this subpackage, nor h5py or matplotlib.
"""
