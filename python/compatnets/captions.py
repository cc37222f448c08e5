"""Measured image attributes and the captions written from them.

Each 28×28 grey image is measured on its own pixels (`measure`):

    ink        share of pixels brighter than 32/255              (how much of the frame)
    brightness mean intensity of those pixels, 0..1               (dark .. bright)
    aspect     bounding-box height / width of those pixels        (wide .. tall)
    symmetry   1 − Σ|x − mirror(x)| / (2 Σ x), 0..1               (lopsided .. symmetric)

Each attribute falls into one of three bins by tertiles of the encoder-training images
(`thresholds`), and each bin has several wordings. A caption names the class (one of its
synonyms) or, in hard captions, only its coarse group, plus one to three attributes, in
one of several sentence templates (`caption`). The wording is drawn from a generator
seeded per (seed, split, image, caption), so a text encoder must learn the words, not an
index. VOCABULARY lists every word a caption can hold.
"""
import re

import numpy as np

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
           "Sneaker", "Bag", "Ankle boot"]
# Coarse groups of the classes (the "coarse" task and the hard captions' nouns).
GROUPS = ["top", "dress or trousers", "top", "dress or trousers", "top", "footwear", "top",
          "footwear", "bag", "footwear"]
GROUP_NAMES = ["top", "dress or trousers", "footwear", "bag"]
COARSE = [GROUP_NAMES.index(g) for g in GROUPS]

NOUNS = [["t-shirt", "tee", "top", "short-sleeved shirt"],
         ["pair of trousers", "pair of pants", "pair of slacks"],
         ["pullover", "sweater", "jumper"],
         ["dress", "gown", "frock"],
         ["coat", "jacket", "overcoat"],
         ["sandal", "open shoe", "strappy sandal"],
         ["shirt", "button-up shirt", "blouse"],
         ["sneaker", "trainer", "running shoe"],
         ["bag", "handbag", "purse"],
         ["ankle boot", "boot", "short boot"]]
GROUP_NOUNS = {"top": ["piece of upper clothing", "garment for the upper body", "top garment"],
               "dress or trousers": ["long garment", "piece of clothing for the legs",
                                     "full-length garment"],
               "footwear": ["piece of footwear", "shoe", "thing to wear on the feet"],
               "bag": ["accessory", "thing to carry", "carried item"]}
ATTRIBUTES = ["ink", "brightness", "aspect", "symmetry"]
# Per attribute: the words of its low, middle and high bin.
WORDS = {"ink": [["small", "tiny", "little"], ["medium-sized", "mid-sized", "average-sized"],
                 ["large", "big", "bulky"]],
         "brightness": [["dark", "dim", "shadowy"], ["grey", "mid-toned", "muted"],
                        ["bright", "pale", "light"]],
         "aspect": [["wide", "broad", "squat"], ["square", "compact", "evenly proportioned"],
                    ["tall", "narrow", "slender"]],
         "symmetry": [["lopsided", "uneven", "asymmetric"], ["fairly even", "roughly balanced",
                                                             "nearly symmetric"],
                      ["symmetric", "balanced", "mirror-like"]]}
TEMPLATES = ["{a} {adj1} {noun}", "a photo of {a} {noun} that looks {adj1}",
             "{noun}, {adj1} and {adj2}", "this {noun} is {adj1} and {adj2}",
             "an image of {a} {adj1} {noun}", "picture showing {a} {adj1} {noun}, {adj2}",
             "the {noun} here is {adj1}", "{a} {adj1}, {adj2} {noun}"]
HARD_TEMPLATES = ["{a} {adj1} {noun}, {adj2} and {adj3}",
                  "a catalogue photo of {a} {noun}: {adj1}, {adj2}, {adj3}",
                  "something {adj1} and {adj2}, {a} {noun} that is {adj3}",
                  "on a plain background, {a} {adj1} {noun} looking {adj2}"]


def _words():
    text = " ".join(TEMPLATES + HARD_TEMPLATES + [w for ns in NOUNS for w in ns]
                    + [w for ns in GROUP_NOUNS.values() for w in ns]
                    + [w for bins in WORDS.values() for b in bins for w in b] + ["a", "an"])
    return sorted(set(tokens(re.sub(r"\{[a-z0-9]+\}", " ", text))))


def tokens(text):
    """A caption's words: lower case, hyphenated words kept whole, punctuation dropped."""
    return re.findall(r"[a-z][a-z-]*", text.lower())


def measure(images):
    """{attribute: float32 array} of uint8 images (n, 28, 28); methods in the module doc."""
    x = images.astype(np.float64) / 255.0
    ink = x > 32 / 255
    count = ink.sum(axis=(1, 2))
    rows, cols = ink.any(axis=2), ink.any(axis=1)
    height = np.where(rows.any(1), 28 - rows.argmax(1) - rows[:, ::-1].argmax(1), 0)
    width = np.where(cols.any(1), 28 - cols.argmax(1) - cols[:, ::-1].argmax(1), 0)
    total = x.sum(axis=(1, 2))
    mirror = np.abs(x - x[:, :, ::-1]).sum(axis=(1, 2))
    return {"ink": (count / 784.0).astype(np.float32),
            "brightness": np.where(count > 0, (x * ink).sum(axis=(1, 2)) / np.maximum(count, 1),
                                   0).astype(np.float32),
            "aspect": (height / np.maximum(width, 1)).astype(np.float32),
            "symmetry": np.where(total > 0, 1 - mirror / np.maximum(2 * total, 1e-12),
                                 1).astype(np.float32)}


def thresholds(attributes):
    """{attribute: [t1, t2]}: the tertiles that bin each attribute (of the encoder images)."""
    return {a: [float(q) for q in np.quantile(attributes[a], [1 / 3, 2 / 3])] for a in ATTRIBUTES}


def bins(attributes, cuts):
    """(n, 4) int: each image's bin (0 low, 1 middle, 2 high) per attribute."""
    return np.stack([np.searchsorted(cuts[a], attributes[a], side="right") for a in ATTRIBUTES], 1)


def caption(rng, label, attribute_bins, hard):
    """One caption of an image of class `label` with attribute bins `attribute_bins`."""
    if hard and rng.random() < 0.5:
        noun = str(rng.choice(GROUP_NOUNS[GROUPS[label]]))
    else:
        noun = str(rng.choice(NOUNS[label]))
    order = rng.permutation(len(ATTRIBUTES))
    adj = [str(rng.choice(WORDS[ATTRIBUTES[a]][attribute_bins[a]])) for a in order[:3]]
    template = str(rng.choice(HARD_TEMPLATES if hard else TEMPLATES))
    text = template.format(a="a", noun=noun, adj1=adj[0], adj2=adj[1], adj3=adj[2])
    return re.sub(r"\ba (?=[aeiou])", "an ", text)


def captions(seed, split_id, labels, attribute_bins, per_image, hard):
    """per_image captions of each image, image-major (image i's captions at i·per_image + j)."""
    out = []
    for i, (label, b) in enumerate(zip(labels, attribute_bins)):
        for j in range(per_image):
            rng = np.random.default_rng([seed, split_id, i, j])
            out.append(caption(rng, int(label), b, hard))
    return out


VOCABULARY = _words()
