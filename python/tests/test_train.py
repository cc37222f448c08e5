"""compatnets.train: every family and paradigm trains a few steps on a made-up dataset and
exports what compatbench reads; the same arguments give the same bytes; bad names and
missing data fail with a clear message. Skipped without Debian's python3-torch."""
import filecmp
import json
import os
import unittest

import numpy as np

from compatnets.safetensors import load
from tests.fixtures import MadeUpData, quiet, torch_module

train = torch_module("train")


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

    def test_every_family_and_paradigm_exports_features(self):
        out = os.path.join(self.dir.name, "all")
        rows = {"vision": {"train": 60, "probe": 40, "flickr": 30, "coco": 30}}
        rows["text"] = {k: 3 * v for k, v in rows["vision"].items()}
        for model in ("mlp_ae", "cnn_simclr", "res_sup", "vit_rot", "cnn_rand",
                      "bow_label", "char_auto", "gru_masked", "tfm_auto", "tfm_rand"):
            code, r = self.run_model(model, out)
            self.assertEqual(code, 0, (model, r))
            modality = train.parse_model(model)[0]
            self.assertTrue(0 <= r["probe_acc"] <= 1 and r["params"] > 0, (model, r))
            self.assertEqual(r["steps"], 0 if model.endswith("rand") else 3)
            self.assertEqual(r["final_loss"] is None, model.endswith("rand"))
            for split, n in rows[modality].items():
                f = load(os.path.join(out, "features", model, split + ".safetensors"))["features"]
                self.assertEqual((f.shape, f.dtype), ((n, 8), np.float32), (model, split))
                self.assertTrue(np.isfinite(f).all())
            self.assertTrue(os.path.exists(os.path.join(out, "models", model + ".safetensors")))

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
        code, err = quiet(train.main, ["--model", "mlp_sup", "--data",
                                       os.path.join(self.dir.name, "nodata"), "--out", out])
        self.assertEqual(code, 2)
        self.assertRegex(err, r"nodata/images/encoder.safetensors")


if __name__ == "__main__":
    unittest.main()
