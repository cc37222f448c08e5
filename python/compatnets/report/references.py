"""Published numbers the report sets measured ones beside: the papers' headline numbers and
Fashion-MNIST's listed baselines. Only what was published elsewhere belongs here; numbers
measured by this project come from results files."""

# The papers' numbers (real models: a different model library from the zoo).
PAPER = [
    ("COMPASS", "alignment pairs trained", "72", "alignment_pairs"),
    ("COMPASS", "task-arithmetic merges", "392", "merges"),
    ("PRISM", "screening threshold (7B LLMs)", "1.9e-3", "threshold"),
    ("PRISM", "destructive cluster lower edge", "4.17e-3", None),
    ("PRISM", "drift exponent of the score vs tokens", "about 0.5", "drift"),
    ("PRISM", "screening a 7B merge (K = 2)", "about 2 min of CPU", "screen7b"),
    ("Encoder roles", "encoder subsets retrained", "31 (5 encoders)", "subsets"),
]

# Test accuracies listed in Fashion-MNIST's README (Debian's dataset-fashion-mnist,
# /usr/share/doc/dataset-fashion-mnist/README.md.gz), submitted benchmarks the dataset's
# authors note they have not re-tested.
BASELINES = [("2 Conv+pooling (TensorFlow's tutorial)", 0.916),
             ("2 Conv, <100K parameters", 0.925),
             ("2 Conv+3 FC, ~500K parameters, augmentation", 0.934)]
# The COMPASS paper's correlations of its score with R@1 (72 real alignment pairs) and with
# retention (392 task-arithmetic merges).
PAPER_ALIGNMENT_R = 0.90
PAPER_MERGING_R = 0.70
# COMPASS's paradigm story: vision encoders trained with language supervision (CLIP-like)
# align best with text encoders.
PAPER_ALIGNMENT_PARADIGM = "language-supervised (CLIP-like) vision encoders align best"
# PRISM's claims (methods.md §3.1): the screening score of a specialist grows about as the
# square root of its fine-tuning (exponent 1/2), and 1.9e-3 flags destructive merges of 7B
# LLMs (a threshold that does not transfer across scales).
PAPER_DRIFT_EXPONENT = 0.5
PAPER_THRESHOLD = 1.9e-3
# PRISM's language-model numbers (its merges of specialists continued-pretrained from one
# base): destructive configurations, what its threshold caught, its gain on the math + code
# merge, its κ-insensitivity, its update norm against the baselines'.
PAPER_LM = {"destructive": "7 of 22 configurations", "caught": "5 of 7", "flagged": "0 of 15",
            "gain_pp": 6.7, "kappa_pp": 0.5, "update_pct": 2.2, "baseline_update": "46–285%"}
