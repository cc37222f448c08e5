"""One subset of the encoder-roles study on the PyTorch library: a projector and task heads
trained on the concatenated frozen features of a subset of vision encoders.

    python3 -m compatnets.roles --encoders cnn_sup+vit_rot --features DIR --data DATA
                                --replicate 0 --out WORKDIR --result FILE [--steps 300]

The encoders' features come from `compatnets.train` (DIR/<encoder>/<split>.safetensors);
the model trains on the `train` split's images and is scored on the test images (`flickr`
and `coco`). The benchmarks, each a classification from the frozen features:

    Classes      fine        the 10 Fashion-MNIST classes
                 coarse      the 4 groups (top, dress or trousers, footwear, bag)
    Shape        aspect      the tertile of the object's height / width (3 classes)
                 symmetry    the tertile of its left-right symmetry
    Appearance   ink         the tertile of the share of inked pixels
                 brightness  the tertile of the ink's brightness

Written (the `encoder_subset` kind's contract): FILE {"<benchmark>": accuracy, ...} of the
model trained on the subset (training-time removal); WORKDIR/im.json the same for the
full-pool model of this replicate with the other encoders' features zeroed (inference-time
masking; --pool names the full pool); WORKDIR/features.safetensors each subset encoder's
probe features (its pre-projector features, for the effective rank).
"""
import argparse
import json
import os
import sys

import numpy as np

from .jobs import deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import captions as cap  # noqa: E402
from .safetensors import load, save  # noqa: E402

BENCHMARKS = {"fine": 10, "coarse": 4, "aspect": 3, "symmetry": 3, "ink": 3, "brightness": 3}


def targets(data, split, cuts):
    """{benchmark: labels} of a split's images."""
    t = load(os.path.join(data, "images", split + ".safetensors"))
    attrs = {a: t["attributes"][:, i] for i, a in enumerate(cap.ATTRIBUTES)}
    b = cap.bins(attrs, cuts)
    out = {"fine": t["labels"], "coarse": t["coarse"]}
    out.update({a: b[:, i] for i, a in enumerate(cap.ATTRIBUTES)})
    return {k: torch.from_numpy(np.asarray(v, np.int64)) for k, v in out.items()}


def features(folder, encoders, splits):
    """{encoder: float32 tensor} of each encoder's features, the splits stacked in order."""
    out = {}
    for e in encoders:
        parts = [load(os.path.join(folder, e, s + ".safetensors"))["features"] for s in splits]
        out[e] = torch.from_numpy(np.concatenate(parts).astype(np.float32))
    return out


class Model(nn.Module):
    """Standardised concatenated features -> projector (64, ReLU) -> one head per benchmark."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim, 64), nn.ReLU())
        self.heads = nn.ModuleDict({b: nn.Linear(64, n) for b, n in BENCHMARKS.items()})

    def forward(self, x):
        h = self.proj(x)
        return {b: head(h) for b, head in self.heads.items()}


def train_model(x, y, seed, steps, batch=256):
    g = deterministic(seed)
    model = Model(x.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch,), generator=g)
        out = model(x[idx])
        loss = sum(F.cross_entropy(out[b], y[b][idx]) for b in BENCHMARKS)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


@torch.no_grad()
def scores(model, x, y):
    out = model(x)
    return {b: float((out[b].argmax(1) == y[b]).float().mean()) for b in BENCHMARKS}


def standardise(train, test):
    mu, sd = train.mean(0), train.std(0) + 1e-6
    return (train - mu) / sd, (test - mu) / sd


def run(a):
    seed = 1000 + a.replicate
    deterministic(seed)
    subset = a.encoders.split("+")
    pool = a.pool.split("+") if a.pool else subset
    if not set(subset) <= set(pool):
        raise ValueError(f"the subset {a.encoders} is not within the pool {a.pool}")
    with open(os.path.join(a.data, "data.json")) as f:
        cuts = json.load(f)["thresholds"]
    y_train = targets(a.data, "train", cuts)
    tests = [targets(a.data, s, cuts) for s in ("flickr", "coco")]
    y_test = {k: torch.cat([t[k] for t in tests]) for k in BENCHMARKS}
    train_f, test_f = features(a.features, pool, ["train"]), features(a.features, pool, ["flickr", "coco"])
    xs, xt = standardise(torch.cat([train_f[e] for e in subset], 1), torch.cat([test_f[e] for e in subset], 1))
    tr = scores(train_model(xs, y_train, seed, a.steps), xt, y_test)
    xs, xt = standardise(torch.cat([train_f[e] for e in pool], 1), torch.cat([test_f[e] for e in pool], 1))
    keep = torch.cat([torch.full((test_f[e].shape[1],), float(e in subset)) for e in pool])
    im = scores(train_model(xs, y_train, seed, a.steps), xt * keep, y_test)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "im.json"), "w") as f:
        json.dump(im, f)
    probe = features(a.features, subset, ["probe"])
    save(os.path.join(a.out, "features.safetensors"), {e: probe[e].numpy() for e in subset})
    return tr


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m compatnets.roles", description=__doc__.split("\n")[0])
    for name in ("encoders", "features", "data", "out"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--pool", help="the full pool, '+'-joined (default: the subset)")
    p.add_argument("--replicate", type=int, default=0)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--result")
    a = p.parse_args(argv)
    return finish(run, a, a.result)


if __name__ == "__main__":
    sys.exit(main())
