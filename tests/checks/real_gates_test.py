#!/usr/bin/python3
"""The rules that judge the real library's studies (compatnets.report.real_gates,
docs/real-networks.md "What counts"), on synthetic arrays: the gates at their thresholds, the
reliability cap, the CI rule, the retention SE, M1, PRISM's recovery, the kernels-vs-matrices
pairing; and the report's real-networks section rendered from small results files, old and new.

    PYTHONPATH=python /usr/bin/python3 -W error tests/checks/real_gates_test.py
"""
import math
import os
import tempfile
import unittest

import h5py
import numpy as np

from compatnets.report import real_gates as rg
from compatnets.report import reanalysis as ra
from compatnets.report.page import Report
from compatnets.report.real import real_section


def corr_table(rows):
    """A correlations table from (predictor, target, r, lo, hi) rows."""
    return {"predictor": np.array([r[0] for r in rows]), "target": np.array([r[1] for r in rows]),
            "n": np.full(len(rows), 12), "pearson_r": np.array([r[2] for r in rows], float),
            "pearson_p": np.full(len(rows), 0.01), "pearson_ci_low": np.array([r[3] for r in rows], float),
            "pearson_ci_high": np.array([r[4] for r in rows], float),
            "spearman_rho": np.array([r[2] for r in rows], float), "spearman_p": np.full(len(rows), 0.01)}


class AlignmentGates(unittest.TestCase):
    def test_gate_holds_at_its_threshold(self):
        self.assertTrue(rg.gate("G2", "", 0.04, rg.SPREAD_OVER_SE * 0.01)["holds"])  # spread = 4·SE
        self.assertFalse(rg.gate("G2", "", 0.04 - 1e-12, rg.SPREAD_OVER_SE * 0.01)["holds"])
        self.assertFalse(rg.gate("G1", "", 0.3, math.nan)["holds"])  # a threshold not measured

    def test_split_spread_by_hand(self):
        x = rg.split_spread(np.array([0.3, 0.5]), 192)
        self.assertAlmostEqual(x["mean"], 0.4)
        self.assertAlmostEqual(x["se"], math.sqrt(0.4 * 0.6 / 192))  # 0.035355
        self.assertAlmostEqual(x["spread"], math.sqrt(0.02))  # sample sd, ddof 1
        self.assertAlmostEqual(x["ratio"], 4.0)
        self.assertAlmostEqual(x["reliability"], 1 - 1 / 16)
        self.assertAlmostEqual(x["cap"], math.sqrt(15 / 16))

    def test_g2_on_both_splits(self):
        # mean 0.4, sd sqrt(0.02): 4·SE = sd at 192 images; more images, smaller SE.
        r1 = {"flickr": np.array([0.3, 0.5]), "coco": np.array([0.3, 0.5])}
        ok = rg.alignment_regime(r1, {"flickr": 200, "coco": 200}, 0.4)
        self.assertEqual([g["holds"] for g in ok["gates"]], [True, True, True])
        self.assertTrue(ok["informative"])
        one = rg.alignment_regime(r1, {"flickr": 200, "coco": 180}, 0.4)
        self.assertEqual([g["holds"] for g in one["gates"]], [True, True, False])
        self.assertFalse(one["informative"])
        self.assertIn("G2 (coco)", rg.failed(one["gates"]))
        self.assertNotIn("G2 (flickr)", rg.failed(one["gates"]))

    def test_g1_median_against_the_oracle(self):
        r1 = {"flickr": np.array([0.1, 0.2, 0.9]), "coco": np.array([0.1, 0.2, 0.9])}
        images = {"flickr": 10 ** 6, "coco": 10 ** 6}
        self.assertTrue(rg.alignment_regime(r1, images, 0.8)["gates"][0]["holds"])  # 0.2 = 0.25 × 0.8
        self.assertFalse(rg.alignment_regime(r1, images, 0.8000001)["gates"][0]["holds"])
        self.assertFalse(rg.alignment_regime(r1, images, math.nan)["informative"])  # no oracle recorded

    def test_reliability_cap(self):
        rel, cap = rg.reliability(0.01, 0.02)
        self.assertAlmostEqual(rel, 0.75)
        self.assertAlmostEqual(cap, 0.8660254, places=6)
        self.assertEqual(rg.reliability(0.03, 0.02), (0.0, 0.0))  # noise above the spread
        self.assertEqual(rg.reliability(0.01, 0.0), (0.0, 0.0))

    def test_capped_table(self):
        corr = corr_table([("score", "r1_flickr", 0.5, 0.2, 0.7), ("cka", "r1_coco", 0.4, 0.1, 0.6),
                           ("score", "r5_flickr", 0.6, 0.3, 0.8)])
        t = rg.capped_table(corr, {"r1_flickr": 0.9, "r1_coco": 0.8})
        self.assertEqual(list(t["cap"][:2]), [0.9, 0.8])
        self.assertTrue(np.isnan(t["cap"][2]))
        self.assertEqual(t["95% CI"][0], "[+0.20, +0.70]")


class Verdicts(unittest.TestCase):
    def test_ci_rule(self):
        self.assertEqual(rg.ci_verdict(0.9, 0.85, 0.95), "agrees")
        self.assertEqual(rg.ci_verdict(0.9, 0.9, 0.95), "agrees")  # the interval is closed
        self.assertEqual(rg.ci_verdict(0.9, 0.5, 0.89), "disagrees")
        self.assertEqual(rg.ci_verdict(0.7, 0.75, 0.95), "disagrees")

    def test_alignment_claims_wait_on_the_regime(self):
        corr = corr_table([("score", "r1_flickr", 0.88, 0.80, 0.95), ("score", "r1_coco", 0.5, 0.2, 0.7),
                           ("score_excess", "r1_flickr", 0.3, 0.1, 0.5)])
        pairs = {"vision": np.array(["cnn_clip", "mlp_sup", "vit_clip", "res_simclr"]),
                 "vision_paradigm": np.array(["language", "supervised", "language", "contrastive"]),
                 "r1_flickr": np.array([0.5, 0.3, 0.4, 0.2])}
        claims = rg.alignment_claims(corr, pairs, {"informative": True}, 0.90, "paper")
        self.assertEqual([c[3] for c in claims], ["agrees", "disagrees", "disagrees", "agrees"])
        closed = rg.alignment_claims(corr, pairs, {"informative": False}, 0.90, "paper")
        self.assertTrue(all(c[3].startswith("no verdict") for c in closed))
        self.assertEqual([c[2] for c in closed], [c[2] for c in claims])  # the numbers stay

    def test_paradigm_story(self):
        vision = np.array(["cnn_clip", "mlp_sup", "mlp_sup"])
        paradigm = np.array(["language", "supervised", "supervised"])
        self.assertEqual(rg.paradigm_claim(vision, paradigm, [0.2, 0.3, 0.4])["verdict"], "disagrees")
        story = rg.paradigm_claim(vision, paradigm, [0.5, 0.3, 0.4])
        self.assertEqual((story["verdict"], story["language"]), ("agrees", "language"))
        self.assertAlmostEqual(story["medians"]["supervised"], 0.35)
        self.assertTrue(rg.paradigm_claim(vision[1:], paradigm[1:], [0.3, 0.4])["verdict"].startswith("no verdict"))


def merges(retention, destructive=None, acc=0.5, ft=1.0, task="fine"):
    n = len(retention)
    return {"retention": np.array(retention, float), "acc_a": np.full(n, acc), "acc_b": np.full(n, acc),
            "ft_acc_a": np.full(n, ft), "ft_acc_b": np.full(n, ft), "task_a": np.array([task] * n),
            "task_b": np.array([task] * n),
            "destructive": np.array(destructive if destructive is not None else [0] * n)}


class MergingGates(unittest.TestCase):
    def test_paradigm_claim_leaves_nan_out_in_any_order(self):
        vision = np.array(["cnn_clip", "cnn_sup", "vit_sup", "res_ae"])
        paradigm = np.array(["language", "supervised", "supervised", "autoencoder"])
        r1 = np.array([0.3, np.nan, 0.2, np.nan])
        for order in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]):
            out = rg.paradigm_claim(vision[order], paradigm[order], r1[order])
            self.assertEqual(out["verdict"], "agrees", order)

    def test_retention_se_by_hand(self):
        se = rg.retention_se([0.8], [0.5], [0.9], [1.0], ["fine"], ["digits"])
        self.assertAlmostEqual(se[0], 0.5 * math.sqrt(0.8 * 0.2 / 2000 / 0.81 + 0.5 * 0.5 / 597 / 1.0))
        self.assertAlmostEqual(se[0], 0.011375, places=6)

    def test_m2_spread_against_the_median_se(self):
        # acc 0.5, ft 1 on 2000 images: SE = 0.5·sqrt(2 · 0.25/2000) = 0.0079057, 4·SE = 0.0316228.
        self.assertTrue(rg.merging_regime(merges([0.5, 0.55]))["m2"])  # sd 0.0354
        self.assertFalse(rg.merging_regime(merges([0.5, 0.54]))["m2"])  # sd 0.0283
        self.assertAlmostEqual(rg.merging_regime(merges([0.5, 0.55]))["median_se"], 0.5 * math.sqrt(0.0005 / 2))

    def test_m1_counts_destructive_merges(self):
        self.assertTrue(rg.merging_regime(merges([0.5] * 15, [1] * 10 + [0] * 5))["m1"])
        nine = rg.merging_regime(merges([0.5] * 15, [1] * 9 + [0] * 6))
        self.assertEqual((nine["destructive"], nine["m1"]), (9, False))

    def test_recovery(self):
        rec = {"backbone": np.array(["all", "all", "cnn_sup"]), "coef": np.array([0.5, 1.0, 1.0]),
               "ta_destroyed": np.array([3, 12, 5]), "diff_destroyed": np.array([-0.1, 0.02, 0.5]),
               "wins": np.array([0, 10, 5]), "losses": np.array([3, 2, 0]), "ties": np.zeros(3, int),
               "sign_p": np.array([0.25, 0.039, 0.06]), "diff_all": np.array([0.0, 0.001, 0.1])}
        row = rg.pooled_recovery(rec)
        self.assertEqual((row["backbone"], float(row["coef"])), ("all", 1.0))
        self.assertEqual(rg.recovery_verdict(row, True, 12), "agrees: PRISM recovers")
        self.assertEqual(rg.recovery_verdict(row, False, 3), "untested: 3 destructive merges (< 10)")
        at_p = dict(row, sign_p=0.05)  # p must be below 0.05
        self.assertEqual(rg.recovery_verdict(at_p, True, 12), "disagrees: does not recover")
        self.assertEqual(rg.recovery_verdict(dict(row, diff_destroyed=-0.01), True, 12), "disagrees: does not recover")
        self.assertEqual(rg.ci_verdict(0.9, float("nan"), float("nan")), "no verdict: no finite 95% CI")
        self.assertEqual(rg.recovery_verdict(dict(row, ta_destroyed=0), True, 12),
                         "untested: task arithmetic destroys none of the K-way merges")

    def test_merging_claims_wait_on_m2(self):
        corr = corr_table([("score", "retention", 0.6, 0.4, 0.75)])
        shut = {"m1": False, "m2": False, "destructive": 2}
        claims = rg.merging_claims(corr, shut, None, 0.70)
        self.assertTrue(claims[0][3].startswith("no verdict"))
        self.assertEqual(claims[1][3], "untested: 2 destructive merges (< 10)")
        self.assertEqual(rg.merging_claims(corr, dict(shut, m2=True), None, 0.70)[0][3], "agrees")

    def test_within_and_lofo(self):
        within = {"group": np.array(["cnn/sup"] * 2 + ["mlp/sup"] * 2),
                  "predictor": np.array(["score", "ease"] * 2), "target": np.array(["retention"] * 4),
                  "pearson_r": np.array([0.2, 0.1, 0.4, np.nan])}
        t = rg.within_table(within)
        self.assertEqual(list(t["group"]), ["cnn/sup", "mlp/sup", "mean over groups"])
        self.assertAlmostEqual(t["score r"][-1], 0.3)
        self.assertAlmostEqual(t["ease r"][-1], 0.1)  # NaN left out
        lofo = {"held_out": np.array(["paradigm=clip", "paradigm=sup", "family=cnn", "paradigm=sup"]),
                "predictor": np.array(["score", "score", "score", "ease"]),
                "target": np.array(["retention"] * 4), "pearson_r": np.array([0.1, 0.5, 0.9, 0.7])}
        self.assertEqual(rg.lofo_paradigm_range(lofo), (0.1, 0.5, 2))


class Kernels(unittest.TestCase):
    def test_pairing(self):
        def t(rows):
            cols = ("backbone", "k", "members", "method", "coef", "kappa", "merged_mean", "update_pct",
                    "keep_fraction")
            return {c: np.array([r[i] for r in rows]) for i, c in enumerate(cols)}
        matrices = t([("cnn", 2, "a+b", "prism", 1.0, 1.0, 0.50, 2.0, 0.4),
                      ("cnn", 2, "a+b", "prism", 0.5, 1.0, 0.40, 1.0, 0.4),
                      ("cnn", 2, "a+b", "task_arithmetic", 1.0, 0.0, 0.30, 100.0, 1.0),
                      ("mlp", 2, "a+b", "prism", 1.0, 1.0, 0.90, 3.0, 0.5)])
        kernels = t([("cnn", 2, "a+b", "prism", 1.0, 1.0, 0.55, 4.0, 0.6),
                     ("cnn", 2, "a+b", "prism", 0.5, 1.0, 0.45, 2.0, 0.6),
                     ("cnn", 3, "a+b+c", "prism", 1.0, 1.0, 0.10, 1.0, 0.1)])  # no partner: left out
        out = rg.kernel_comparison(matrices, kernels)
        self.assertEqual(list(out["method"]), ["prism"])
        self.assertEqual(out["n"][0], 2)
        self.assertAlmostEqual(out["merged_mean_matrices"][0], 0.45)
        self.assertAlmostEqual(out["merged_mean_kernels"][0], 0.50)
        self.assertAlmostEqual(out["update_pct_kernels"][0], 3.0)
        self.assertAlmostEqual(out["keep_fraction_matrices"][0], 0.4)
        self.assertAlmostEqual(out["diff"][0], 0.05)
        self.assertEqual((out["wins"][0], out["losses"][0], out["ties"][0]), (2, 0, 0))
        self.assertAlmostEqual(out["sign_p"][0], 0.5)

    def test_sign_test(self):
        self.assertEqual(rg.sign_test([1, 2, 3, 0])[:3], (3, 0, 1))
        self.assertAlmostEqual(rg.sign_test([1, 2, 3])[3], 0.25)
        self.assertAlmostEqual(rg.sign_test([1, -1])[3], 1.0)
        self.assertTrue(math.isnan(rg.sign_test([0, 0])[3]))


def write(f, path, columns):
    g = f.create_group(path)
    for k, v in columns.items():
        v = np.asarray(v)
        g[k] = np.array([x.encode() for x in v]) if v.dtype.kind == "U" else v


def render(build):
    """The real-networks section of a results file written by `build(f)`, as HTML text."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "results.h5")
        with h5py.File(path, "w") as f:
            build(f)
        with h5py.File(path, "r") as f:
            rep = Report(d)
            real_section(rep, f)
        return "".join(rep.sections[0][2]) if rep.sections else ""


def old_file(f):
    """A file from before the attribute probes, the oracle and the intervals."""
    write(f, "real/vision", {"model": np.array(["mlp_sup", "cnn_sup"]), "probe_acc": [0.8, 0.85],
                             "final_loss": [0.3, 0.2], "params": [1000, 2000]})
    write(f, "real/text", {"model": np.array(["bow"]), "probe_acc": [0.5], "final_loss": [0.9], "params": [10]})
    write(f, "real/data", {"flickr_images": [1000], "coco_images": [1000]})
    write(f, "alignment/pairs", {"vision": np.array(["mlp_sup", "cnn_sup"]), "text": np.array(["bow", "bow"]),
                                 "score": [0.1, 0.2], "ease": [0.1, 0.2], "r1_flickr": [0.01, 0.02],
                                 "r1_coco": [0.01, 0.03]})
    write(f, "alignment/analysis/correlations",
          {"predictor": np.array(["score", "score"]), "target": np.array(["r1_flickr", "r1_coco"]), "n": [2, 2],
           "pearson_r": [1.0, 1.0], "pearson_p": [np.nan, np.nan], "spearman_rho": [1.0, 1.0],
           "spearman_p": [np.nan, np.nan]})


def new_file(f):
    """A file with every table the section reads, both regimes holding."""
    probes = {f"probe_{a}": [0.3, 0.4] for a in ("ink", "brightness", "aspect", "symmetry", "fill", "texture",
                                                 "balance", "contrast")}
    write(f, "real/vision", {"model": np.array(["mlp_sup", "cnn_sup"]), "probe_acc": [0.8, 0.85],
                             "final_loss": [0.3, 0.2], "steps": [10, 10], "params": [1000, 2000],
                             "probe_attributes": [0.3, 0.4], **probes})
    write(f, "real/text", {"model": np.array(["bow"]), "probe_acc": [0.5], "final_loss": [0.9], "steps": [10],
                           "params": [10], "probe_attributes": [0.2], **{k: v[:1] for k, v in probes.items()}})
    write(f, "real/clip", {"model": np.array(["cnn_clip+tfm_clip"]), "probe_acc": [0.7], "final_loss": [1.1],
                           "steps": [10], "params": [3000], "probe_attributes": [0.5], "text_probe_acc": [0.6],
                           "text_params": [400], "text_probe_attributes": [0.45],
                           "text_probe_ink": [0.44]})
    write(f, "real/data", {"flickr_images": [1000], "coco_images": [1000], "oracle_flickr": [0.4],
                           "oracle_coco": [0.4]})
    n = 8
    write(f, "alignment/pairs", {"vision": np.array(["cnn_clip", "mlp_sup"] * 4),
                                 "text": np.array(["bow"] * n), "vision_paradigm": np.array(["language", "sup"] * 4),
                                 "score": np.linspace(0, 1, n), "ease": np.linspace(0, 1, n),
                                 "ease_excess": np.linspace(0, 0.5, n), "r1_flickr": np.linspace(0.1, 0.5, n),
                                 "r1_coco": np.linspace(0.1, 0.5, n)})
    rows = [(p, t, 0.85, 0.6, 0.95) for p in ("score", "score_excess", "ease", "ceiling", "cka")
            for t in ("r1_flickr", "r1_coco")]
    write(f, "alignment/analysis/correlations", corr_table(rows))
    m = merges(np.linspace(0.3, 0.9, 12), [1] * 10 + [0] * 2)
    write(f, "merging/pairs", dict(m, score=np.linspace(0, 1, 12)))
    write(f, "merging/analysis/correlations", corr_table([("score", "retention", 0.9, 0.8, 0.95)]))
    write(f, "prism/analysis/recovery", {"backbone": np.array(["all"]), "coef": [1.0], "n": [20],
                                         "ta_destroyed": [10], "diff_destroyed": [0.02], "wins": [9],
                                         "losses": [1], "ties": [0], "sign_p": [0.021], "diff_all": [0.004]})
    write(f, "merging/analysis/within", {"group": np.array(["cnn/sup", "cnn/sup"]),
                                         "predictor": np.array(["score", "ease"]),
                                         "target": np.array(["retention"] * 2), "n": [6, 6],
                                         "pearson_r": [0.2, 0.1], "pearson_p": [0.5, 0.5],
                                         "spearman_rho": [0.2, 0.1], "spearman_p": [0.5, 0.5]})
    write(f, "merging/analysis/lofo", {"held_out": np.array(["paradigm=sup", "paradigm=clip"]),
                                       "predictor": np.array(["score"] * 2), "target": np.array(["retention"] * 2),
                                       "n": [6, 6], "pearson_r": [0.3, 0.6]})
    merged = {"backbone": np.array(["cnn"] * 2), "k": [2, 2], "members": np.array(["a+b"] * 2),
              "method": np.array(["task_arithmetic", "prism"]), "coef": [1.0, 1.0], "kappa": [0.0, 1.0],
              "merged_mean": [0.3, 0.5], "base_mean": [0.4, 0.4], "retention": [0.5, 0.7],
              "destructive": [1, 0], "update_pct": [100.0, 2.0], "keep_fraction": [1.0, 0.4]}
    write(f, "prism/merges", merged)
    write(f, "prism/kernels", {k: np.asarray(v)[1:] for k, v in dict(merged, merged_mean=[0.3, 0.55]).items()})


def claims_file(f):
    """A new file with the re-analysis's claims tables (methods.md §5.3)."""
    new_file(f)
    inf = float("inf")
    write(f, "alignment/analysis/claims", {
        "claim": np.array(["score_r1_flickr", "score_r1_coco"]), "statistic": np.array(["pearson"] * 2),
        "x": np.array(["score"] * 2), "y": np.array(["r1_flickr", "r1_coco"]), "baseline": np.array(["", ""]),
        "n": [8, 8], "value": [0.85, float("nan")], "baseline_value": [float("nan")] * 2, "p": [0.01, float("nan")],
        "naive_lo": [0.7, float("nan")], "naive_hi": [0.95, float("nan")], "lo": [0.5, float("nan")],
        "hi": [0.97, float("nan")], "clusters": np.array(["vision × text"] * 2), "undefined_draws": [3, 0],
        "paper": np.array(["r = 0.90"] * 2), "band_lo": [0.8, 0.8], "band_hi": [1.0, 1.0],
        "verdict": np.array(["inconclusive", "untested"]),
        "reason": np.array(["", "the statistic is undefined on these 8 rows"])})
    write(f, "prism/analysis/recovery_claims", {
        "claim": np.array(["prism_recovers"]), "statistic": np.array(["mean"]), "x": np.array(["prism_minus_ta"]),
        "y": np.array([""]), "baseline": np.array([""]), "n": [10], "value": [0.02], "baseline_value": [float("nan")],
        "p": [0.02], "naive_lo": [0.01], "naive_hi": [0.03], "lo": [0.005], "hi": [0.04],
        "clusters": np.array(["backbone > members"]), "undefined_draws": [0], "paper": np.array(["recovers"]),
        "band_lo": [0.0], "band_hi": [inf], "verdict": np.array(["agrees"]), "reason": np.array([""])})


class Reanalysis(unittest.TestCase):
    def test_numbers_bands_and_reasons(self):
        self.assertEqual(ra.interval(0.1, 0.2), "[+0.100, +0.200]")
        self.assertEqual(ra.interval(float("nan"), 0.2, "one class"), "none: one class")
        self.assertEqual(ra.band(0.0, float("inf")), "≥ 0")
        self.assertEqual(ra.band(float("-inf"), 0.5), "≤ 0.5")
        self.assertEqual(ra.band(0.8, 1.0), "[0.8, 1]")
        self.assertEqual(ra.number(float("nan"), "no destructive merge among 392"),
                         "undefined: no destructive merge among 392")
        t = ra.with_reasons({"auroc": np.array([0.7, float("nan")]), "reason": np.array(["", "no merge"])},
                            ["auroc"])
        self.assertEqual(list(t["auroc"]), ["0.7", "undefined: no merge"])

    def test_the_report_shows_both_verdicts_side_by_side(self):
        page = render(claims_file)
        for text in ("re-analysis", "inconclusive: 0.85, 95% [+0.500, +0.970], band [0.8, 1]",
                     "untested: undefined: the statistic is undefined on these 8 rows",
                     "agrees: 0.02, 95% [+0.005, +0.040], band ≥ 0",
                     "not re-analysed: a ranking of paradigm medians"):
            self.assertIn(text, page)
        self.assertNotIn("<td>nan</td>", page.split("re-analysis")[1].split("</table>")[0])


class Section(unittest.TestCase):
    def test_an_old_file_renders_without_verdicts(self):
        page = render(old_file)
        self.assertIn("mlp_sup", page)
        self.assertNotIn("probe_ink", page)
        self.assertIn("not informative", page)
        self.assertIn("no verdict", page)
        self.assertNotIn("<td>agrees</td>", page)

    def test_a_new_file_is_judged(self):
        page = render(new_file)
        for text in ("probe_ink", "probe_attributes", "tfm_clip", "text (clip pair)", "G2 (coco)", "M1",
                     "Ease above chance", "PRISM recovers", "<td>agrees</td>", "mean over groups",
                     "ranges +0.30..+0.60 over 2 folds", "keep_fraction_kernels", "<td>0.05</td>"):
            self.assertIn(text, page)
        self.assertNotIn("not informative", page)

    def test_no_section_without_the_real_library(self):
        self.assertEqual(render(lambda f: write(f, "alignment/pairs", {"score": [0.1]})), "")


if __name__ == "__main__":
    unittest.main()
