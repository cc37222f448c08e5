"""Fine-tunes of the library's vision encoders on eight image tasks, and their evaluation.

    python3 -m compatnets.finetune --backbone cnn_sup --task rotated --models DIR --data DATA
                                   --out DIR [--steps 300 --save-steps 50,100 --seed 1]
                                   [--result FILE]
    python3 -m compatnets.finetune evaluate --checkpoint MERGED --base BASE
                                   --finetuned A B --tasks TASK_A TASK_B --data DATA
                                   --out FILE

A fine-tune trains the whole encoder (its weights from DIR/models/<backbone>.safetensors)
with a new head on one task, on DATA's `train` images, and is scored on the test images
(`flickr` and `coco`); `digits` uses scikit-learn's bundled 8×8 digits instead, resized to
28×28 (1,200 to train, 597 to test). The tasks:

    fine      the 10 classes              rotated   the classes, images turned 90°
    coarse    the 4 groups                inverted  the classes, images negated (1 − x)
    ink       the ink tertile (3)         flipped   the classes, images upside down
    symmetry  the symmetry tertile (3)    digits    the 10 digits (scikit-learn)

Written: DIR/finetunes/<backbone>_<task>.safetensors (the encoder's tensors under the
backbone's names, then head.weight and head.bias; metadata backbone, task, steps), the same
at each --save-steps count as <backbone>_<task>@<steps>.safetensors, and the fine-tune's
probe features DIR/finetune_features/<backbone>+<task>/probe.safetensors. FILE:
{"ft_acc", "base_acc", "steps"}: the fine-tune's test accuracy and the backbone's with the
fine-tune's head. `evaluate` scores a merged checkpoint with each fine-tune's own head and
writes what compatbench's merge_pair reads: acc_a, acc_b, ft_acc_a, ft_acc_b, base_acc_a,
base_acc_b.
"""
import argparse
import json
import os
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


def _digits(test):
    from sklearn.datasets import load_digits  # Debian's python3-sklearn
    d = load_digits()
    x = torch.from_numpy(d.images.astype(np.float32) / 16.0).unsqueeze(1)
    x = F.pad(F.interpolate(x, size=(20, 20), mode="bilinear", align_corners=False), (4, 4, 4, 4))
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    rows = order[1200:] if test else order[:1200]
    return x[rows].clamp(0, 1), torch.from_numpy(d.target.astype(np.int64))[rows]


def task_data(data, task, test):
    """(images (n, 1, 28, 28) in [0, 1], labels) of a task's training or test set."""
    if task == "digits":
        return _digits(test)
    with open(os.path.join(data, "data.json")) as f:
        cuts = json.load(f)["thresholds"]
    return _fashion(data, ["flickr", "coco"] if test else ["train"], task, cuts)


def backbone(models_dir, name):
    """(encoder with the backbone's weights, its family)."""
    path = os.path.join(models_dir, "models", name + ".safetensors")
    f = read(path)
    if "family" not in f.metadata or "dim" not in f.metadata:
        raise ValueError(f"{path}: no family or dim in its metadata (not written by compatnets.train)")
    dim = int(f.metadata["dim"])
    enc = models.encoder(f.metadata["family"], dim)
    enc.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    return enc, dim


@torch.no_grad()
def accuracy(enc, head, x, y):
    enc.eval()
    pred = torch.cat([head(enc(x[i:i + 256])).argmax(1) for i in range(0, len(x), 256)])
    enc.train()
    return float((pred == y).float().mean())


def state(enc, head):
    out = {k: v.detach().numpy().astype(np.float32) for k, v in enc.state_dict().items()}
    out.update({"head.weight": head.weight.detach().numpy(), "head.bias": head.bias.detach().numpy()})
    return out


def finetune(a):
    """Trains, saves and scores one fine-tune; returns the result."""
    if a.task not in TASKS:
        raise ValueError(f"unknown task '{a.task}' (one of {', '.join(TASKS)})")
    g = deterministic(a.seed)
    enc, dim = backbone(a.models, a.backbone)
    base = {k: v.clone() for k, v in enc.state_dict().items()}
    head = nn.Linear(dim, TASKS[a.task])
    x, y = task_data(a.data, a.task, test=False)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=a.lr)
    name, saves = f"{a.backbone}_{a.task}", {int(s) for s in a.save_steps.split(",") if s}
    folder = os.path.join(a.out, "finetunes")
    os.makedirs(folder, exist_ok=True)
    meta = {"format": "pt", "backbone": a.backbone, "task": a.task}
    for step in range(1, a.steps + 1):
        idx = torch.randint(0, len(x), (a.batch,), generator=g)
        loss = F.cross_entropy(head(enc(x[idx])), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step in saves:
            save(os.path.join(folder, f"{name}@{step}.safetensors"), state(enc, head),
                 metadata=dict(meta, steps=str(step)))
    save(os.path.join(folder, name + ".safetensors"), state(enc, head),
         metadata=dict(meta, steps=str(a.steps)))
    tx, ty = task_data(a.data, a.task, test=True)
    ft_acc = accuracy(enc, head, tx, ty)
    probe = load(os.path.join(a.data, "images", "probe.safetensors"))["images"]
    with torch.no_grad():
        enc.eval()
        f = enc(as_images(probe)).numpy()
    ff = os.path.join(a.out, "finetune_features", f"{a.backbone}+{a.task}")
    os.makedirs(ff, exist_ok=True)
    save(os.path.join(ff, "probe.safetensors"), {"features": f.astype(np.float32)})
    enc.load_state_dict(base)
    return {"ft_acc": ft_acc, "base_acc": accuracy(enc, head, tx, ty), "steps": a.steps}


def _load_model(path, task_path, dim_from):
    """An encoder with the weights of checkpoint `path` and the head of `task_path`."""
    enc, _ = dim_from
    w = load(path)
    enc.load_state_dict({k: torch.from_numpy(w[k]) for k in enc.state_dict()})
    h = load(task_path)
    head = nn.Linear(h["head.weight"].shape[1], h["head.weight"].shape[0])
    head.load_state_dict({"weight": torch.from_numpy(h["head.weight"]),
                          "bias": torch.from_numpy(h["head.bias"])})
    return enc, head


def evaluate(a):
    """The merged checkpoint, each fine-tune and the base, each scored with the fine-tune's
    head on the fine-tune's task."""
    deterministic(0)  # one thread, deterministic kernels (nothing here draws at random)
    out = {}
    for key, ft, task in (("a", a.finetuned[0], a.tasks[0]), ("b", a.finetuned[1], a.tasks[1])):
        x, y = task_data(a.data, task, test=True)
        meta = read(ft).metadata
        skeleton = backbone(a.models, meta["backbone"])
        for prefix, weights in (("", a.checkpoint), ("ft_", ft), ("base_", a.base)):
            enc, head = _load_model(weights, ft, skeleton)
            out[f"{prefix}acc_{key}"] = accuracy(enc, head, x, y)
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python3 -m compatnets.finetune", description=__doc__.split("\n")[0])
    if argv[:1] == ["evaluate"]:
        for name in ("checkpoint", "base", "data", "models", "out"):
            p.add_argument("--" + name, required=True)
        p.add_argument("--finetuned", nargs=2, required=True)
        p.add_argument("--tasks", nargs=2, required=True)
        a, job, argv = None, evaluate, argv[1:]
    else:
        for name in ("backbone", "task", "models", "data", "out"):
            p.add_argument("--" + name, required=True)
        for name, default in (("steps", 300), ("batch", 128), ("seed", 1)):
            p.add_argument("--" + name, type=int, default=default)
        p.add_argument("--lr", type=float, default=1e-3)
        p.add_argument("--save-steps", default="")
        p.add_argument("--result")
        job = finetune
    a = p.parse_args(argv)
    return finish(job, a, a.out if job is evaluate else a.result)


if __name__ == "__main__":
    sys.exit(main())
