"""Captions as token batches: word ids over the caption generator's vocabulary, or
character ids for the character CNN. Id 0 pads, 1 is an unknown word, 2 a masked one."""
import numpy as np
import torch

from .captions import VOCABULARY, tokens

PAD, UNK, MASK = 0, 1, 2
WORDS = ["<pad>", "<unk>", "<mask>"] + VOCABULARY
WORD_ID = {w: i for i, w in enumerate(WORDS)}
CHARS = "\0?#abcdefghijklmnopqrstuvwxyz -,:"   # pad, unknown, mask, then the letters
CHAR_ID = {c: i for i, c in enumerate(CHARS)}
MAX_WORDS, MAX_CHARS = 24, 160


def word_ids(texts):
    """(n, MAX_WORDS) int64 word ids, padded with 0."""
    out = np.zeros((len(texts), MAX_WORDS), np.int64)
    for i, t in enumerate(texts):
        ids = [WORD_ID.get(w, UNK) for w in tokens(t)][:MAX_WORDS]
        out[i, :len(ids)] = ids
    return torch.from_numpy(out)


def char_ids(texts):
    """(n, MAX_CHARS) int64 character ids, padded with 0."""
    out = np.zeros((len(texts), MAX_CHARS), np.int64)
    for i, t in enumerate(texts):
        ids = [CHAR_ID.get(c, 1) for c in t.lower()][:MAX_CHARS]
        out[i, :len(ids)] = ids
    return torch.from_numpy(out)


def batch(family, texts):
    """The input of a text encoder of `family` for these captions."""
    return char_ids(texts) if family == "char" else word_ids(texts)


def vocab_size(family):
    return len(CHARS) if family == "char" else len(WORDS)


def mask_one_word(ids, generator):
    """(masked word ids, the masked word per row): one real word per caption replaced by MASK."""
    lengths = (ids != PAD).sum(1)
    pos = (torch.rand(ids.shape[0], generator=generator) * lengths).long()
    rows = torch.arange(ids.shape[0])
    target = ids[rows, pos].clone()
    masked = ids.clone()
    masked[rows, pos] = MASK
    return masked, target
