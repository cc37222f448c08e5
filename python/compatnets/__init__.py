"""compatnets: the Python side of compatbench.

compatbench itself is C++ and needs no Python. This package holds what a researcher's
own PyTorch or numpy code needs to meet it:

- ``compatnets.safetensors``: a small, numpy-only safetensors reader and writer (Debian
  packages no safetensors module), to export feature matrices and checkpoints that
  compatbench reads, and to read back the merged checkpoints it writes.

Import it by putting this folder on the path::

    import sys; sys.path.insert(0, "/path/to/compatbench/python")
    from compatnets.safetensors import save, load
"""
