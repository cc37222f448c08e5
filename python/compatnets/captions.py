"""Measured image attributes and the captions written from them.

Each 28×28 grey image is measured on its own pixels (`measure`). Ink is every pixel brighter
than 32/255; its bounding box is the smallest box holding it.

    ink        share of the frame that is ink                       (tiny .. huge)
    brightness mean intensity of the ink, 0..1                      (inky .. bright)
    aspect     bounding-box height / width                          (flat .. narrow)
    symmetry   1 − Σ|x − mirror(x)| / (2 Σ x), 0..1                (lopsided .. symmetric)
    fill       ink pixels / bounding-box area                       (open .. solid)
    texture    mean |difference| of neighbouring ink pixels, along
               rows and columns                                     (smooth .. busy)
    balance    the intensity-weighted centre of the ink's rows, as
               a share of the bounding box's height from its top     (top-heavy .. bottom-heavy)
    contrast   standard deviation of the ink's intensities          (flat-toned .. stark)

The first four (ATTRIBUTES) are also the real library's benchmark labels: three bins each, by
tertiles of the encoder-training images (`thresholds`, `bins`). Captions describe all eight
(DESCRIBED) at five levels, by quintiles of the encoder-training images (`levels`), each level
with its own words. A plain caption (the flickr split) names the class (one of its synonyms)
and five of the eight attributes; a hard caption (the coco split) names only the coarse group
half the time, and four attributes. Which attributes, their order, the words and the
sentence template are drawn from a generator seeded per (seed, split, image, caption), so a
text encoder must learn the words, not an index. `describe` returns each caption's facts
too (the classes its noun fits, the levels it states), from which `compatnets.data` computes
the oracle retrieval score (`oracle_r1`). VOCABULARY lists every word a caption can hold.

The design is fixed before any encoder trains: the data are accepted only when the oracle
reaches ORACLE_MINIMUM on each evaluation split (compatnets.data).
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
DESCRIBED = ATTRIBUTES + ["fill", "texture", "balance", "contrast"]
LEVELS = 5
# Per described attribute: the words of each of its five levels, low to high.
WORDS = {"ink": [["tiny", "minute"], ["small", "little"], ["medium-sized", "mid-sized"],
                 ["large", "big"], ["huge", "bulky"]],
         "brightness": [["inky", "blackish"], ["dark", "dim"], ["grey", "mid-toned"],
                        ["light", "pale"], ["bright", "brilliant"]],
         "aspect": [["flat", "squat"], ["wide", "broad"], ["square", "compact"],
                    ["tall", "upright"], ["narrow", "slender"]],
         "symmetry": [["lopsided", "skewed"], ["uneven", "asymmetric"],
                      ["fairly-even", "roughly-balanced"], ["balanced", "near-symmetric"],
                      ["symmetric", "mirror-like"]],
         "fill": [["open", "airy"], ["sparse", "gappy"], ["half-filled", "partly-filled"],
                  ["filled", "dense"], ["solid", "blocky"]],
         "texture": [["smooth", "plain"], ["soft", "even-toned"],
                     ["lightly-textured", "faintly-patterned"], ["textured", "patterned"],
                     ["busy", "heavily-patterned"]],
         "balance": [["top-heavy", "high-weighted"], ["raised", "upward-weighted"],
                     ["centred", "evenly-weighted"], ["lowered", "downward-weighted"],
                     ["bottom-heavy", "low-weighted"]],
         "contrast": [["flat-toned", "uniform"], ["low-contrast", "muted"],
                      ["mixed-tone", "moderately-contrasted"], ["contrasty", "high-contrast"],
                      ["stark", "striking"]]}
STATED = {False: 5, True: 4}  # attributes per caption: plain, hard
TEMPLATES = ["{a} {adjs} {noun}", "a photo of {a} {noun} that is {adjs}", "{noun}, {adjs}",
             "this {noun} is {adjs}", "an image of {a} {noun}: {adjs}",
             "picture showing {a} {noun}, {adjs}"]
HARD_TEMPLATES = ["{a} {noun}, {adjs}", "a catalogue photo of {a} {noun}: {adjs}",
                  "something {adjs}, {a} {noun}",
                  "on a plain background, {a} {noun} looking {adjs}"]
# The oracle image-to-text R@1 (compatnets.data) each evaluation split must reach.
ORACLE_MINIMUM = {"flickr": 0.5, "coco": 0.25}


def _words():
    text = " ".join(TEMPLATES + HARD_TEMPLATES + [w for ns in NOUNS for w in ns]
                    + [w for ns in GROUP_NOUNS.values() for w in ns]
                    + [w for lv in WORDS.values() for b in lv for w in b] + ["a", "an", "and"])
    return sorted(set(tokens(re.sub(r"\{[a-z0-9]+\}", " ", text))))


def tokens(text):
    """A caption's words: lower case, hyphenated words kept whole, punctuation dropped."""
    return re.findall(r"[a-z][a-z-]*", text.lower())


def measure(images):
    """{attribute: float32 array} of uint8 images (n, 28, 28), for every one of DESCRIBED."""
    x = images.astype(np.float64) / 255.0
    ink = x > 32 / 255
    count = ink.sum(axis=(1, 2))
    rows, cols = ink.any(axis=2), ink.any(axis=1)
    top = rows.argmax(1)
    height = np.where(rows.any(1), 28 - top - rows[:, ::-1].argmax(1), 0)
    width = np.where(cols.any(1), 28 - cols.argmax(1) - cols[:, ::-1].argmax(1), 0)
    total = x.sum(axis=(1, 2))
    mirror = np.abs(x - x[:, :, ::-1]).sum(axis=(1, 2))
    some = np.maximum(count, 1)
    inked = x * ink
    mean = inked.sum(axis=(1, 2)) / some
    pairs = [(ink[:, :, 1:] & ink[:, :, :-1], np.abs(np.diff(x, axis=2))),
             (ink[:, 1:, :] & ink[:, :-1, :], np.abs(np.diff(x, axis=1)))]
    steps = sum((m * d).sum(axis=(1, 2)) for m, d in pairs)
    neighbours = sum(m.sum(axis=(1, 2)) for m, _ in pairs)
    mass = inked.sum(axis=(1, 2))
    centre = (inked.sum(axis=2) * np.arange(28)).sum(1) / np.maximum(mass, 1e-12)
    spread = (inked ** 2).sum(axis=(1, 2)) / some - mean ** 2
    out = {"ink": count / 784.0,
           "brightness": np.where(count > 0, mean, 0),
           "aspect": height / np.maximum(width, 1),
           "symmetry": np.where(total > 0, 1 - mirror / np.maximum(2 * total, 1e-12), 1),
           "fill": count / np.maximum(height * width, 1),
           "texture": steps / np.maximum(neighbours, 1),
           "balance": np.where(mass > 0, (centre - top + 0.5) / np.maximum(height, 1), 0.5),
           "contrast": np.sqrt(np.maximum(spread, 0))}
    return {a: out[a].astype(np.float32) for a in DESCRIBED}


def thresholds(attributes):
    """{attribute: [t1, t2]}: the tertiles that bin each of ATTRIBUTES (of the encoder images)."""
    return {a: [float(q) for q in np.quantile(attributes[a], [1 / 3, 2 / 3])] for a in ATTRIBUTES}


def bins(attributes, cuts):
    """(n, 4) int: each image's bin (0 low, 1 middle, 2 high) per attribute."""
    return np.stack([np.searchsorted(cuts[a], attributes[a], side="right") for a in ATTRIBUTES], 1)


def level_cuts(attributes):
    """{attribute: 4 cuts}: the quintiles that set the caption levels of each of DESCRIBED."""
    q = np.arange(1, LEVELS) / LEVELS
    return {a: [float(v) for v in np.quantile(attributes[a], q)] for a in DESCRIBED}


def levels(attributes, cuts):
    """(n, 8) int: each image's level (0..4) per described attribute."""
    return np.stack([np.searchsorted(cuts[a], attributes[a], side="right") for a in DESCRIBED], 1)


def _listed(words):
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def describe(rng, label, image_levels, hard):
    """(caption, classes, stated) of an image of class `label` with levels `image_levels`:
    the classes its noun fits, and {attribute index: level} of what it states."""
    if hard and rng.random() < 0.5:
        group = GROUPS[label]
        noun = str(rng.choice(GROUP_NOUNS[group]))
        classes = tuple(c for c in range(len(CLASSES)) if GROUPS[c] == group)
    else:
        noun, classes = str(rng.choice(NOUNS[label])), (label,)
    chosen = rng.permutation(len(DESCRIBED))[:STATED[hard]]
    adjs = [str(rng.choice(WORDS[DESCRIBED[a]][image_levels[a]])) for a in chosen]
    template = str(rng.choice(HARD_TEMPLATES if hard else TEMPLATES))
    text = template.format(a="a", noun=noun, adjs=_listed(adjs))
    text = re.sub(r"\ba (?=[aeiou])", "an ", text)
    return text, classes, {int(a): int(image_levels[a]) for a in chosen}


def captions(seed, split_id, labels, image_levels, per_image, hard, facts=None):
    """per_image captions of each image, image-major (image i's at i·per_image + j). When
    `facts` is a list, each caption's (classes, stated) is appended to it."""
    out = []
    for i, (label, lv) in enumerate(zip(labels, image_levels)):
        for j in range(per_image):
            rng = np.random.default_rng([seed, split_id, i, j])
            text, classes, stated = describe(rng, int(label), lv, hard)
            out.append(text)
            if facts is not None:
                facts.append((classes, stated))
    return out


def oracle_r1(labels, image_levels, facts, per_image):
    """The image-to-text R@1 of a retriever that knows every image's class and levels exactly
    and ranks first the captions consistent with them, ties at random: the mean over images of
    (own captions) / (captions consistent with the image). Own captions always are."""
    labels = np.asarray(labels)
    stated = np.full((len(facts), len(DESCRIBED)), -1)
    fits = np.zeros((len(facts), len(CLASSES)), bool)
    for c, (classes, said) in enumerate(facts):
        fits[c, list(classes)] = True
        for a, lv in said.items():
            stated[c, a] = lv
    consistent = fits[:, labels]
    for a in range(len(DESCRIBED)):
        said = stated[:, a:a + 1]
        consistent &= (said < 0) | (said == image_levels[None, :, a])
    return float(np.mean(per_image / consistent.sum(0)))


VOCABULARY = _words()
