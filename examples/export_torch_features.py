"""Export your own PyTorch encoder's features in the layout a `feature_set` manifest reads
(README "Bring your own models"): <out>/<name>/<split>.safetensors, tensor "features".

    /usr/bin/python3 examples/export_torch_features.py --data DATA --out FEATURES --name my_cnn

DATA is a folder built by `python3 -m compatnets.data` (images/<split>.safetensors); with
images of your own, only the loading lines change. Replace MyEncoder (and load your weights)
with your model: it maps a batch of images to one feature row each.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from compatnets.safetensors import load, save  # noqa: E402


class MyEncoder(torch.nn.Module):
    """A stand-in for your network: any module from (n, 1, 28, 28) images to (n, dim)."""

    def __init__(self, dim=32):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 5, 2, 2), torch.nn.ReLU(),
                                       torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, dim))

    def forward(self, x):
        return self.net(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--name", default="my_cnn")
    a = p.parse_args()
    torch.manual_seed(0)
    model = MyEncoder().eval()   # e.g. model.load_state_dict(torch.load("my_weights.pt"))
    os.makedirs(os.path.join(a.out, a.name), exist_ok=True)
    for split in ("train", "probe", "flickr", "coco"):
        images = load(os.path.join(a.data, "images", split + ".safetensors"))["images"]
        x = torch.from_numpy(images).float().div(255).unsqueeze(1)
        with torch.no_grad():
            f = torch.cat([model(x[i:i + 256]) for i in range(0, len(x), 256)])
        # The three lines that matter: features as float32 rows, one file per split.
        save(os.path.join(a.out, a.name, split + ".safetensors"),
             {"features": f.numpy().astype("float32")})
    print(f"wrote {a.out}/{a.name}/<split>.safetensors for train, probe, flickr, coco")


if __name__ == "__main__":
    main()
