"""One subset of the encoder-roles study on the PyTorch library: the subset's vision encoders,
a projector and six task heads, trained together (`--tune joint`) or on the encoders'
frozen features (`--tune frozen`).

    python3 -m compatnets.roles --encoders cnn_sup+vit_mae --pool cnn_sup+...+mlp_ae
        --models DIR --data DATA --replicate 1 --out WORKDIR --result FILE
        [--tune joint] [--steps 300] [--batch 128] [--lr 1e-3] [--encoder-lr-scale 0.1]
        [--pool-model FILE]

DIR is a library trained by `compatnets.train`: each encoder's weights DIR/models/<e>.safetensors
(metadata family and dim) and features DIR/features/<e>/<split>.safetensors. Before anything
trains, every pool encoder is checked against them: its features are `dim` wide and have one
row per image of their split; a disagreement is refused naming the file.

The model: each encoder's output, standardised with the mean and spread of its features on
the `train` images (fixed, so both variants start from the same inputs), the blocks
concatenated -> projector (64, ReLU) -> one head per benchmark. `joint` trains the encoders
(from the library's weights, at lr × encoder-lr-scale) with the projector and heads (at lr);
`frozen` trains only the projector and heads. Both draw the same batches of the `train`
images and are scored on the test images (`flickr` and `coco`). The benchmarks:

    Classes      fine        the 10 Fashion-MNIST classes
                 coarse      the 4 groups (top, dress or trousers, footwear, bag)
    Shape        aspect      the tertile of the object's height / width (3 classes)
                 symmetry    the tertile of its left-right symmetry
    Appearance   ink         the tertile of the share of inked pixels
                 brightness  the tertile of the ink's brightness

Written (the `encoder_subset` kind's contract): FILE {"<benchmark>": accuracy, ...} of the
model trained on the subset (training-time removal); WORKDIR/features.safetensors each
subset encoder's pre-projector block on the `probe` images after training (what the
projector reads: the standardised output; for the effective rank); WORKDIR/im.json the
full-pool model of this replicate scored with the other encoders' blocks zeroed
(inference-time masking). That model is read from --pool-model (the full pool's
WORKDIR/model.safetensors: a run on the whole pool writes it, with its pool, variant,
replicate, settings and a digest of the library's files, all checked on reading), else
trained here. Every pool encoder's stored features must also be its model's output (its
first 64 `train` images, to 1e-3).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

from .jobs import as_images, deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import captions as cap  # noqa: E402
from .finetune import backbone  # noqa: E402
from .safetensors import load, read, save  # noqa: E402

BENCHMARKS = {"fine": 10, "coarse": 4, "aspect": 3, "symmetry": 3, "ink": 3, "brightness": 3}
SPLITS = ("train", "probe", "flickr", "coco")
TUNES = ("joint", "frozen")


def targets(data, split, cuts):
    """{benchmark: labels} of a split's images."""
    t = load(os.path.join(data, "images", split + ".safetensors"))
    attrs = {a: t["attributes"][:, i] for i, a in enumerate(cap.ATTRIBUTES)}
    b = cap.bins(attrs, cuts)
    out = {"fine": t["labels"], "coarse": t["coarse"]}
    out.update({a: b[:, i] for i, a in enumerate(cap.ATTRIBUTES)})
    return {k: torch.from_numpy(np.asarray(v, np.int64)) for k, v in out.items()}


class Library:
    """The pool's encoders in DIR, checked against their features and the data's images."""

    def __init__(self, models_dir, data, pool):
        self.dir, self.pool, self.dims = models_dir, pool, {}
        self.images = {s: load(os.path.join(data, "images", s + ".safetensors"))["images"] for s in SPLITS}
        for e in pool:
            enc, self.dims[e] = backbone(models_dir, e)  # a vision encoder written by compatnets.train
            for s in SPLITS:
                self._check(e, s)
            self._check_weights(e, enc)

    def _check(self, e, split):
        path = self.feature_path(e, split)
        f = load(path)["features"]
        rows = len(self.images[split])
        if f.ndim != 2 or f.shape[1] != self.dims[e]:
            raise ValueError(f"{path}: features of shape {tuple(f.shape)}, but the model "
                             f"{e}.safetensors gives {self.dims[e]} features per image")
        if f.shape[0] != rows:
            raise ValueError(f"{path}: {f.shape[0]} rows, but the {split} split has {rows} images")

    @torch.no_grad()
    def _check_weights(self, e, enc):
        """The stored `train` features are the model's own output (its first 64 images)."""
        enc.eval()
        mine = enc(as_images(self.images["train"][:64])).numpy()
        stored = self.features(e, "train")[:64].numpy()
        if np.abs(mine - stored).max() > 1e-3 * (1 + np.abs(stored).max()):
            raise ValueError(f"{self.feature_path(e, 'train')}: not the output of the model "
                             f"{os.path.join(self.dir, 'models', e + '.safetensors')} (re-exported "
                             "one without the other?)")

    def digest(self):
        """SHA-256 over the pool's model and train-feature files: what a saved model depends on."""
        h = hashlib.sha256()
        for e in self.pool:
            for path in (os.path.join(self.dir, "models", e + ".safetensors"), self.feature_path(e, "train")):
                with open(path, "rb") as f:
                    h.update(f.read())
        return h.hexdigest()

    def feature_path(self, e, split):
        return os.path.join(self.dir, "features", e, split + ".safetensors")

    def features(self, e, split):
        return torch.from_numpy(load(self.feature_path(e, split))["features"].astype(np.float32))

    def encoder(self, e):
        return backbone(self.dir, e)[0]


class Model(nn.Module):
    """Standardised encoder blocks, concatenated -> projector (64, ReLU) -> one head per
    benchmark. The encoders are part of the model (the `joint` variant trains them); a
    frozen model reads its blocks from the stored features instead of running them."""

    def __init__(self, lib, names):
        super().__init__()
        self.names = list(names)
        self.encoders = nn.ModuleDict({e: lib.encoder(e) for e in self.names})
        for e in self.names:
            train = lib.features(e, "train")
            self.register_buffer("mean_" + e, train.mean(0))
            self.register_buffer("sd_" + e, train.std(0) + 1e-6)
        width = sum(lib.dims[e] for e in self.names)
        self.proj = nn.Sequential(nn.Linear(width, 64), nn.ReLU())
        self.heads = nn.ModuleDict({b: nn.Linear(64, n) for b, n in BENCHMARKS.items()})

    def standardise(self, e, z):
        return (z - getattr(self, "mean_" + e)) / getattr(self, "sd_" + e)

    def forward(self, blocks, keep=None):
        """Scores of {benchmark: logits} from each encoder's block; `keep` names the blocks
        kept, the others zeroed (inference-time masking)."""
        h = torch.cat([blocks[e] if keep is None or e in keep else torch.zeros_like(blocks[e])
                       for e in self.names], 1)
        h = self.proj(h)
        return {b: head(h) for b, head in self.heads.items()}


class Blocks:
    """Each encoder's standardised block of a split's rows: from the encoders on the images
    (joint), or from the stored features (frozen: the same numbers without the encoders)."""

    def __init__(self, model, lib, split, joint):
        self.model, self.joint = model, joint
        self.images = as_images(lib.images[split]) if joint else None
        self.stored = None if joint else {e: lib.features(e, split) for e in model.names}

    def rows(self, idx=None):
        if self.joint:
            x = self.images if idx is None else self.images[idx]
            return {e: self.model.standardise(e, enc(x)) for e, enc in self.model.encoders.items()}
        return {e: self.model.standardise(e, f if idx is None else f[idx]) for e, f in self.stored.items()}

    @torch.no_grad()
    def all(self):
        """Every row, in batches of 256 with the encoders in evaluation mode."""
        self.model.eval()
        n = len(self.images) if self.joint else len(next(iter(self.stored.values())))
        parts = [self.rows(torch.arange(i, min(i + 256, n))) for i in range(0, n, 256)]
        self.model.train()
        return {e: torch.cat([p[e] for p in parts]) for e in self.model.names}


def train_model(model, blocks, y, a, seed):
    """Adam on the summed cross-entropies; the encoders (joint) at lr × encoder-lr-scale."""
    g = deterministic(seed)
    groups = [{"params": list(model.proj.parameters()) + list(model.heads.parameters()), "lr": a.lr}]
    if a.tune == "joint":
        groups.append({"params": list(model.encoders.parameters()), "lr": a.lr * a.encoder_lr_scale})
    else:
        model.encoders.requires_grad_(False)
    opt = torch.optim.Adam(groups)
    n = len(y["fine"])
    for _ in range(a.steps):
        idx = torch.randint(0, n, (a.batch,), generator=g)
        out = model(blocks.rows(idx))
        loss = sum(F.cross_entropy(out[b], y[b][idx]) for b in BENCHMARKS)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


@torch.no_grad()
def scores(model, blocks, y, keep=None):
    out = model(blocks, keep)
    return {b: float((out[b].argmax(1) == y[b]).float().mean()) for b in BENCHMARKS}


class Study:
    """What every model of one run reads: the library, the labels and the test split."""

    def __init__(self, a, pool):
        self.a, self.lib = a, Library(a.models, a.data, pool)
        with open(os.path.join(a.data, "data.json")) as f:
            cuts = json.load(f)["thresholds"]
        self.y_train = targets(a.data, "train", cuts)
        tests = [targets(a.data, s, cuts) for s in ("flickr", "coco")]
        self.y_test = {k: torch.cat([t[k] for t in tests]) for k in BENCHMARKS}
        self.lib.images["test"] = np.concatenate([self.lib.images["flickr"], self.lib.images["coco"]])

    def blocks(self, model, split):
        if split == "test" and self.a.tune == "frozen":
            parts = [Blocks(model, self.lib, s, False).all() for s in ("flickr", "coco")]
            return {e: torch.cat([p[e] for p in parts]) for e in model.names}
        return Blocks(model, self.lib, split, self.a.tune == "joint").all()

    def trained(self, names, seed):
        model = Model(self.lib, names)
        torch.manual_seed(seed)  # the projector and heads: the same start in both variants
        for layer in [model.proj[0], *model.heads.values()]:
            layer.reset_parameters()
        return train_model(model, Blocks(model, self.lib, "train", self.a.tune == "joint"),
                           self.y_train, self.a, seed)

    def score(self, model, keep=None):
        return scores(model, self.blocks(model, "test"), self.y_test, keep)


def model_metadata(study, names):
    """What a full-pool model's use for masking depends on: its pool, variant, replicate,
    training settings and the library's files."""
    a = study.a
    return {"pool": "+".join(names), "tune": a.tune, "replicate": str(a.replicate),
            "steps": str(a.steps), "batch": str(a.batch), "lr": repr(a.lr),
            "encoder_lr_scale": repr(a.encoder_lr_scale) if a.tune == "joint" else "",
            "library": study.lib.digest()}


def save_model(path, model, study):
    tmp = f"{path}.{os.getpid()}.tmp"
    meta = dict(model_metadata(study, model.names), format="pt")
    save(tmp, {k: v.detach().numpy() for k, v in model.state_dict().items()}, metadata=meta)
    os.replace(tmp, path)


def pool_model(study, pool, seed):
    """The replicate's full-pool model: read from --pool-model, else trained here."""
    path = study.a.pool_model
    if not path:
        return study.trained(pool, seed)
    f = read(path)
    for key, want in model_metadata(study, pool).items():
        if f.metadata.get(key) != want:
            raise ValueError(f"{path}: a model of {key} {f.metadata.get(key)!r}; this run needs "
                             f"{want!r} (the full pool's task of another run or library?)")
    model = Model(study.lib, pool)
    try:
        model.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    except RuntimeError as e:
        raise ValueError(f"{path}: its tensors do not fit the pool's model ({e})") from None
    return model


def run(a):
    if a.tune not in TUNES:
        raise ValueError(f"--tune {a.tune}: one of {', '.join(TUNES)}")
    if a.steps < 0 or a.batch < 1:
        raise ValueError(f"--steps {a.steps} --batch {a.batch}: steps >= 0 and batch >= 1")
    seed = 1000 + a.replicate
    deterministic(seed)
    subset = a.encoders.split("+")
    pool = a.pool.split("+") if a.pool else subset
    if not set(subset) <= set(pool):
        raise ValueError(f"the subset {a.encoders} is not within the pool {a.pool}")
    study = Study(a, pool)
    whole = set(subset) == set(pool)
    model = study.trained(pool if whole else subset, seed)  # the full pool in the pool's order
    tr = study.score(model)
    os.makedirs(a.out, exist_ok=True)
    probe = study.blocks(model, "probe")
    save(os.path.join(a.out, "features.safetensors"), {e: probe[e].numpy() for e in subset})
    if whole:
        save_model(os.path.join(a.out, "model.safetensors"), model, study)
        im = tr
    else:
        im = study.score(pool_model(study, pool, seed), keep=set(subset))
    with open(os.path.join(a.out, "im.json"), "w") as f:
        json.dump(im, f)
    return tr


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m compatnets.roles", description=__doc__.split("\n")[0])
    for name in ("encoders", "models", "data", "out"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--pool", help="the full pool, '+'-joined (default: the subset)")
    p.add_argument("--replicate", type=int, default=0)
    p.add_argument("--tune", default="joint", help="joint (encoders trained too) or frozen")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--encoder-lr-scale", type=float, default=0.1)
    p.add_argument("--pool-model", help="the full pool's model.safetensors of this replicate")
    p.add_argument("--result")
    a = p.parse_args(argv)
    return finish(run, a, a.result)


if __name__ == "__main__":
    sys.exit(main())
