"""compatnets.finetune: fine-tunes keep the backbone's tensor names, save intermediate steps
and probe features, and `evaluate` scores a checkpoint with each fine-tune's own head; a
tagged fine-tune has its own names and records its tag and learning rate; mae and clip
backbones fine-tune like the others."""
import json
import os
import unittest

from compatnets.safetensors import load, read, save
from tests.fixtures import MadeUpData, quiet, torch_module

finetune = torch_module("finetune")
train = torch_module("train")


@unittest.skipIf(finetune is None, "python3-torch is not installed")
class FinetuneTest(MadeUpData, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.lib = os.path.join(cls.dir.name, "lib")
        code, err = quiet(train.main, ["--model", "cnn_sup", "--data", cls.data, "--out", cls.lib,
                                       "--steps", "3", "--batch", "16", "--dim", "8"])
        assert code == 0, err
        for task in ("fine", "rotated"):
            code, err = quiet(finetune.main, ["--backbone", "cnn_sup", "--task", task, "--models", cls.lib,
                                              "--data", cls.data, "--out", cls.lib, "--steps", "6",
                                              "--batch", "16", "--save-steps", "2,4",
                                              "--result", os.path.join(cls.lib, task + ".json")])
            assert code == 0, err

    def test_checkpoints_keep_the_backbone_names(self):
        base = read(os.path.join(self.lib, "models", "cnn_sup.safetensors"))
        ft = read(os.path.join(self.lib, "finetunes", "cnn_sup_rotated.safetensors"))
        self.assertEqual(set(ft.tensors) - set(base.tensors), {"head.weight", "head.bias"})
        for k, v in base.tensors.items():
            self.assertEqual(ft.tensors[k].shape, v.shape, k)
        self.assertEqual((ft.metadata["task"], ft.metadata["steps"]), ("rotated", "6"))
        for step in (2, 4):
            mid = read(os.path.join(self.lib, "finetunes", f"cnn_sup_rotated@{step}.safetensors"))
            self.assertEqual(mid.metadata["steps"], str(step))
        probe = load(os.path.join(self.lib, "finetune_features", "cnn_sup+rotated", "probe.safetensors"))
        self.assertEqual(probe["features"].shape, (40, 8))
        with open(os.path.join(self.lib, "rotated.json")) as f:
            r = json.load(f)
        self.assertTrue(0 <= r["ft_acc"] <= 1 and 0 <= r["base_acc"] <= 1 and r["steps"] == 6)

    def evaluate(self, checkpoint, finetuned=None, tasks=("fine", "rotated"), expect=0):
        out = os.path.join(self.dir.name, "eval.json")
        ft = finetuned or [os.path.join(self.lib, "finetunes", f"cnn_sup_{t}.safetensors") for t in tasks]
        code, err = quiet(finetune.main, ["evaluate", "--checkpoint", checkpoint, "--base",
                                          os.path.join(self.lib, "models", "cnn_sup.safetensors"),
                                          "--finetuned", *ft, "--tasks", *tasks,
                                          "--data", self.data, "--models", self.lib, "--out", out])
        self.assertEqual(code, expect, err)
        if expect:
            return err
        with open(out) as f:
            return json.load(f)

    def test_evaluate_scores_a_merge_with_each_head(self):
        ft = os.path.join(self.lib, "finetunes", "cnn_sup_fine.safetensors")
        same = self.evaluate(ft)
        with open(os.path.join(self.lib, "fine.json")) as f:
            r = json.load(f)
        self.assertAlmostEqual(same["acc_a"], same["ft_acc_a"])        # the fine-tune itself
        self.assertAlmostEqual(same["ft_acc_a"], r["ft_acc"])          # as its training reported
        self.assertAlmostEqual(same["base_acc_a"], r["base_acc"])
        a, b = load(ft), load(os.path.join(self.lib, "finetunes", "cnn_sup_rotated.safetensors"))
        merged = os.path.join(self.dir.name, "merged.safetensors")
        save(merged, {k: (a[k] + b[k]) / 2 for k in a if not k.startswith("head.")})
        m = self.evaluate(merged)
        self.assertEqual(set(m), {f"{p}acc_{i}" for p in ("", "ft_", "base_") for i in "12ab"})

    def test_stored_scores_equal_scores_computed_again(self):
        """The accuracies a fine-tune stores (final and each saved step) are the ones evaluate
        computes from the weights; a checkpoint without them is scored from scratch."""
        for name in ("cnn_sup_rotated", "cnn_sup_rotated@2"):
            path = os.path.join(self.lib, "finetunes", name + ".safetensors")
            f = read(path)
            bare = os.path.join(self.dir.name, "bare.safetensors")
            save(bare, f.tensors, metadata={k: v for k, v in f.metadata.items() if "acc" not in k})
            stored = self.evaluate(path, [path], ("rotated",))
            computed = self.evaluate(path, [bare], ("rotated",))
            self.assertEqual(stored, computed)
            self.assertEqual(stored["ft_acc_1"], float(f.metadata["test_acc"]))
            self.assertEqual(stored["acc_1"], stored["ft_acc_1"])

    def test_evaluate_takes_k_members(self):
        tasks = ("fine", "rotated", "fine")
        m = self.evaluate(os.path.join(self.lib, "finetunes", "cnn_sup_fine.safetensors"), tasks=tasks)
        self.assertEqual(set(m), {f"{p}acc_{i}" for p in ("", "ft_", "base_") for i in "123"})
        self.assertEqual(m["acc_1"], m["acc_3"])

    def test_evaluate_refuses_mismatched_lists(self):
        ft = [os.path.join(self.lib, "finetunes", "cnn_sup_fine.safetensors")]
        err = self.evaluate(ft[0], ft, ("fine", "rotated"), expect=2)
        self.assertIn("1 fine-tunes but 2 tasks", err)

    def test_a_checkpoint_that_does_not_fit_is_named(self):
        ft = os.path.join(self.lib, "finetunes", "cnn_sup_fine.safetensors")
        f = read(ft)
        name = sorted(k for k in f.tensors if not k.startswith("head."))[0]
        bad = os.path.join(self.dir.name, "misshapen.safetensors")
        save(bad, dict(f.tensors, **{name: f.tensors[name].reshape(-1)[:-1]}))
        err = self.evaluate(bad, expect=2)
        self.assertIn("misshapen.safetensors: does not fit the backbone", err)

    def test_digits_kept_after_the_first_read_are_the_same(self):
        try:
            import sklearn  # noqa: F401
        except ImportError:
            self.skipTest("python3-sklearn is not installed")
        data = os.path.join(self.dir.name, "digits_data")
        os.makedirs(data)
        first = finetune.task_data(data, "digits", test=True)
        self.assertTrue(os.path.exists(os.path.join(data, "digits.safetensors")))
        again = finetune.task_data(data, "digits", test=True)
        self.assertEqual(first[0].shape, (597, 1, 28, 28))
        self.assertTrue(bool((first[0] == again[0]).all()) and bool((first[1] == again[1]).all()))

    def finetune(self, backbone, task, *extra):
        return quiet(finetune.main, ["--backbone", backbone, "--task", task, "--models", self.lib,
                                     "--data", self.data, "--out", self.lib, "--steps", "6",
                                     "--batch", "16", *extra])

    def test_tagged_finetune(self):
        code, err = self.finetune("cnn_sup", "fine", "--save-steps", "2", "--tag", "lr1e-3")
        self.assertEqual(code, 0, err)
        tagged = read(os.path.join(self.lib, "finetunes", "cnn_sup_fine_lr1e-3.safetensors"))
        self.assertEqual((tagged.metadata["tag"], tagged.metadata["lr"]), ("lr1e-3", "0.001"))
        plain = read(os.path.join(self.lib, "finetunes", "cnn_sup_fine.safetensors"))
        self.assertNotIn("tag", plain.metadata)
        for k, v in plain.tensors.items():  # the same fine-tune (same lr), named apart
            self.assertTrue((tagged.tensors[k] == v).all(), k)
        mid = read(os.path.join(self.lib, "finetunes", "cnn_sup_fine_lr1e-3@2.safetensors"))
        self.assertEqual((mid.metadata["steps"], mid.metadata["tag"]), ("2", "lr1e-3"))
        probe = os.path.join(self.lib, "finetune_features", "cnn_sup_lr1e-3+fine", "probe.safetensors")
        self.assertEqual(load(probe)["features"].shape, (40, 8))
        code, err = self.finetune("cnn_sup", "rotated", "--tag", "lr1e-2", "--lr", "1e-2")
        self.assertEqual(code, 0, err)
        path = os.path.join(self.lib, "finetunes", "cnn_sup_rotated_lr1e-2.safetensors")
        self.assertEqual(read(path).metadata["lr"], "0.01")
        m = self.evaluate(path, [path], ("rotated",))
        self.assertEqual(m["acc_1"], m["ft_acc_1"])
        code, err = self.finetune("cnn_sup", "fine", "--tag", "lr/2")
        self.assertEqual(code, 2)
        self.assertIn("fine-tune tag 'lr/2'", err)

    def test_mae_and_clip_backbones(self):
        for model in ("cnn_mae", "vit_clip+bow_clip"):
            code, err = quiet(train.main, ["--model", model, "--data", self.data, "--out", self.lib,
                                           "--steps", "3", "--batch", "16", "--dim", "8"])
            self.assertEqual(code, 0, err)
        for backbone in ("cnn_mae", "vit_clip"):
            result = os.path.join(self.lib, backbone + ".json")
            code, err = self.finetune(backbone, "coarse", "--result", result)
            self.assertEqual(code, 0, err)
            with open(result) as f:
                r = json.load(f)
            self.assertTrue(0 <= r["ft_acc"] <= 1 and 0 <= r["base_acc"] <= 1, r)
        code, err = self.finetune("bow_clip", "coarse")
        self.assertEqual(code, 2)
        self.assertIn("bow_clip.safetensors: a text encoder", err)

    def test_unknown_task(self):
        code, err = quiet(finetune.main, ["--backbone", "cnn_sup", "--task", "juggling", "--models",
                                          self.lib, "--data", self.data, "--out", self.lib])
        self.assertEqual(code, 2)
        self.assertIn("unknown task 'juggling'", err)


if __name__ == "__main__":
    unittest.main()
