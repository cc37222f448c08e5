"""compatnets.finetune: fine-tunes keep the backbone's tensor names, save intermediate steps
and probe features, and `evaluate` scores a checkpoint with each fine-tune's own head."""
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

    def evaluate(self, checkpoint):
        out = os.path.join(self.dir.name, "eval.json")
        ft = [os.path.join(self.lib, "finetunes", f"cnn_sup_{t}.safetensors") for t in ("fine", "rotated")]
        code, err = quiet(finetune.main, ["evaluate", "--checkpoint", checkpoint, "--base",
                                          os.path.join(self.lib, "models", "cnn_sup.safetensors"),
                                          "--finetuned", *ft, "--tasks", "fine", "rotated",
                                          "--data", self.data, "--models", self.lib, "--out", out])
        self.assertEqual(code, 0, err)
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
        self.assertEqual(set(m), {"acc_a", "acc_b", "ft_acc_a", "ft_acc_b", "base_acc_a", "base_acc_b"})

    def test_unknown_task(self):
        code, err = quiet(finetune.main, ["--backbone", "cnn_sup", "--task", "juggling", "--models",
                                          self.lib, "--data", self.data, "--out", self.lib])
        self.assertEqual(code, 2)
        self.assertIn("unknown task 'juggling'", err)


if __name__ == "__main__":
    unittest.main()
