"""A small stand-in for a real paired image-caption dataset, for the real-model tests.

  make_data.py DIR   writes DIR/data/<split>.safetensors ("images" n x 16, "captions"
                     5n x 12: raw inputs for the fake extractor) and DIR/data/pairing/
                     <split>.safetensors ("caption_image", I64), splits train, probe,
                     flickr, coco.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from compatnets.safetensors import save  # noqa: E402

SIZES = {"train": 600, "probe": 300, "flickr": 80, "coco": 80}


def main():
    root = sys.argv[1]
    os.makedirs(os.path.join(root, "data", "pairing"), exist_ok=True)
    rng = np.random.default_rng(7)
    to_image = rng.normal(size=(8, 16))
    to_caption = rng.normal(size=(8, 12))
    for split, n in SIZES.items():
        z = rng.normal(size=(n, 8))
        images = z @ to_image + 0.3 * rng.normal(size=(n, 16))
        owner = np.repeat(np.arange(n), 5)
        captions = (z[owner] + 0.5 * rng.normal(size=(5 * n, 8))) @ to_caption
        save(os.path.join(root, "data", split + ".safetensors"),
             {"images": images.astype(np.float32), "captions": captions.astype(np.float32)})
        save(os.path.join(root, "data", "pairing", split + ".safetensors"),
             {"caption_image": owner.astype(np.int64)})


if __name__ == "__main__":
    main()
