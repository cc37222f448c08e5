"""compatnets: the Python side of compatbench.

compatbench itself is C++ and needs no Python. This package holds what a researcher's
own PyTorch or numpy code needs to meet it:

- ``compatnets.safetensors``: a small, numpy-only safetensors reader and writer (Debian
  packages no safetensors module), to export feature matrices and checkpoints that
  compatbench reads, and to read back the merged checkpoints it writes.
- ``compatnets.report``: the HTML report of a run (``python3 -m compatnets.report OUT_DIR``,
  what ``compatbench report`` runs); it needs h5py and matplotlib (the ``report`` extra), and
  ``import compatnets`` does not load it.

Install it into a virtual environment (``pip install ./python``; ``pip install
"./python[torch]"`` for the real-network library, ``"./python[report]"`` for the report),
or put this folder on the path, as the runner's configs do with Debian's interpreter::

    import sys; sys.path.insert(0, "/path/to/compatbench/python")
    from compatnets.safetensors import save, load

Every computation here runs on one thread (OpenBLAS, OpenMP and PyTorch alike), fixed
before numpy or torch loads: the runner gives each task one core, and a thread count that
followed the cores a process sees (e.g. under `mpirun` core binding) would change the
order of floating-point sums and so the last bits of every result.
"""
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
