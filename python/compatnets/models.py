"""The encoder architectures of the PyTorch library: four vision and four text families.

Every encoder maps its input to a feature vector of `dim` values (the features compatbench
reads). Vision encoders take (n, 1, 28, 28) float images scaled to [0, 1]; text encoders
take the token batches of `compatnets.text` (word ids, or character ids for `char`).

    vision  mlp   two dense layers on the flattened pixels
            cnn   two strided convolutions (5×5 and 3×3, stride 2), then a dense layer
            res   a residual CNN: a strided stem, two residual stages (the second strided),
                  global average pooling
            vit   a patch transformer: 7×7 patches (16 tokens) and a class token, 2 layers
    text    bow   a bag of words (counts over the vocabulary) through two dense layers
            char  a character CNN: two 1-D convolutions, max over time
            gru   a word GRU; the mean of its states over the caption's words
            tfm   a word transformer, 2 layers, mean over the caption's words

A text encoder has a width (its capacity): the hidden layer of `bow` (128 by default), the
channels of `char` (64), the hidden size of `gru` (64), the model width of `tfm` (64, a
multiple of its 4 attention heads). TEXT_WIDTH holds the defaults; vision encoders have none.
"""
import torch
from torch import nn

VISION = ("mlp", "cnn", "res", "vit")
TEXT = ("bow", "char", "gru", "tfm")
TEXT_WIDTH = {"bow": 128, "char": 64, "gru": 64, "tfm": 64}
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST's pixel mean and spread (training images)


class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, x):
        return self.net((x - MEAN) / STD)


class Cnn(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 5, 2, 2), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
            nn.Flatten(), nn.Linear(32 * 7 * 7, dim))

    def forward(self, x):
        return self.net((x - MEAN) / STD)


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.norm1, self.norm2 = nn.GroupNorm(4, cout), nn.GroupNorm(4, cout)
        self.skip = nn.Identity() if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride)

    def forward(self, x):
        y = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(y)) + self.skip(x))


class Res(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), Residual(16, 16, 1),
                                 Residual(16, 32, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(32, dim))

    def forward(self, x):
        return self.net((x - MEAN) / STD)


class Vit(nn.Module):
    def __init__(self, dim, width=64):
        super().__init__()
        self.embed = nn.Linear(49, width)
        # (1, width), not (1, 1, width): DELLA ranks a tensor along dimension 1, as mergekit
        # does, and refuses a dimension of one (mergekit's 0/0).
        self.cls = nn.Parameter(torch.zeros(1, width))
        self.pos = nn.Parameter(torch.randn(1, 17, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(width, dim)

    def forward(self, x):
        x = (x - MEAN) / STD
        patches = x.unfold(2, 7, 7).unfold(3, 7, 7).reshape(x.shape[0], 16, 49)
        cls = self.cls.unsqueeze(1).expand(x.shape[0], -1, -1)
        t = torch.cat([cls, self.embed(patches)], 1) + self.pos
        return self.out(self.blocks(t)[:, 0])


class Bow(nn.Module):
    def __init__(self, dim, vocab, width=128):
        super().__init__()
        self.vocab = vocab
        self.net = nn.Sequential(nn.Linear(vocab, width), nn.ReLU(), nn.Linear(width, dim))

    def forward(self, ids):
        counts = torch.zeros(ids.shape[0], self.vocab).scatter_add_(1, ids, torch.ones_like(ids, dtype=torch.float))
        counts[:, 0] = 0  # padding
        return self.net(counts)


class Char(nn.Module):
    def __init__(self, dim, vocab, width=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16, padding_idx=0)
        self.net = nn.Sequential(nn.Conv1d(16, width, 5, padding=2), nn.ReLU(),
                                 nn.Conv1d(width, width, 5, padding=2), nn.ReLU())
        self.out = nn.Linear(width, dim)

    def forward(self, ids):
        h = self.net(self.embed(ids).transpose(1, 2))
        h = h.masked_fill((ids == 0).unsqueeze(1), float("-inf")).amax(2)
        return self.out(h)


def _mean_over_words(h, ids):
    keep = (ids != 0).unsqueeze(2).float()
    return (h * keep).sum(1) / keep.sum(1).clamp(min=1)


class Gru(nn.Module):
    def __init__(self, dim, vocab, width=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32, padding_idx=0)
        self.gru = nn.GRU(32, width, batch_first=True)
        self.out = nn.Linear(width, dim)

    def forward(self, ids):
        h, _ = self.gru(self.embed(ids))
        return self.out(_mean_over_words(h, ids))


class Tfm(nn.Module):
    def __init__(self, dim, vocab, width=64, length=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, length, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(width, dim)

    def forward(self, ids):
        h = self.embed(ids) + self.pos[:, :ids.shape[1]]
        h = self.blocks(h, src_key_padding_mask=ids == 0)
        return self.out(_mean_over_words(h, ids))


def text_width(family, width=None):
    """The width of a text encoder of `family`: `width`, or the family's default (TEXT_WIDTH)."""
    width = TEXT_WIDTH[family] if width is None else width
    if width < 1 or (family == "tfm" and width % 4):
        raise ValueError(f"width {width} is not " + ("a positive multiple of the transformer's 4 "
                                                     "attention heads" if family == "tfm" else "positive"))
    return width


def encoder(family, dim, vocab=None, width=None):
    """A fresh encoder of `family` (VISION or TEXT) with `dim` output features; a text
    encoder's `width` defaults to TEXT_WIDTH[family] (vision encoders take none)."""
    vision = {"mlp": Mlp, "cnn": Cnn, "res": Res, "vit": Vit}
    text = {"bow": Bow, "char": Char, "gru": Gru, "tfm": Tfm}
    if family in vision and width is not None:
        raise ValueError(f"encoder family '{family}' has no width (widths are for the text "
                         f"families {', '.join(TEXT)})")
    if family in vision:
        return vision[family](dim)
    if family in text:
        return text[family](dim, vocab, text_width(family, width))
    raise ValueError(f"unknown encoder family '{family}' (vision: {', '.join(VISION)}; "
                     f"text: {', '.join(TEXT)})")
