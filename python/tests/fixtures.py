"""Shared set-up of the package's tests: a made-up dataset shaped like Fashion-MNIST, and
command-line entry points called quietly."""
import contextlib
import importlib
import io
import os
import tempfile

import numpy as np

from compatnets.data import build
from compatnets.idx import write_idx

SIZES = {"encoder": 150, "train": 60, "probe": 40, "eval": 30}


def fake_source(folder, n_train=300, n_test=100):
    """IDX files shaped like Fashion-MNIST: a bright block whose size and place follow the label."""
    rng = np.random.default_rng(3)
    for stem, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = rng.integers(0, 20, (n, 28, 28)).astype(np.uint8)
        for i, y in enumerate(labels):
            images[i, 4:8 + 2 * y, 6:10 + y] = 100 + 15 * y
        write_idx(os.path.join(folder, f"{stem}-images-idx3-ubyte.gz"), images)
        write_idx(os.path.join(folder, f"{stem}-labels-idx1-ubyte.gz"), labels)


class MadeUpData:
    """A test-case mixin: cls.dir (a temporary folder) and cls.data (a dataset built by
    compatnets.data from made-up IDX files, 3 captions per image; images this alike cannot
    reach the oracle minimum, so it is not checked)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        src = os.path.join(cls.dir.name, "src")
        os.makedirs(src)
        fake_source(src)
        cls.data = os.path.join(cls.dir.name, "data")
        build(cls.data, SIZES, 3, 1, src, check_oracle=False)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()


def quiet(fn, args):
    """(exit code, stderr) of a module's main(args), its output swallowed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        return fn(args), err.getvalue()


def torch_module(name):
    """compatnets.<name>, or None when PyTorch cannot be imported (those tests skip). The
    modules exit with a message naming python3-torch when it is missing."""
    try:
        return importlib.import_module("compatnets." + name)
    except (ImportError, SystemExit):
        return None
