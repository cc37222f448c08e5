"""The real-image dataset of the PyTorch library: Fashion-MNIST with generated captions.

    python3 -m compatnets.data --out DIR [--encoder 20000 --train 5000 --probe 1024
                                          --eval 1000 --captions 5 --seed 1]
                                          [--source /usr/share/datasets/fashion-mnist]
                                          [--result FILE]

The 60,000 training images are shuffled (seeded) and cut into disjoint splits: `encoder`
(what the encoders train on), `train` (what the alignment adapters fit) and `probe` (the
COMPASS probe). The 10,000 test images are shuffled and halved: `flickr` (the first
evaluation set, plain captions: the class and five attributes) and `coco` (the second, hard
captions: a coarse noun half the time and four attributes); compatnets.captions says how.
`--eval` caps each half. Written to DIR:

    images/<split>.safetensors   images U8 (n, 28, 28), labels I64 (n), coarse I64 (n),
                                 attributes F32 (n, 4) (compatnets.captions.ATTRIBUTES),
                                 described F32 (n, 8) (compatnets.captions.DESCRIBED),
                                 source_index I64 (n): the image's row in its IDX file
    captions/<split>.json        the captions, image-major: image i's at i·C .. i·C + C − 1
    pairing/<split>.safetensors  caption_image I64 (n·C): the image row of each caption
    data.json                    sizes, seed, attribute thresholds and caption level cuts,
                                 the oracle R@1 of each evaluation split, classes, vocabulary

The oracle (compatnets.captions.oracle_r1) is the image-to-text R@1 of a retriever that
knows each image's class and attribute levels exactly: it says how well the captions can
single images out at all. The data are refused (exit 2, nothing written to data.json) unless
it reaches compatnets.captions.ORACLE_MINIMUM on each evaluation split (`--no-oracle-check`
lifts that, for made-up test images). Every file is a function of the source files and the
arguments alone.
"""
import argparse
import json
import os
import sys

import numpy as np

from . import captions as cap
from .idx import IdxError, read_idx
from .safetensors import save

SOURCE = "/usr/share/datasets/fashion-mnist"
SPLITS = ["encoder", "train", "probe", "flickr", "coco"]
HARD = {"coco"}


class DataError(RuntimeError):
    """The dataset cannot be built: the message names the file and what to do."""


def load_fashion(source=SOURCE):
    """(train images, train labels, test images, test labels) of Fashion-MNIST."""
    out = []
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        path = os.path.join(source, stem + ".gz")
        if not os.path.exists(path):
            raise DataError(f"{path}: not found; Fashion-MNIST comes from Debian's "
                            "dataset-fashion-mnist package (apt-get install dataset-fashion-mnist)")
        try:
            out.append(read_idx(path))
        except IdxError as e:
            raise DataError(str(e)) from None
    for images, labels in ((out[0], out[1]), (out[2], out[3])):
        if images.ndim != 3 or images.shape[1:] != (28, 28) or len(labels) != len(images):
            raise DataError(f"{source}: images {images.shape} and labels {labels.shape} do not "
                            "match (want n × 28 × 28 images, n labels)")
    return out


def split_indices(n_train, n_test, sizes, seed):
    """{split: rows of its source file}; encoder/train/probe from the training file, flickr
    and coco from the two halves of the test file."""
    rng = np.random.default_rng([seed, 0])
    order, test = rng.permutation(n_train), rng.permutation(n_test)
    want = sizes["encoder"] + sizes["train"] + sizes["probe"]
    if want > n_train:
        raise DataError(f"encoder + train + probe = {want} images; the training file has {n_train}")
    cut = np.cumsum([0, sizes["encoder"], sizes["train"], sizes["probe"]])
    out = {s: np.sort(order[cut[i]:cut[i + 1]]) for i, s in enumerate(SPLITS[:3])}
    half = n_test // 2
    out["flickr"] = np.sort(test[:min(half, sizes["eval"])])
    out["coco"] = np.sort(test[half:half + min(n_test - half, sizes["eval"])])
    return out


def write_split(out, split, images, labels, source_index, cuts, per_image, seed):
    """The three files of one split; returns its caption count and, for an evaluation split,
    the oracle R@1."""
    measured = cap.measure(images)
    lv = cap.levels(measured, cuts["levels"])
    facts = []
    texts = cap.captions(seed, SPLITS.index(split), labels, lv, per_image, split in HARD, facts)
    save(os.path.join(out, "images", split + ".safetensors"),
         {"images": images, "labels": labels.astype(np.int64),
          "coarse": np.asarray(cap.COARSE, np.int64)[labels],
          "attributes": np.stack([measured[a] for a in cap.ATTRIBUTES], 1).astype(np.float32),
          "described": np.stack([measured[a] for a in cap.DESCRIBED], 1).astype(np.float32),
          "source_index": source_index.astype(np.int64)})
    with open(os.path.join(out, "captions", split + ".json"), "w") as f:
        json.dump(texts, f, indent=0)
    pairing = np.repeat(np.arange(len(images), dtype=np.int64), per_image)
    save(os.path.join(out, "pairing", split + ".safetensors"), {"caption_image": pairing})
    oracle = cap.oracle_r1(labels, lv, facts, per_image) if split in cap.ORACLE_MINIMUM else None
    return len(texts), oracle


def build(out, sizes, per_image=5, seed=1, source=SOURCE, check_oracle=True):
    """Writes the dataset to `out` (module doc); returns what data.json holds."""
    train_x, train_y, test_x, test_y = load_fashion(source)
    rows = split_indices(len(train_x), len(test_x), sizes, seed)
    for folder in ("images", "captions", "pairing"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    measured = cap.measure(train_x[rows["encoder"]])
    cuts = {"bins": cap.thresholds(measured), "levels": cap.level_cuts(measured)}
    info = {"source": source, "seed": seed, "captions_per_image": per_image,
            "thresholds": cuts["bins"], "attributes": cap.ATTRIBUTES,
            "level_cuts": cuts["levels"], "described": cap.DESCRIBED, "oracle_r1": {},
            "oracle_minimum": cap.ORACLE_MINIMUM, "classes": cap.CLASSES,
            "groups": cap.GROUP_NAMES, "vocabulary": cap.VOCABULARY, "splits": {}}
    for split in SPLITS:
        x, y = (train_x, train_y) if split in SPLITS[:3] else (test_x, test_y)
        images, labels = x[rows[split]], y[rows[split]].astype(np.int64)
        n, oracle = write_split(out, split, images, labels, rows[split], cuts, per_image, seed)
        info["splits"][split] = {"images": int(len(images)), "captions": n}
        if split in cap.ORACLE_MINIMUM:
            info["oracle_r1"][split] = oracle
    low = {s: v for s, v in info["oracle_r1"].items() if v < cap.ORACLE_MINIMUM[s]}
    if check_oracle and low:
        raise DataError("the captions cannot single images out: oracle R@1 " + ", ".join(
            f"{s} {v:.3f} < {cap.ORACLE_MINIMUM[s]}" for s, v in low.items())
            + f" ({out}; compatnets.captions)")
    with open(os.path.join(out, "data.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def read_captions(root, split):
    """The captions of a split of a dataset folder built by `build`."""
    with open(os.path.join(root, "captions", split + ".json")) as f:
        return json.load(f)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m compatnets.data", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    for name, default in (("encoder", 20000), ("train", 5000), ("probe", 1024), ("eval", 1000),
                          ("captions", 5), ("seed", 1)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--source", default=SOURCE)
    p.add_argument("--no-oracle-check", action="store_true",
                   help="write the data even when the oracle R@1 is below its minimum")
    p.add_argument("--result", help="a JSON file for the task's outputs")
    a = p.parse_args(argv)
    if a.captions < 1:
        p.error("--captions must be at least 1")
    sizes = {s: getattr(a, s) for s in ("encoder", "train", "probe", "eval")}
    try:
        info = build(a.out, sizes, a.captions, a.seed, a.source, not a.no_oracle_check)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.result:
        with open(a.result, "w") as f:
            outputs = {f"{s}_images": v["images"] for s, v in info["splits"].items()}
            outputs.update({f"oracle_{s}": v for s, v in info["oracle_r1"].items()})
            json.dump(outputs, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
