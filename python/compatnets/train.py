"""Trains one encoder of the PyTorch library and exports what compatbench reads.

    python3 -m compatnets.train --model cnn_simclr --data DATA --out DIR
                                [--steps 600 --batch 128 --dim 64 --seed 1]
                                [--result FILE]

The model name is <family>_<paradigm> (compatnets.models, compatnets.paradigms): cnn_sup,
vit_rot, gru_auto, ... Vision encoders train on the images of DATA's `encoder` split, text
encoders on its captions (DATA is a folder built by `python3 -m compatnets.data`). Seeded,
with deterministic algorithms on one thread (compatnets/__init__.py): the same arguments
give the same bytes on one host. Written:

    DIR/models/<model>.safetensors            the encoder's weights (F32, state-dict names)
    DIR/features/<model>/<split>.safetensors  "features" (rows × dim, F32) of the splits
                                              train, probe, flickr, coco: one row per image
                                              (vision) or per caption (text)
    FILE (--result)                           {"probe_acc", "final_loss", "steps", "params"}

probe_acc is a linear probe's accuracy on the test images (flickr and coco; text: the
flickr captions) after fitting on the encoder split's features.
"""
import argparse
import os
import sys

import numpy as np

from .jobs import as_images, deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import models, paradigms  # noqa: E402
from . import text as tx  # noqa: E402
from .data import read_captions  # noqa: E402
from .safetensors import load, save  # noqa: E402

EXPORT_SPLITS = ("train", "probe", "flickr", "coco")


def parse_model(name):
    """(modality, family, paradigm) of a <family>_<paradigm> name."""
    family, _, paradigm = name.partition("_")
    if family in models.VISION and paradigm in paradigms.VISION:
        return "vision", family, paradigm
    if family in models.TEXT and paradigm in paradigms.TEXT:
        if family == "char" and paradigm == "masked":
            raise ValueError(f"model '{name}': the character CNN has no masked-word paradigm")
        return "text", family, paradigm
    raise ValueError(f"model '{name}' is not <family>_<paradigm>: vision families "
                     f"{', '.join(models.VISION)} with {', '.join(paradigms.VISION)}; text families "
                     f"{', '.join(models.TEXT)} with {', '.join(paradigms.TEXT)}")


class Split:
    """One split of a dataset folder: images (n, 1, 28, 28) in [0, 1], labels, captions and
    the image of each caption."""

    def __init__(self, data, name):
        t = load(os.path.join(data, "images", name + ".safetensors"))
        self.images = as_images(t["images"])
        self.labels = torch.from_numpy(t["labels"])
        self.captions = read_captions(data, name)
        self.caption_image = torch.from_numpy(
            load(os.path.join(data, "pairing", name + ".safetensors"))["caption_image"])

    def rows(self, modality):
        return len(self.images) if modality == "vision" else len(self.captions)

    def label_of(self, modality, idx):
        return self.labels[idx] if modality == "vision" else self.labels[self.caption_image[idx]]


def fit(modality, family, paradigm, enc, split, steps, batch, g):
    """Trains encoder and heads for `steps` batches; returns the last 20 batches' mean loss."""
    h = paradigms.heads(paradigm, _dim(enc))
    if paradigm == "rand" or steps == 0:
        return float("nan")
    opt = torch.optim.Adam(list(enc.parameters()) + list(h.parameters()), lr=1e-3)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, split.rows(modality), (batch,), generator=g)
        y = split.label_of(modality, idx)
        if modality == "vision":
            loss = paradigms.vision_loss(paradigm, enc, h, split.images[idx], y, g)
        else:
            texts = [split.captions[i] for i in idx.tolist()]
            loss = paradigms.text_loss(paradigm, family, enc, h, texts, y, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return float(np.mean(losses[-20:]))


def _dim(enc):
    return [m for m in enc.modules() if isinstance(m, torch.nn.Linear)][-1].out_features


@torch.no_grad()
def features(modality, family, enc, split, limit=None, chunk=256):
    """The encoder's features (float32) of the split's first `limit` rows (all by default)."""
    enc.eval()
    out = []
    end = min(split.rows(modality), limit or split.rows(modality))
    for i in range(0, end, chunk):
        j = min(i + chunk, end)
        x = split.images[i:j] if modality == "vision" else tx.batch(family, split.captions[i:j])
        out.append(enc(x))
    enc.train()
    return torch.cat(out).numpy().astype(np.float32)


def linear_probe(train_x, train_y, test_x, test_y, steps=300):
    """Accuracy of a softmax regression on standardised features (full batch, Adam)."""
    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    a, b = torch.from_numpy((train_x - mu) / sd), torch.from_numpy((test_x - mu) / sd)
    w = torch.nn.Linear(a.shape[1], 10)
    opt = torch.optim.Adam(w.parameters(), lr=0.05, weight_decay=1e-4)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(w(a), train_y).backward()
        opt.step()
    with torch.no_grad():
        return float((w(b).argmax(1) == test_y).float().mean())


def quality(modality, family, enc, data, fit_split):
    """The linear-probe accuracy on the test images (text: the flickr captions)."""
    train_x = features(modality, family, enc, fit_split, limit=10000)
    train_y = fit_split.label_of(modality, torch.arange(len(train_x)))
    tests = ["flickr", "coco"] if modality == "vision" else ["flickr"]
    test = [Split(data, s) for s in tests]
    test_x = np.concatenate([features(modality, family, enc, t) for t in test])
    test_y = torch.cat([t.label_of(modality, torch.arange(t.rows(modality))) for t in test])
    return linear_probe(train_x, train_y, test_x, test_y)


def export(model, modality, family, enc, data, out):
    """Writes the weights and the features of every exported split."""
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    state = {k: v.detach().numpy().astype(np.float32) for k, v in enc.state_dict().items()}
    save(os.path.join(out, "models", model + ".safetensors"), state,
         metadata={"format": "pt", "family": family, "modality": modality,
                   "dim": str(_dim(enc))})
    folder = os.path.join(out, "features", model)
    os.makedirs(folder, exist_ok=True)
    for split in EXPORT_SPLITS:
        f = features(modality, family, enc, Split(data, split))
        if not np.isfinite(f).all():
            raise ValueError(f"model '{model}': its {split} features hold NaN or infinite values "
                             "(training diverged)")
        save(os.path.join(folder, split + ".safetensors"), {"features": f})


def run(a):
    modality, family, paradigm = parse_model(a.model)
    g = deterministic(a.seed)
    vocab = tx.vocab_size(family) if modality == "text" else None
    enc = models.encoder(family, a.dim, vocab)
    split = Split(a.data, "encoder")
    loss = fit(modality, family, paradigm, enc, split, a.steps, a.batch, g)
    export(a.model, modality, family, enc, a.data, a.out)
    return {"probe_acc": quality(modality, family, enc, a.data, split),
            "final_loss": None if np.isnan(loss) else loss,  # null: untrained
            "steps": a.steps if paradigm != "rand" else 0,
            "params": sum(p.numel() for p in enc.parameters())}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m compatnets.train", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    for name, default in (("steps", 600), ("batch", 128), ("dim", 64), ("seed", 1)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--result", help="a JSON file for the task's outputs")
    a = p.parse_args(argv)
    return finish(run, a, a.result, errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
