"""Fine-tunes of the library's vision encoders on eight image tasks, and their evaluation.

    python3 -m compatnets.finetune --backbone cnn_sup --task rotated --models DIR --data DATA
                                   --out DIR [--steps 300 --save-steps 50,100 --seed 1]
                                   [--lr 1e-3 --tag T] [--result FILE]
    python3 -m compatnets.finetune evaluate --checkpoint MERGED --base BASE
                                   --finetuned A B [C ...] --tasks TASK_A TASK_B [TASK_C ...]
                                   --data DATA --models DIR --out FILE

A fine-tune trains the whole encoder (its weights from DIR/models/<backbone>.safetensors)
with a new head on one task, on DATA's `train` images, and is scored on the test images
(`flickr` and `coco`); `digits` uses scikit-learn's bundled 8×8 digits instead, resized to
28×28 (1,200 to train, 597 to test; kept as DATA/digits.safetensors after the first read). The tasks:

    fine      the 10 classes              rotated   the classes, images turned 90°
    coarse    the 4 groups                inverted  the classes, images negated (1 − x)
    ink       the ink tertile (3)         flipped   the classes, images upside down
    symmetry  the symmetry tertile (3)    digits    the 10 digits (scikit-learn)

Written: DIR/finetunes/<backbone>_<task>.safetensors (the encoder's tensors under the
backbone's names, then head.weight and head.bias; metadata backbone, task, steps, and
test_acc and base_test_acc: the checkpoint's test accuracy and the backbone's with the
checkpoint's head), the same at each --save-steps count as <backbone>_<task>@<steps>.safetensors,
and the fine-tune's probe features DIR/finetune_features/<backbone>+<task>/probe.safetensors.
FILE: {"ft_acc", "base_acc", "steps"}: the final test_acc and base_test_acc.

--tag T (letters, digits, '-' and '.'; e.g. the learning rate's level, lr1e-3) names a
fine-tune apart from the others of its backbone and task: DIR/finetunes/<backbone>_<task>_<T>
.safetensors (and <backbone>_<task>_<T>@<steps>.safetensors), the probe features in
DIR/finetune_features/<backbone>_<T>+<task>/, and metadata tag and lr besides. Without it,
the names and bytes are those above.

`evaluate` scores a merged checkpoint of K fine-tunes with each fine-tune's own head on its
task's test images, beside the fine-tune and the base with the same head (read from the
fine-tune's metadata when it holds them for this base, else computed), and writes
acc_i, ft_acc_i and base_acc_i for i = 1..K (what compatbench's kway_merge reads), and for
K = 2 also acc_a, acc_b, ft_acc_a, ft_acc_b, base_acc_a, base_acc_b (what merge_pair reads).
The encoder runs once per distinct set of test images: fine, coarse, ink and symmetry share
theirs.
"""
import argparse
import json
import os
import re
import sys

import numpy as np

from .jobs import as_images, deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import captions as cap  # noqa: E402
from . import models  # noqa: E402
from .safetensors import load, read, save  # noqa: E402

TASKS = {"fine": 10, "coarse": 4, "ink": 3, "symmetry": 3, "rotated": 10, "inverted": 10,
         "flipped": 10, "digits": 10}


def _fashion(data, splits, task, cuts):
    images, labels = [], []
    for s in splits:
        t = load(os.path.join(data, "images", s + ".safetensors"))
        x = as_images(t["images"])
        attrs = {a: t["attributes"][:, i] for i, a in enumerate(cap.ATTRIBUTES)}
        y = {"coarse": t["coarse"], "ink": cap.bins(attrs, cuts)[:, 0],
             "symmetry": cap.bins(attrs, cuts)[:, 3]}.get(task, t["labels"])
        images.append(x)
        labels.append(torch.from_numpy(np.asarray(y, np.int64)))
    x = torch.cat(images)
    x = {"rotated": lambda v: torch.rot90(v, 1, (2, 3)), "inverted": lambda v: 1 - v,
         "flipped": lambda v: v.flip(2)}.get(task, lambda v: v)(x)
    return x, torch.cat(labels)


def _digits_source(data):
    """scikit-learn's bundled digits: images (n, 8, 8) of 0..16 and labels. Kept as
    DATA/digits.safetensors after the first read: importing scikit-learn costs more than the
    rest of a merge's evaluation."""
    path = os.path.join(data, "digits.safetensors")
    if os.path.exists(path):
        t = load(path)
        return t["images"], t["labels"]
    from sklearn.datasets import load_digits  # Debian's python3-sklearn
    d = load_digits()
    images, labels = d.images.astype(np.uint8), d.target.astype(np.int64)
    tmp = f"{path}.{os.getpid()}.tmp"  # ranks may write it at once: each its own, renamed
    save(tmp, {"images": images, "labels": labels})
    os.replace(tmp, path)
    return images, labels


def _digits(data, test):
    images, labels = _digits_source(data)
    x = torch.from_numpy(images.astype(np.float32) / 16.0).unsqueeze(1)
    x = F.pad(F.interpolate(x, size=(20, 20), mode="bilinear", align_corners=False), (4, 4, 4, 4))
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    rows = order[1200:] if test else order[:1200]
    return x[rows].clamp(0, 1), torch.from_numpy(labels)[rows]


def task_data(data, task, test):
    """(images (n, 1, 28, 28) in [0, 1], labels) of a task's training or test set."""
    if task == "digits":
        return _digits(data, test)
    with open(os.path.join(data, "data.json")) as f:
        cuts = json.load(f)["thresholds"]
    return _fashion(data, ["flickr", "coco"] if test else ["train"], task, cuts)


_TEST_SETS = {}  # (data folder, data.json's time, task) -> test set, kept by a served process


def test_data(data, task):
    """task_data(data, task, test=True), read once per process while data.json is unchanged:
    a long-lived server (compatnets.serve) evaluates many merges on the same test sets."""
    stamp = os.stat(os.path.join(data, "data.json")).st_mtime_ns
    key = (os.path.realpath(data), stamp, task)
    if key not in _TEST_SETS:
        _TEST_SETS[key] = task_data(data, task, test=True)
    return _TEST_SETS[key]


def backbone(models_dir, name):
    """(encoder with the backbone's weights, its family)."""
    path = os.path.join(models_dir, "models", name + ".safetensors")
    f = read(path)
    if "family" not in f.metadata or "dim" not in f.metadata:
        raise ValueError(f"{path}: no family or dim in its metadata (not written by compatnets.train)")
    if f.metadata.get("modality", "vision") != "vision":
        raise ValueError(f"{path}: a {f.metadata['modality']} encoder; fine-tunes and encoder pools take vision encoders")
    dim = int(f.metadata["dim"])
    enc = models.encoder(f.metadata["family"], dim)
    enc.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    return enc, dim


def image_set(task):
    """Which test images a task reads: tasks with the same set share the encoder's features."""
    return task if task in ("digits", "rotated", "inverted", "flipped") else "plain"


@torch.no_grad()
def features(enc, x):
    """The encoder's features of images x, in batches of 256 (kept apart: heads see batches)."""
    enc.eval()
    out = [enc(x[i:i + 256]) for i in range(0, len(x), 256)]
    enc.train()
    return out


@torch.no_grad()
def accuracy_of(head, feats, y):
    pred = torch.cat([head(z).argmax(1) for z in feats])
    return float((pred == y).float().mean())


def accuracy(enc, head, x, y):
    return accuracy_of(head, features(enc, x), y)


def state(enc, head):
    out = {k: v.detach().numpy().astype(np.float32) for k, v in enc.state_dict().items()}
    out.update({"head.weight": head.weight.detach().numpy(), "head.bias": head.bias.detach().numpy()})
    return out


def finetune(a):
    """Trains, saves and scores one fine-tune (and each saved step); returns the result."""
    if a.task not in TASKS:
        raise ValueError(f"unknown task '{a.task}' (one of {', '.join(TASKS)})")
    if a.tag is not None and not re.fullmatch(r"[A-Za-z0-9.-]+", a.tag):
        raise ValueError(f"fine-tune tag '{a.tag}': letters, digits, '-' and '.' only")
    g = deterministic(a.seed)
    enc, dim = backbone(a.models, a.backbone)
    head = nn.Linear(dim, TASKS[a.task])
    x, y = task_data(a.data, a.task, test=False)
    tx, ty = task_data(a.data, a.task, test=True)
    base_feats = features(backbone(a.models, a.backbone)[0], tx)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=a.lr)
    tag = "" if a.tag is None else "_" + a.tag
    name, saves = f"{a.backbone}_{a.task}{tag}", {int(s) for s in a.save_steps.split(",") if s}
    tagged = {} if a.tag is None else {"tag": a.tag, "lr": repr(a.lr)}
    folder = os.path.join(a.out, "finetunes")
    os.makedirs(folder, exist_ok=True)

    def scored_save(path, step):
        """Saves the checkpoint with its test accuracy and the base's (same head)."""
        scores = {"test_acc": accuracy(enc, head, tx, ty), "base_test_acc": accuracy_of(head, base_feats, ty)}
        meta = {"format": "pt", "backbone": a.backbone, "task": a.task, "steps": str(step), **tagged}
        save(path, state(enc, head), metadata=dict(meta, **{k: repr(v) for k, v in scores.items()}))
        return scores

    for step in range(1, a.steps + 1):
        idx = torch.randint(0, len(x), (a.batch,), generator=g)
        loss = F.cross_entropy(head(enc(x[idx])), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step in saves:
            scored_save(os.path.join(folder, f"{name}@{step}.safetensors"), step)
    scores = scored_save(os.path.join(folder, name + ".safetensors"), a.steps)
    probe = load(os.path.join(a.data, "images", "probe.safetensors"))["images"]
    with torch.no_grad():
        enc.eval()
        f = enc(as_images(probe)).numpy()
    ff = os.path.join(a.out, "finetune_features", f"{a.backbone}{tag}+{a.task}")
    os.makedirs(ff, exist_ok=True)
    save(os.path.join(ff, "probe.safetensors"), {"features": f.astype(np.float32)})
    return {"ft_acc": scores["test_acc"], "base_acc": scores["base_test_acc"], "steps": a.steps}


def _head(path):
    h = load(path)
    head = nn.Linear(h["head.weight"].shape[1], h["head.weight"].shape[0])
    head.load_state_dict({"weight": torch.from_numpy(h["head.weight"]),
                          "bias": torch.from_numpy(h["head.bias"])})
    return head


class _Scorer:
    """One encoder's weights scored with many heads: features once per set of test images."""

    def __init__(self, enc, weights, tests):
        w = load(weights)
        missing = [k for k in enc.state_dict() if k not in w]
        if missing:
            raise ValueError(f"{weights}: no tensor '{missing[0]}' (the backbone has it)")
        try:
            enc.load_state_dict({k: torch.from_numpy(w[k]) for k in enc.state_dict()})
        except RuntimeError as e:  # a tensor of another shape: the message names it
            raise ValueError(f"{weights}: does not fit the backbone: {e}") from None
        self.enc, self.tests, self.feats = enc, tests, {}

    def accuracy(self, head, task):
        x, y = self.tests(task)
        key = image_set(task)
        if key not in self.feats:
            self.feats[key] = features(self.enc, x)
        return accuracy_of(head, self.feats[key], y)


def _known(meta, base, models_dir):
    """The fine-tune's own scores from its metadata, when they were taken against `base`."""
    own = os.path.join(models_dir, "models", meta.get("backbone", "") + ".safetensors")
    if not {"test_acc", "base_test_acc"} <= set(meta):
        return None
    if not os.path.exists(own) or not os.path.samefile(own, base):
        return None
    return float(meta["test_acc"]), float(meta["base_test_acc"])


def evaluate(a):
    """The merged checkpoint, each fine-tune and the base, each scored with the fine-tune's
    head on the fine-tune's task."""
    deterministic(0)  # one thread, deterministic kernels (nothing here draws at random)
    if len(a.finetuned) != len(a.tasks):
        raise ValueError(f"{len(a.finetuned)} fine-tunes but {len(a.tasks)} tasks")
    metas = [read(ft).metadata for ft in a.finetuned]
    backbones = {m.get("backbone") for m in metas}
    if len(backbones) != 1 or None in backbones:
        raise ValueError(f"the fine-tunes name backbones {sorted(map(str, backbones))}; one is needed")
    tests = lambda task: test_data(a.data, task)  # noqa: E731
    skeleton = lambda: backbone(a.models, metas[0]["backbone"])[0]  # noqa: E731
    merged, base = _Scorer(skeleton(), a.checkpoint, tests), None
    out = {}
    for i, (ft, task, meta) in enumerate(zip(a.finetuned, a.tasks, metas), 1):
        head = _head(ft)
        out[f"acc_{i}"] = merged.accuracy(head, task)
        known = _known(meta, a.base, a.models)
        if known is None:
            base = base or _Scorer(skeleton(), a.base, tests)
            known = _Scorer(skeleton(), ft, tests).accuracy(head, task), base.accuracy(head, task)
        out[f"ft_acc_{i}"], out[f"base_acc_{i}"] = known
    if len(a.tasks) == 2:  # merge_pair's names
        for prefix in ("", "ft_", "base_"):
            out[f"{prefix}acc_a"], out[f"{prefix}acc_b"] = out[f"{prefix}acc_1"], out[f"{prefix}acc_2"]
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python3 -m compatnets.finetune", description=__doc__.split("\n")[0])
    if argv[:1] == ["evaluate"]:
        for name in ("checkpoint", "base", "data", "models", "out"):
            p.add_argument("--" + name, required=True)
        p.add_argument("--finetuned", nargs="+", required=True)
        p.add_argument("--tasks", nargs="+", required=True)
        a, job, argv = None, evaluate, argv[1:]
    else:
        for name in ("backbone", "task", "models", "data", "out"):
            p.add_argument("--" + name, required=True)
        for name, default in (("steps", 300), ("batch", 128), ("seed", 1)):
            p.add_argument("--" + name, type=int, default=default)
        p.add_argument("--lr", type=float, default=1e-3)
        p.add_argument("--save-steps", default="")
        p.add_argument("--tag", help="a name for this fine-tune's setting (e.g. lr1e-3)")
        p.add_argument("--result")
        job = finetune
    a = p.parse_args(argv)
    return finish(job, a, a.out if job is evaluate else a.result)


if __name__ == "__main__":
    sys.exit(main())
