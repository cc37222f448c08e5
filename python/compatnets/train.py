"""Trains one encoder of the PyTorch library (or a pair trained together) and exports what
compatbench reads.

    python3 -m compatnets.train --model cnn_simclr --data DATA --out DIR
                                [--steps 600 --batch 128 --dim 64 --seed 1]
                                [--result FILE]

The model name is <family>_<paradigm> (compatnets.models, compatnets.paradigms): cnn_sup,
vit_mae, gru_auto, ... A text family may carry its width (compatnets.models) before the
'_': tfm128_auto, gru96_masked, bow256_label; without one it has the family's default
(tfm_auto is tfm64_auto, byte for byte). Vision encoders train on the images of DATA's
`encoder` split, text encoders on its captions (DATA is a folder built by
`python3 -m compatnets.data`). A paired paradigm (`clip`) trains a vision and a text encoder
together on the split's image–caption pairs (each batch: images drawn with replacement, one of
each image's captions; one Adam over both encoders and their projection heads, as
compatnets.paradigms says): --model cnn_clip+tfm_clip names both,
`<vision family>_clip+<text family>[width]_clip`, and exports each as a model of its own
(cnn_clip, tfm_clip); neither is trained alone. Seeded, with deterministic algorithms on one
thread (compatnets/__init__.py): the same arguments give the same bytes on one host.
Written, for each encoder <model>:

    DIR/models/<model>.safetensors            the encoder's weights (F32, state-dict names);
                                              metadata format, family, modality, dim, and
                                              width (a text encoder not of its family's
                                              default width)
    DIR/features/<model>/<split>.safetensors  "features" (rows × dim, F32) of the splits
                                              train, probe, flickr, coco: one row per image
                                              (vision) or per caption (text)
    FILE (--result)                           {"probe_acc", "probe_attributes",
                                              "probe_<attribute>" for each described
                                              attribute, "params", "final_loss", "steps"};
                                              a pair: those of its vision encoder, and its
                                              text encoder's probes and params as "text_..."

probe_acc is a linear probe's accuracy on the test images (flickr and coco; text: the
flickr captions) after fitting on the first 10,000 rows of the encoder split's features;
probe_<attribute> the same probe's for the level (0..4) of each of the eight attributes the
captions describe (compatnets.captions.DESCRIBED: ink, brightness, aspect, symmetry, fill,
texture, balance, contrast; a caption's is its image's), probe_attributes their mean.
final_loss is the mean loss of the last 20 batches (null untrained: `rand`, or --steps 0).
"""
import argparse
import collections
import json
import os
import re
import sys

import numpy as np

from .jobs import as_images, deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import captions as cap  # noqa: E402
from . import models, paradigms  # noqa: E402
from . import text as tx  # noqa: E402
from .data import read_captions  # noqa: E402
from .safetensors import load, save  # noqa: E402

EXPORT_SPLITS = ("train", "probe", "flickr", "coco")
PROBE_FIT_ROWS = 10000
Spec = collections.namedtuple("Spec", "modality family paradigm width name")  # of a model name


def parse_model(name, paired=False):
    """The Spec of one <family>[width]_<paradigm> name (a width only for text families;
    the `clip` paradigm only as one of a pair, `paired`)."""
    m = re.fullmatch(r"([a-z]+)(\d*)_([a-z]+)", name)
    family, digits, paradigm = m.groups() if m else ("", "", "")
    if paradigm in paradigms.PAIRED and not paired:
        raise ValueError(f"model '{name}': {paradigm} trains a vision and a text encoder together "
                         f"and comes only from a pair, <vision family>_{paradigm}+<text family>"
                         f"[width]_{paradigm} (e.g. cnn_{paradigm}+tfm_{paradigm})")
    extra = paradigms.PAIRED if paired else ()
    if family in models.VISION and paradigm in paradigms.VISION + extra:
        if digits:
            raise ValueError(f"model '{name}': a width ({digits}) is for the text families only "
                             f"({', '.join(models.TEXT)}); vision families have one size")
        return Spec("vision", family, paradigm, None, name)
    if family in models.TEXT and paradigm in paradigms.TEXT + extra:
        if family == "char" and paradigm == "masked":
            raise ValueError(f"model '{name}': the character CNN has no masked-word paradigm")
        try:
            width = models.text_width(family, int(digits) if digits else None)
        except ValueError as e:
            raise ValueError(f"model '{name}': {e}") from None
        return Spec("text", family, paradigm, width, name)
    raise ValueError(f"model '{name}' is not <family>_<paradigm>: vision families "
                     f"{', '.join(models.VISION)} with {', '.join(paradigms.VISION)}; text families "
                     f"{', '.join(models.TEXT)} (a width may follow: tfm128_auto) with "
                     f"{', '.join(paradigms.TEXT)}; or a pair <vision>_clip+<text>_clip")


def parse(name):
    """The Specs of the encoders --model names: one (parse_model), or a vision and a text
    encoder of a paired paradigm joined by '+' (cnn_clip+tfm_clip)."""
    if "+" not in name:
        return [parse_model(name)]
    parts = name.split("+")
    ends = [p.rpartition("_")[2] for p in parts]
    if len(parts) != 2 or ends[0] not in paradigms.PAIRED or ends[1] != ends[0]:
        raise ValueError(f"model '{name}': '+' joins the two encoders of a pair trained together, "
                         f"<vision family>_clip+<text family>[width]_clip (paired paradigms: "
                         f"{', '.join(paradigms.PAIRED)})")
    pair = [parse_model(p, paired=True) for p in parts]
    if [spec.modality for spec in pair] != ["vision", "text"]:
        raise ValueError(f"model '{name}': a pair is a vision encoder, then a text encoder")
    return pair


def level_cuts(data):
    """{attribute: cuts} of the caption levels (data.json's level_cuts)."""
    path = os.path.join(data, "data.json")
    with open(path) as f:
        info = json.load(f)
    if "level_cuts" not in info:
        raise ValueError(f"{path}: no level_cuts (written by an older compatnets.data; build the "
                         "data again)")
    return info["level_cuts"]


class Split:
    """One split of a dataset folder: images (n, 1, 28, 28) in [0, 1], labels, each image's
    level (0..4) of the described attributes, captions and the image of each caption."""

    def __init__(self, data, name):
        path = os.path.join(data, "images", name + ".safetensors")
        t = load(path)
        self.images = as_images(t["images"])
        self.labels = torch.from_numpy(t["labels"])
        if "described" not in t:
            raise ValueError(f"{path}: no 'described' attributes (written by an older "
                             "compatnets.data; build the data again)")
        described = {a: t["described"][:, i] for i, a in enumerate(cap.DESCRIBED)}
        self.levels = torch.from_numpy(cap.levels(described, level_cuts(data)).astype(np.int64))
        self.captions = read_captions(data, name)
        self.caption_image = torch.from_numpy(
            load(os.path.join(data, "pairing", name + ".safetensors"))["caption_image"])
        self.caption_count = torch.bincount(self.caption_image, minlength=len(self.images))

    def rows(self, modality):
        return len(self.images) if modality == "vision" else len(self.captions)

    def label_of(self, modality, idx, attribute=None):
        """The class (or the level of one of DESCRIBED, `attribute`) of rows idx."""
        y = self.labels if attribute is None else self.levels[:, cap.DESCRIBED.index(attribute)]
        return y[idx] if modality == "vision" else y[self.caption_image[idx]]

    def caption_of(self, idx, g):
        """One caption row of each image of idx, uniformly among its own (image-major)."""
        first = torch.cumsum(self.caption_count, 0) - self.caption_count
        pick = torch.rand(len(idx), generator=g) * self.caption_count[idx]
        return first[idx] + pick.long()


def _one_batch(specs, encs, h, split, batch, g):
    """The loss of one batch of a single encoder's paradigm."""
    (spec,), (enc,) = specs, encs
    idx = torch.randint(0, split.rows(spec.modality), (batch,), generator=g)
    y = split.label_of(spec.modality, idx)
    if spec.modality == "vision":
        return paradigms.vision_loss(spec.paradigm, enc, h, split.images[idx], y, g)
    texts = [split.captions[i] for i in idx.tolist()]
    return paradigms.text_loss(spec.paradigm, spec.family, enc, h, texts, y, g)


def _pair_batch(specs, encs, h, split, batch, g):
    """The loss of one batch of a clip pair: images of the split, one caption each."""
    idx = torch.randint(0, len(split.images), (batch,), generator=g)
    texts = [split.captions[i] for i in split.caption_of(idx, g).tolist()]
    image_features = encs[0](split.images[idx])
    return paradigms.clip_loss(h, image_features, encs[1](tx.batch(specs[1].family, texts)))


def fit(specs, encs, split, steps, batch, g):
    """Trains the encoders (one, or a pair) and their paradigm's heads with Adam for `steps`
    batches; returns the last 20 batches' mean loss (NaN when untrained)."""
    h = paradigms.heads(specs[0].paradigm, _dim(encs[0]))
    if specs[0].paradigm == "rand" or steps == 0:
        return float("nan")
    opt = torch.optim.Adam([p for m in (*encs, h) for p in m.parameters()], lr=1e-3)
    batch_loss = _pair_batch if len(specs) == 2 else _one_batch
    losses = []
    for _ in range(steps):
        loss = batch_loss(specs, encs, h, split, batch, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return float(np.mean(losses[-20:]))


def _dim(enc):
    return [m for m in enc.modules() if isinstance(m, torch.nn.Linear)][-1].out_features


@torch.no_grad()
def features(spec, enc, split, limit=None, chunk=256):
    """The encoder's features (float32) of the split's first `limit` rows (all by default)."""
    enc.eval()
    out = []
    end = min(split.rows(spec.modality), limit or split.rows(spec.modality))
    for i in range(0, end, chunk):
        j = min(i + chunk, end)
        x = (split.images[i:j] if spec.modality == "vision"
             else tx.batch(spec.family, split.captions[i:j]))
        out.append(enc(x))
    enc.train()
    return torch.cat(out).numpy().astype(np.float32)


def linear_probe(train_x, train_y, test_x, test_y, classes=10, steps=300):
    """Accuracy of a softmax regression over `classes` classes on standardised features
    (full batch, Adam)."""
    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    a, b = torch.from_numpy((train_x - mu) / sd), torch.from_numpy((test_x - mu) / sd)
    w = torch.nn.Linear(a.shape[1], classes)
    opt = torch.optim.Adam(w.parameters(), lr=0.05, weight_decay=1e-4)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(w(a), train_y).backward()
        opt.step()
    with torch.no_grad():
        return float((w(b).argmax(1) == test_y).float().mean())


def quality(spec, enc, data, fit_split):
    """Linear probes fitted on the encoder split's first PROBE_FIT_ROWS rows, scored on the
    test rows (the flickr and coco images; text: the flickr captions): probe_acc (the class),
    probe_<attribute> (its level, each of DESCRIBED) and probe_attributes (their mean)."""
    train_x = features(spec, enc, fit_split, limit=PROBE_FIT_ROWS)
    fit_rows = torch.arange(len(train_x))
    m = spec.modality
    test = [Split(data, s) for s in (["flickr", "coco"] if m == "vision" else ["flickr"])]
    test_x = np.concatenate([features(spec, enc, t) for t in test])
    out = {}
    for attribute in [None] + cap.DESCRIBED:  # the class first: its probe draws as it always has
        test_y = torch.cat([t.label_of(m, torch.arange(t.rows(m)), attribute) for t in test])
        out["probe_" + (attribute or "acc")] = linear_probe(
            train_x, fit_split.label_of(m, fit_rows, attribute), test_x, test_y,
            len(cap.CLASSES) if attribute is None else cap.LEVELS)
    out["probe_attributes"] = float(np.mean([out["probe_" + a] for a in cap.DESCRIBED]))
    return out


def export(spec, enc, data, out):
    """Writes the weights and the features of every exported split."""
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    state = {k: v.detach().numpy().astype(np.float32) for k, v in enc.state_dict().items()}
    meta = {"format": "pt", "family": spec.family, "modality": spec.modality,
            "dim": str(_dim(enc))}
    if spec.width is not None and spec.width != models.TEXT_WIDTH[spec.family]:
        meta["width"] = str(spec.width)  # the default's files keep their bytes of before
    save(os.path.join(out, "models", spec.name + ".safetensors"), state, metadata=meta)
    folder = os.path.join(out, "features", spec.name)
    os.makedirs(folder, exist_ok=True)
    for split in EXPORT_SPLITS:
        f = features(spec, enc, Split(data, split))
        if not np.isfinite(f).all():
            raise ValueError(f"model '{spec.name}': its {split} features hold NaN or infinite "
                             "values (training diverged)")
        save(os.path.join(folder, split + ".safetensors"), {"features": f})


def run(a):
    specs = parse(a.model)
    g = deterministic(a.seed)
    encs = [models.encoder(s.family, a.dim, tx.vocab_size(s.family) if s.modality == "text"
                           else None, s.width) for s in specs]
    split = Split(a.data, "encoder")
    loss = fit(specs, encs, split, a.steps, a.batch, g)
    for spec, enc in zip(specs, encs):
        export(spec, enc, a.data, a.out)
    result = {}
    for prefix, spec, enc in zip(("", "text_"), specs, encs):  # a pair's text encoder: text_
        result.update({prefix + k: v for k, v in quality(spec, enc, a.data, split).items()})
        result[prefix + "params"] = sum(p.numel() for p in enc.parameters())
    result.update(final_loss=None if np.isnan(loss) else loss,  # null: untrained
                  steps=a.steps if specs[0].paradigm != "rand" else 0)
    return result


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
