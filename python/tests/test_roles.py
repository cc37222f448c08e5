"""compatnets.roles on a made-up dataset and made-up encoder features: the result, im.json
and features.safetensors the encoder_subset kind reads; masking; clear errors."""
import json
import os
import unittest

import numpy as np

from compatnets.safetensors import load, save
from tests.fixtures import MadeUpData, quiet, torch_module

roles = torch_module("roles")


@unittest.skipIf(roles is None, "python3-torch is not installed")
class RolesTest(MadeUpData, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.features = os.path.join(cls.dir.name, "features")
        rng = np.random.default_rng(0)
        for e, informative in (("good", True), ("noise", False)):
            os.makedirs(os.path.join(cls.features, e))
            for split in ("train", "probe", "flickr", "coco"):
                labels = load(os.path.join(cls.data, "images", split + ".safetensors"))["labels"]
                f = rng.normal(size=(len(labels), 6)).astype(np.float32)
                if informative:
                    f[np.arange(len(labels)), labels % 6] += 4
                save(os.path.join(cls.features, e, split + ".safetensors"), {"features": f})

    def run_subset(self, encoders, out, pool="good+noise"):
        args = ["--encoders", encoders, "--pool", pool, "--features", self.features,
                "--data", self.data, "--out", out, "--steps", "40", "--result", out + ".json"]
        return quiet(roles.main, args)

    def test_writes_what_encoder_subset_reads(self):
        out = os.path.join(self.dir.name, "good")
        self.assertEqual(self.run_subset("good", out)[0], 0)
        with open(out + ".json") as f:
            tr = json.load(f)
        with open(os.path.join(out, "im.json")) as f:
            im = json.load(f)
        self.assertEqual(set(tr), set(roles.BENCHMARKS))
        self.assertEqual(set(im), set(roles.BENCHMARKS))
        self.assertTrue(all(0 <= v <= 1 for v in list(tr.values()) + list(im.values())))
        probe = load(os.path.join(out, "features.safetensors"))
        self.assertEqual(list(probe), ["good"])
        self.assertEqual(probe["good"].shape, (40, 6))
        # The informative encoder alone beats the noise alone on the classes.
        noise = os.path.join(self.dir.name, "noise")
        self.run_subset("noise", noise)
        with open(noise + ".json") as f:
            self.assertGreater(tr["fine"], json.load(f)["fine"] + 0.2)

    def test_same_replicate_same_scores(self):
        a, b = (os.path.join(self.dir.name, n) for n in ("r1", "r2"))
        self.run_subset("good+noise", a)
        self.run_subset("good+noise", b)
        with open(a + ".json") as fa, open(b + ".json") as fb:
            self.assertEqual(json.load(fa), json.load(fb))

    def test_a_subset_outside_the_pool_or_missing_features(self):
        code, err = self.run_subset("good+other", os.path.join(self.dir.name, "x"))
        self.assertEqual(code, 2)
        self.assertIn("the subset good+other is not within the pool good+noise", err)
        code, err = self.run_subset("gone", os.path.join(self.dir.name, "y"), pool="gone")
        self.assertEqual(code, 2)
        self.assertIn("gone/train.safetensors", err)


if __name__ == "__main__":
    unittest.main()
