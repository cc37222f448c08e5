"""compatnets.roles on a made-up dataset and a made-up library (two small MLP encoders, one
with informative stored features): the result, im.json, features.safetensors and
model.safetensors the encoder_subset kind reads; both variants; masking through the pool's
model; a pool that disagrees with its files refused before training."""
import json
import os
import shutil
import unittest

import numpy as np

from compatnets.safetensors import load, save
from tests.fixtures import MadeUpData, quiet, torch_module

roles = torch_module("roles")


def make_library(folder, data):
    """folder/models/<e>.safetensors (an MLP of 6 features) and folder/features/<e>/<split>,
    its output on each split's images (as compatnets.train exports them): `good` a random
    MLP, whose features carry the made-up images' label; `noise` one of zero weights, whose
    features are constant."""
    import torch
    from compatnets import models
    from compatnets.jobs import as_images
    os.makedirs(os.path.join(folder, "models"))
    for i, e in enumerate(("good", "noise")):
        torch.manual_seed(i)
        enc = models.encoder("mlp", 6)
        if e == "noise":
            for p in enc.parameters():
                torch.nn.init.zeros_(p)
        save(os.path.join(folder, "models", e + ".safetensors"),
             {k: v.numpy() for k, v in enc.state_dict().items()}, metadata={"family": "mlp", "dim": "6"})
        os.makedirs(os.path.join(folder, "features", e))
        for split in roles.SPLITS:
            images = load(os.path.join(data, "images", split + ".safetensors"))["images"]
            with torch.no_grad():
                f = enc.eval()(as_images(images)).numpy()
            save(os.path.join(folder, "features", e, split + ".safetensors"), {"features": f})


@unittest.skipIf(roles is None, "python3-torch is not installed")
class RolesTest(MadeUpData, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.library = os.path.join(cls.dir.name, "library")
        make_library(cls.library, cls.data)

    def run_subset(self, encoders, out, pool="good+noise", *extra, library=None):
        args = ["--encoders", encoders, "--pool", pool, "--models", library or self.library,
                "--data", self.data, "--out", out, "--steps", "40", "--batch", "32",
                "--result", out + ".json", *extra]
        return quiet(roles.main, args)

    def outputs(self, out):
        with open(out + ".json") as f, open(os.path.join(out, "im.json")) as g:
            return json.load(f), json.load(g), load(os.path.join(out, "features.safetensors"))

    def test_frozen_writes_what_encoder_subset_reads(self):
        out = os.path.join(self.dir.name, "good")
        self.assertEqual(self.run_subset("good", out, "good+noise", "--tune", "frozen")[0], 0)
        tr, im, probe = self.outputs(out)
        self.assertEqual(set(tr), set(roles.BENCHMARKS))
        self.assertEqual(set(im), set(roles.BENCHMARKS))
        self.assertTrue(all(0 <= v <= 1 for v in list(tr.values()) + list(im.values())))
        self.assertEqual(list(probe), ["good"])
        self.assertEqual(probe["good"].shape, (40, 6))
        # The pre-projector block is the stored probe features, standardised by train's.
        stored = {s: load(os.path.join(self.library, "features", "good", s + ".safetensors"))["features"]
                  for s in ("train", "probe")}
        expect = (stored["probe"] - stored["train"].mean(0)) / (stored["train"].std(0, ddof=1) + 1e-6)
        np.testing.assert_allclose(probe["good"], expect, rtol=1e-4, atol=1e-4)
        # The informative encoder alone beats the constant one on the classes.
        noise = os.path.join(self.dir.name, "noise")
        self.run_subset("noise", noise, "good+noise", "--tune", "frozen")
        self.assertGreater(tr["fine"], self.outputs(noise)[0]["fine"] + 0.2)

    def test_joint_and_frozen_start_alike(self):
        """Before any step, the joint block (the encoder on the images) is the frozen one
        (the stored features), both standardised alike."""
        outs = [os.path.join(self.dir.name, "start_" + t) for t in roles.TUNES]
        for out, tune in zip(outs, roles.TUNES):
            self.assertEqual(self.run_subset("good", out, "good", "--tune", tune, "--steps", "0")[0], 0)
        np.testing.assert_allclose(*(self.outputs(o)[2]["good"] for o in outs), rtol=1e-5, atol=1e-5)

    def test_joint_tunes_the_encoders(self):
        frozen, joint = (os.path.join(self.dir.name, "v_" + t) for t in ("frozen", "joint"))
        self.run_subset("good", frozen, "good", "--tune", "frozen")
        self.assertEqual(self.run_subset("good", joint, "good", "--encoder-lr-scale", "1")[0], 0)
        # The frozen block is the stored features; the joint block is the trained encoder's
        # output on the images, moved by training.
        a, b = self.outputs(frozen)[2]["good"], self.outputs(joint)[2]["good"]
        self.assertEqual(a.shape, b.shape)
        self.assertGreater(np.abs(a - b).max(), 1e-2)
        # A scale of 0 leaves the encoder at the library's weights: its block moves not.
        still = os.path.join(self.dir.name, "still")
        self.run_subset("good", still, "good", "--encoder-lr-scale", "0")
        again = os.path.join(self.dir.name, "still_again")
        self.run_subset("good", again, "good", "--encoder-lr-scale", "0", "--steps", "1")
        np.testing.assert_array_equal(self.outputs(still)[2]["good"], self.outputs(again)[2]["good"])

    def test_masking_reads_the_pool_model(self):
        full = os.path.join(self.dir.name, "full")
        self.assertEqual(self.run_subset("good+noise", full)[0], 0)
        tr, im, probe = self.outputs(full)
        self.assertEqual(tr, im)  # the full pool masks nothing
        self.assertEqual(sorted(probe), ["good", "noise"])
        model = os.path.join(full, "model.safetensors")
        read_back, trained_here = (os.path.join(self.dir.name, n) for n in ("read", "here"))
        self.assertEqual(self.run_subset("noise", read_back, "good+noise", "--pool-model", model)[0], 0)
        self.run_subset("noise", trained_here)
        self.assertEqual(self.outputs(read_back)[1], self.outputs(trained_here)[1])
        code, err = self.run_subset("noise", os.path.join(self.dir.name, "r2"), "good+noise",
                                    "--pool-model", model, "--replicate", "2")
        self.assertEqual(code, 2)
        self.assertIn("model.safetensors: a model of replicate '0'; this run needs '2'", err)
        code, err = self.run_subset("noise", os.path.join(self.dir.name, "fz"), "good+noise",
                                    "--pool-model", model, "--tune", "frozen")
        self.assertIn("model.safetensors: a model of tune 'joint'; this run needs 'frozen'", err)
        broken = os.path.join(self.dir.name, "broken_model.safetensors")
        f = load(model)
        f.pop("proj.0.bias")
        save(broken, f, metadata=roles.read(model).metadata)
        code, err = self.run_subset("noise", os.path.join(self.dir.name, "bm"), "good+noise",
                                    "--pool-model", broken)
        self.assertEqual(code, 2)
        self.assertIn("broken_model.safetensors: its tensors do not fit the pool's model", err)

    def test_same_replicate_same_bytes(self):
        a, b = (os.path.join(self.dir.name, n) for n in ("r1", "r2"))
        self.run_subset("good+noise", a)
        self.run_subset("good+noise", b)
        for name in ("features.safetensors", "model.safetensors", "im.json"):
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), name)
        with open(a + ".json") as fa, open(b + ".json") as fb:
            self.assertEqual(fa.read(), fb.read())

    def test_a_pool_that_disagrees_with_its_files(self):
        code, err = self.run_subset("good+other", os.path.join(self.dir.name, "x"))
        self.assertEqual(code, 2)
        self.assertIn("the subset good+other is not within the pool good+noise", err)
        code, err = self.run_subset("gone", os.path.join(self.dir.name, "y"), "gone")
        self.assertEqual(code, 2)
        self.assertIn("models/gone.safetensors", err)
        for broken, message in (((5, 6), "the probe split has 40 images"),
                                ((40, 7), "but the model good.safetensors gives 6 features"),
                                ((60, 6), "not the output of the model")):
            lib = os.path.join(self.dir.name, "broken")
            shutil.rmtree(lib, ignore_errors=True)
            shutil.copytree(self.library, lib)
            split = "train" if broken[0] == 60 else "probe"
            bad = os.path.join(lib, "features", "good", split + ".safetensors")
            save(bad, {"features": np.ones(broken, np.float32)})
            out = os.path.join(self.dir.name, "z")
            code, err = self.run_subset("good", out, library=lib)
            self.assertEqual(code, 2)
            self.assertIn(bad + ": ", err)
            self.assertIn(message, err)
            self.assertFalse(os.path.exists(out + ".json"))


if __name__ == "__main__":
    unittest.main()
