"""Training paradigms: what an encoder learns from. Each is a head (the trainable modules
beside the encoder) and a loss over one batch.

    vision  sup     supervised: the image's class, cross-entropy
            ae      autoencoder: the 784 pixels back from the features, squared error
            simclr  contrastive: two augmented views of each image (shift, flip, brightness,
                    noise) agree against the batch's others (NT-Xent, temperature 0.5)
            rot     pretext: which of 4 rotations (0/90/180/270°) was applied, cross-entropy
            rand    randomly initialised control: no training
            mae     masked-image modelling: each of the image's 16 7×7 patches blanked (0)
                    with probability 1/2; from the features of what is left, the 784 pixels
                    of the whole image back, squared error
    text    label   caption → class of its image, cross-entropy
            masked  one word masked (<mask>), predict it (not for `char`)
            auto    autoencoding: the caption's bag of words back (multi-label)
            rand    randomly initialised control
    pair    clip    language supervision: a vision and a text encoder together, each image
                    against one of its captions (projection heads, L2-normalised, symmetric
                    InfoNCE over the batch, temperature 0.1)
"""
import torch
from torch import nn
from torch.nn import functional as F

from . import text as tx

VISION = ("sup", "ae", "simclr", "rot", "rand", "mae")
TEXT = ("label", "masked", "auto", "rand")
PAIRED = ("clip",)  # a vision and a text encoder trained together
CLIP_TEMPERATURE = 0.1


def heads(paradigm, dim):
    """The head modules of a paradigm (an empty ModuleDict for `rand`; `clip`: one projection
    per tower, "image" and "text")."""
    if paradigm == "clip":
        return nn.ModuleDict({"image": nn.Linear(dim, dim), "text": nn.Linear(dim, dim)})
    vocab = len(tx.WORDS)
    decoder = lambda: nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 784))  # noqa: E731
    make = {"sup": lambda: nn.Linear(dim, 10), "rot": lambda: nn.Linear(dim, 4),
            "ae": decoder, "mae": decoder,
            "simclr": lambda: nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 32)),
            "label": lambda: nn.Linear(dim, 10), "masked": lambda: nn.Linear(dim, vocab),
            "auto": lambda: nn.Linear(dim, vocab)}
    return nn.ModuleDict({"head": make[paradigm]()} if paradigm in make else {})


def augment(x, g):
    """A random view of images x (n, 1, 28, 28): shifted up to 3 pixels, flipped left-right
    half the time, brightness scaled by 0.6..1.4, Gaussian noise of 0.05."""
    n = x.shape[0]
    padded = F.pad(x, (3, 3, 3, 3))
    dx, dy = torch.randint(0, 7, (n,), generator=g), torch.randint(0, 7, (n,), generator=g)
    out = torch.stack([padded[i, :, dy[i]:dy[i] + 28, dx[i]:dx[i] + 28] for i in range(n)])
    flip = torch.rand(n, generator=g) < 0.5
    out = torch.where(flip.view(n, 1, 1, 1), out.flip(3), out)
    out = out * (0.6 + 0.8 * torch.rand(n, 1, 1, 1, generator=g))
    return (out + 0.05 * torch.randn(out.shape, generator=g)).clamp(0, 1)


def nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / temperature
    sim.fill_diagonal_(float("-inf"))
    n = z1.shape[0]
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, target)


def rotate(x, g):
    """(rotated images, rotation index 0..3)."""
    k = torch.randint(0, 4, (x.shape[0],), generator=g)
    out = x.clone()
    for r in range(1, 4):
        rows = k == r
        out[rows] = torch.rot90(x[rows], r, (2, 3))
    return out, k


def mask_patches(x, g, p=0.5):
    """Images x (n, 1, 28, 28) with each of their 16 non-overlapping 7×7 patches set to 0
    independently with probability p."""
    keep = (torch.rand(x.shape[0], 1, 4, 4, generator=g) >= p).to(x.dtype)
    return x * keep.repeat_interleave(7, 2).repeat_interleave(7, 3)


def clip_loss(h, image_features, text_features, temperature=CLIP_TEMPERATURE):
    """Symmetric InfoNCE of paired rows: image i's projection against every caption's of the
    batch (cross-entropy towards caption i), and each caption's against every image's."""
    zi = F.normalize(h["image"](image_features), dim=1)
    zt = F.normalize(h["text"](text_features), dim=1)
    logits = zi @ zt.T / temperature
    target = torch.arange(len(zi))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def vision_loss(paradigm, enc, h, x, y, g):
    """The loss of one batch of images x (labels y) under a vision paradigm."""
    if paradigm == "sup":
        return F.cross_entropy(h["head"](enc(x)), y)
    if paradigm in ("ae", "mae"):
        seen = mask_patches(x, g) if paradigm == "mae" else x
        return F.mse_loss(torch.sigmoid(h["head"](enc(seen))), x.flatten(1))
    if paradigm == "simclr":
        return nt_xent(h["head"](enc(augment(x, g))), h["head"](enc(augment(x, g))))
    if paradigm == "rot":
        xr, k = rotate(x, g)
        return F.cross_entropy(h["head"](enc(xr)), k)
    raise ValueError(f"unknown vision paradigm '{paradigm}' (one of {', '.join(VISION)})")


def text_loss(paradigm, family, enc, h, texts, y, g):
    """The loss of one batch of captions (their images' labels y) under a text paradigm."""
    ids = tx.batch(family, texts)
    if paradigm == "label":
        return F.cross_entropy(h["head"](enc(ids)), y)
    if paradigm == "masked":
        masked, target = tx.mask_one_word(ids, g)
        return F.cross_entropy(h["head"](enc(masked)), target)
    if paradigm == "auto":
        words = tx.word_ids(texts)
        bag = torch.zeros(len(texts), len(tx.WORDS)).scatter_(1, words, 1.0)
        bag[:, tx.PAD] = 0
        return F.binary_cross_entropy_with_logits(h["head"](enc(ids)), bag)
    raise ValueError(f"unknown text paradigm '{paradigm}' (one of {', '.join(TEXT)})")
