"""compatnets.train: every family and paradigm trains a few steps on a made-up dataset and
exports what compatbench reads, with the class and attribute probes; a clip pair exports both
encoders; text widths change the capacity and the default width is the name without one; the
same arguments give the same bytes; bad names and missing data fail with a clear message.
Skipped without Debian's python3-torch."""
import filecmp
import json
import os
import unittest

import numpy as np

from compatnets.captions import DESCRIBED
from compatnets.safetensors import load, read
from tests.fixtures import MadeUpData, quiet, torch_module

train = torch_module("train")
models = torch_module("models")
ROWS = {"vision": {"train": 60, "probe": 40, "flickr": 30, "coco": 30}}
ROWS["text"] = {k: 3 * v for k, v in ROWS["vision"].items()}  # 3 captions per image
PROBES = ["probe_acc", "probe_attributes"] + ["probe_" + a for a in DESCRIBED]


@unittest.skipIf(train is None, "python3-torch is not installed")
class TrainTest(MadeUpData, unittest.TestCase):
    def run_model(self, model, out, *extra):
        result = os.path.join(out, model + ".json")
        args = ["--model", model, "--data", self.data, "--out", out, "--steps", "3",
                "--batch", "16", "--dim", "8", "--result", result, *extra]
        code, err = quiet(train.main, args)
        if code != 0:
            return code, err
        with open(result) as f:
            return code, json.load(f)

    def assert_exported(self, out, model, modality):
        for split, n in ROWS[modality].items():
            f = load(os.path.join(out, "features", model, split + ".safetensors"))["features"]
            self.assertEqual((f.shape, f.dtype), ((n, 8), np.float32), (model, split))
            self.assertTrue(np.isfinite(f).all(), (model, split))
        self.assertTrue(os.path.exists(os.path.join(out, "models", model + ".safetensors")))

    def assert_probes(self, r, prefix=""):
        for k in PROBES:
            self.assertTrue(0 <= r[prefix + k] <= 1, (prefix + k, r))
        mean = np.mean([r[prefix + "probe_" + a] for a in DESCRIBED])
        self.assertAlmostEqual(r[prefix + "probe_attributes"], mean)

    def test_every_family_and_paradigm_exports_features(self):
        out = os.path.join(self.dir.name, "all")
        for model in ("mlp_ae", "cnn_simclr", "res_sup", "vit_rot", "cnn_rand", "res_mae",
                      "bow_label", "char_auto", "gru_masked", "tfm_auto", "tfm_rand"):
            code, r = self.run_model(model, out)
            self.assertEqual(code, 0, (model, r))
            self.assertTrue(r["params"] > 0, (model, r))
            self.assert_probes(r)
            self.assertEqual(r["steps"], 0 if model.endswith("rand") else 3)
            self.assertEqual(r["final_loss"] is None, model.endswith("rand"))
            self.assert_exported(out, model, train.parse_model(model).modality)

    def test_mae_loss_falls(self):
        out = os.path.join(self.dir.name, "mae")
        for model in ("cnn_mae", "vit_mae"):
            _, first = self.run_model(model, out, "--steps", "1")  # the first batch's loss
            code, r = self.run_model(model, out, "--steps", "40")
            self.assertEqual(code, 0, r)
            self.assertLess(r["final_loss"], 0.7 * first["final_loss"], model)
            self.assert_exported(out, model, "vision")

    def test_clip_pair_exports_both_encoders(self):
        out = os.path.join(self.dir.name, "clip")
        code, r = self.run_model("cnn_clip+gru_clip", out)
        self.assertEqual(code, 0, r)
        self.assert_exported(out, "cnn_clip", "vision")
        self.assert_exported(out, "gru_clip", "text")
        self.assert_probes(r)
        self.assert_probes(r, "text_")
        cnn = sum(p.numel() for p in models.encoder("cnn", 8).parameters())
        self.assertEqual((r["steps"], r["params"]), (3, cnn))
        self.assertTrue(r["text_params"] > 0 and np.isfinite(r["final_loss"]))
        meta = read(os.path.join(out, "models", "gru_clip.safetensors")).metadata
        self.assertEqual((meta["family"], meta["modality"]), ("gru", "text"))
        self.assertNotIn("width", meta)  # the family's default width: as before widths existed
        self.assertNotIn("width", read(os.path.join(out, "models", "cnn_clip.safetensors")).metadata)
        again = os.path.join(self.dir.name, "clip_again")
        self.assertEqual(self.run_model("cnn_clip+gru_clip", again), (0, r))
        for name in ("models/cnn_clip.safetensors", "models/gru_clip.safetensors",
                     "features/gru_clip/flickr.safetensors"):
            self.assertTrue(filecmp.cmp(os.path.join(out, name), os.path.join(again, name),
                                        shallow=False), name)

    def test_text_widths(self):
        out = os.path.join(self.dir.name, "widths")
        for family, width in (("tfm", "128"), ("gru", "96"), ("bow", "256"), ("char", "32")):
            _, default = self.run_model(f"{family}_auto", out)
            code, wide = self.run_model(f"{family}{width}_auto", out)
            self.assertEqual(code, 0, wide)
            self.assertNotEqual(wide["params"], default["params"], family)
            meta = read(os.path.join(out, "models", f"{family}{width}_auto.safetensors")).metadata
            self.assertEqual(meta["width"], width)
        _, explicit = self.run_model("tfm64_auto", out)
        self.assertEqual(explicit, self.run_model("tfm_auto", out)[1])
        self.assertTrue(filecmp.cmp(os.path.join(out, "models", "tfm64_auto.safetensors"),
                                    os.path.join(out, "models", "tfm_auto.safetensors"), shallow=False))
        cmp = filecmp.dircmp(os.path.join(out, "features", "tfm64_auto"),
                             os.path.join(out, "features", "tfm_auto"))
        self.assertEqual((cmp.diff_files, len(cmp.same_files)), ([], 4))

    def test_same_arguments_same_bytes(self):
        a, b = (os.path.join(self.dir.name, n) for n in ("a", "b"))
        ra, rb = self.run_model("cnn_sup", a), self.run_model("cnn_sup", b)
        self.assertEqual(ra, rb)
        self.assertTrue(filecmp.cmp(os.path.join(a, "models", "cnn_sup.safetensors"),
                                    os.path.join(b, "models", "cnn_sup.safetensors"), shallow=False))
        cmp = filecmp.dircmp(os.path.join(a, "features", "cnn_sup"), os.path.join(b, "features", "cnn_sup"))
        self.assertEqual((cmp.diff_files, len(cmp.same_files)), ([], 4))
        _, rc = self.run_model("cnn_sup", os.path.join(self.dir.name, "c"), "--seed", "2")
        self.assertNotEqual(ra[1], rc)

    def test_bad_names_and_missing_data(self):
        out = os.path.join(self.dir.name, "bad")
        code, err = self.run_model("cnn_dance", out)
        self.assertEqual(code, 2)
        self.assertIn("model 'cnn_dance' is not <family>_<paradigm>", err)
        code, err = self.run_model("char_masked", out)
        self.assertIn("the character CNN has no masked-word paradigm", err)
        for model, reason in (("cnn_clip", "comes only from a pair"),
                              ("tfm_clip", "comes only from a pair"),
                              ("cnn128_sup", "a width (128) is for the text families only"),
                              ("cnn_sup+tfm_auto", "'+' joins the two encoders of a pair"),
                              ("tfm_clip+cnn_clip", "a vision encoder, then a text encoder"),
                              ("tfm6_auto", "not a positive multiple")):
            code, err = self.run_model(model, out)
            self.assertEqual(code, 2, model)
            self.assertIn(f"model '{model}'", err)
            self.assertIn(reason, err)
        self.assertFalse(os.path.exists(os.path.join(out, "models")))
        code, err = quiet(train.main, ["--model", "mlp_sup", "--data",
                                       os.path.join(self.dir.name, "nodata"), "--out", out])
        self.assertEqual(code, 2)
        self.assertRegex(err, r"nodata/images/encoder.safetensors")


if __name__ == "__main__":
    unittest.main()
