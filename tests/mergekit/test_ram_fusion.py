"""Hand-worked checks of ram, ramplus_tl and arcee_fusion: RamFusionReference (reference.py,
float64; run with test_reference, which imports it) and RamFusionTorch (torch_ram_fusion.py
in the dtype; run with test_torch_reference):

    cd tests/mergekit && PYTHONPATH=../../python /usr/bin/python3 -W error -m unittest test_reference test_torch_reference
"""
import os
import tempfile
import unittest

import numpy as np
import torch
import yaml

import reference as R
import torch_ram_fusion as TF
import torch_reference as T
from check_configs import local_name
from make_models import write_models

HERE = os.path.dirname(os.path.abspath(__file__))
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
# 2^25 + 4 values: n - 1 = 2^25 + 3 is 2^25 + 4 in float32, and 0.75 of it 25165827 rounds
# to 25165828 (float32's spacing there is 2); float64: 8388608 and 25165826
BIG_N = 2 ** 25 + 4


def job(method, sources, parameters=None, name="x"):
    """A TensorJob over models named in `sources` ({model: per-model parameters}); the
    first is the base."""
    config = {"merge_method": method, "base_model": next(iter(sources)),
              "parameters": parameters}
    sl = {"sources": [{"model": m, "parameters": p} for m, p in sources.items()]}
    return R.TensorJob(name, [(m, name) for m in sources], R.Reader(config, sl, 0.0))


def v(*x):
    return np.array(x, dtype=np.float64)


def big_importance():
    """1.1e6 distinct values, shuffled (seeded): i^2 for i < n."""
    n = 1_100_003
    return np.random.default_rng(5).permutation(np.arange(n, dtype=np.float64) ** 2), n


def fixture(key):
    with open(os.path.join(HERE, "fixtures", key + ".yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


class Models:
    """write_models' checkpoints in a temporary folder, for a TestCase's class."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.paths = write_models(cls.dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def resolve(self, name):
        return self.paths[local_name(name)]


class RamFusionReference(Models, unittest.TestCase):
    # task vectors of two models over base 1: coordinate 0 has one contributor, 1 two, 2 none,
    # 3 one (model 1's 1e-6 is below epsilon 1e-5), 4 two (of opposite signs)
    tv1, tv2 = v(0.5, 0.2, 0, 1e-6, -0.3), v(0, 0.4, 0, 0.3, -0.1)

    def test_ram_one_two_and_no_contributors(self):
        got = R.ram(np.ones(5), [1 + self.tv1, 1 + self.tv2])
        np.testing.assert_allclose(got, 1 + v(0.5, 0.3, 0, 0.3, -0.2), rtol=1e-15)
        # epsilon .35 (a global parameter; model 1's own is not read): .5 and .4 alone
        values = {"b": np.ones(5), "m1": 1 + self.tv1, "m2": 1 + self.tv2}
        j = job("ram", {"b": None, "m1": {"epsilon": 0.0}, "m2": None}, {"epsilon": 0.35})
        np.testing.assert_allclose(R.ram_merge(j, values, "b"), v(1.5, 1.4, 1, 1, 1),
                                   rtol=1e-15)
        # three contributors: their mean
        got = R.ram(np.zeros(2), [v(0.3, 0), v(0.6, 0), v(1.2, 0.5)])
        np.testing.assert_allclose(got, [0.7, 0.5], rtol=1e-15)
        np.testing.assert_array_equal(R.ram(np.ones(2), []), [1, 1])
        with self.assertRaises(R.Unsupported) as e:
            R.ram_merge(job("ram", {"m1": None, "m2": None}), values, None)
        self.assertEqual(e.exception.key, "base_model")

    def test_ramplus_tl_lambda(self):
        # nonzero: model 1 at 0, 1, 2; model 2 at 1, 3. Model 1: 1 shared, 2 unique, rho .5;
        # model 2: 1 shared, 1 unique, rho 1, clamped to alpha .8. r .3: lambda 1.15, 1.24
        tv1, tv2 = v(0.5, 0.25, 0.125, 0, 0), v(0, 0.75, 0, 0.25, 0)
        _, nonzero, counts = R.ram_vectors([tv1, tv2], np.zeros(5), 1e-5)
        np.testing.assert_allclose(R.ramplus_lambda(nonzero, counts, 0.3, 0.8), [1.15, 1.24],
                                   rtol=1e-15)
        want = 1 + v(0.5 * 1.15, 0.5, 0.125 * 1.15, 0.25 * 1.24, 0)
        np.testing.assert_allclose(R.ramplus_tl(np.ones(5), [1 + tv1, 1 + tv2], 0.3, 0.8), want,
                                   rtol=1e-15)
        j = job("ramplus_tl", {"b": None, "m1": {"r": 5}, "m2": None}, {"r": 0.3, "alpha": 0.8})
        got = R.ramplus_tl_merge(j, {"b": np.ones(5), "m1": 1 + tv1, "m2": 1 + tv2}, "b")
        np.testing.assert_allclose(got, want, rtol=1e-15)
        # no unique coordinate: rho = shared / epsilon, clamped to alpha (default .2): 1.02;
        # nothing at all: rho 0, lambda 1; with epsilon 0 as well: 0 / 0, NaN (as torch)
        _, nonzero, counts = R.ram_vectors([v(1, 1), v(1, 0), v(0, 0)], np.zeros(2), 1e-5)
        np.testing.assert_allclose(R.ramplus_lambda(nonzero, counts), [1.02, 1.02, 1])
        self.assertTrue(np.isnan(R.ramplus_lambda(nonzero, counts, epsilon=0)[2]))

    def test_arcee_fusion_quantile_index_in_float32(self):
        self.assertEqual([R.quantile_index(q, 9) for q in (0.5, 0.25, 0.75)], [4, 2, 6])
        self.assertEqual([R.quantile_index(q, 8) for q in (0.5, 0.25, 0.75)], [3, 1, 5])
        self.assertEqual([R.quantile_index(q, BIG_N) for q in (0.25, 0.75)],
                         [8388609, 25165828])

    def test_arcee_fusion_above_a_million_values_uses_them_all(self):
        imp, n = big_importance()
        i = [int(np.float32(q) * np.float32(n - 1)) for q in (0.5, 0.25, 0.75)]
        self.assertEqual(i, [550001, 275000, 825001])
        self.assertEqual(R.fusion_threshold(imp), i[0] ** 2 + 1.5 * (i[2] ** 2 - i[1] ** 2))
        # the whole kernel on 1.1e6 values (137500 rows of 8) merges, by that threshold
        rng = np.random.default_rng(6)
        base = rng.normal(0, 0.1, (137500, 8))
        other = base + rng.normal(0, 0.02, base.shape)
        importance = R.fusion_importance(base, other)
        keep = importance >= R.fusion_threshold(importance)
        self.assertTrue(0 < keep.sum() < keep.size / 4)
        np.testing.assert_array_equal(R.arcee_fusion(base, other),
                                      base + (other - base) * keep)

    def test_fixtures_refusals_and_dtypes(self):
        for key, refusal in [("extra/arcee_fusion_two_models_refused", "arcee_fusion"),
                             ("extra/ram_without_base_refused", "base_model")]:
            with self.assertRaises(R.Unsupported) as e:
                R.merge(fixture(key), self.resolve)
            self.assertEqual(e.exception.key, refusal)
        # arcee_fusion and ramplus_tl return float32 (written so without out_dtype);
        # config.json's torch_dtype is out_dtype, else dtype
        for key, written, torch_dtype in [("extra/arcee_fusion_bf16", "F32", "bfloat16"),
                                          ("extra/arcee_fusion_out_dtype", "BF16", "bfloat16"),
                                          ("extra/ram_three_models", "BF16", "bfloat16"),
                                          ("extra/ramplus_tl_f16", "F32", "float16"),
                                          ("extra/ramplus_tl_bf16_out_dtype", "BF16", "bfloat16")]:
            merged = R.merge(fixture(key), self.resolve)
            self.assertEqual(set(merged.dtypes.values()), {written}, key)
            self.assertEqual(merged.torch_dtype, torch_dtype, key)


class RamFusionTorch(Models, unittest.TestCase):
    def test_ram_in_bf16_and_epsilon_rounded_to_it(self):
        base = torch.ones(5, dtype=BF16)
        m1 = base + torch.tensor([0.5, 0.25, 0, 2 ** -20, -0.5]).to(BF16)   # 1 + 2^-20: 1
        m2 = base + torch.tensor([0, 0.75, 0, 0.25, 0.25]).to(BF16)
        got = TF.ram(base, [m1, m2])
        self.assertEqual(got.dtype, BF16)
        self.assertEqual(got.tolist(), [1.5, 1.5, 1, 1.25, 0.875])
        # |tau| = bf16(.3) = .30078125 is not above epsilon .3: compared as bf16(.3)
        zero, m3 = torch.zeros(1, dtype=BF16), torch.tensor([0.3]).to(BF16)
        self.assertEqual(TF.ram(zero, [m3], 0.3).tolist(), [0.0])
        self.assertEqual(TF.ram(zero, [m3], 0.29).tolist(), [0.30078125])

    def test_ramplus_tl_lambda_float32_promotes_the_result(self):
        base = torch.ones(5, dtype=BF16)
        m1 = base + torch.tensor([0.5, 0.25, 0.125, 0, 0]).to(BF16)
        m2 = base + torch.tensor([0, 0.75, 0, 0.25, 0]).to(BF16)
        _, nonzero, _, overlap, unique = TF.ram_vectors([m1, m2], base, 1e-5)
        lam = TF.ramplus_lambda(nonzero, overlap, unique, 0.3, 0.8)
        f = np.float32
        want_lam = [f(1) + f(0.3) * f(0.5), f(1) + f(0.3) * f(0.8)]
        self.assertEqual((lam.dtype, lam.tolist()), (F32, want_lam))
        got = TF.ramplus_tl(base, [m1, m2], 0.3, 0.8)
        want = [f(1) + f(0.5) * want_lam[0], 1.5, f(1) + f(0.125) * want_lam[0],
                f(1) + f(0.25) * want_lam[1], 1]
        self.assertEqual((got.dtype, got.tolist()), (F32, [float(x) for x in want]))

    def test_arcee_fusion_threshold_mask_and_float32_result(self):
        # 1-D: importance |delta| * KL; only the last delta (.99) is above the threshold
        a = 0.00787353515625   # 1.0000001b * 2^-7
        base = torch.tensor([0.0] * 8 + [a]).to(BF16)
        other = torch.tensor([0.01 * i for i in range(1, 9)] + [1.0]).to(BF16)
        importance = TF.fusion_importance(other, base)
        flat = importance.sort().values
        threshold = TF.fusion_threshold(importance)
        want = flat[4] + (flat[6] - flat[2]).float().mul(1.5).to(BF16)   # torch 2's 1.5 * iqr
        self.assertEqual((threshold.dtype, threshold.item()), (BF16, want.item()))
        # equal values at the cut: the order among them does not change the threshold
        self.assertEqual(TF.fusion_threshold(importance.flip(0)).item(), threshold.item())
        got = TF.arcee_fusion(base, other)
        # delta = bf16(1 - a) = .9921875; base + delta in float32: 1 + 2^-14 (bf16: 1)
        self.assertEqual((got.dtype, got.tolist()), (F32, [0.0] * 8 + [1.00006103515625]))

    def test_arcee_fusion_quantiles_of_all_values(self):
        q = (torch.tensor([0.25, 0.75]) * (BIG_N - 1)).long().tolist()
        self.assertEqual(q, [R.quantile_index(0.25, BIG_N), R.quantile_index(0.75, BIG_N)])
        imp, _ = big_importance()
        t = torch.from_numpy(imp)
        self.assertEqual(TF.fusion_threshold(t).item(), R.fusion_threshold(imp))
        b = t.to(BF16)
        flat = b.sort().values
        want = flat[550001] + (flat[825001] - flat[275000]).float().mul(1.5).to(BF16)
        self.assertEqual(TF.fusion_threshold(b).item(), want.item())

    def test_float64_kernels_equal_the_reference(self):
        rng = np.random.default_rng(7)
        x = {k: rng.normal(0, 0.1, (6, 8)) for k in ("b", "m1", "m2", "m3")}
        x["m1"][0] = x["b"][0]   # a row with no contributor
        t = {k: torch.from_numpy(a) for k, a in x.items()}
        ms = ["m1", "m2", "m3"]
        for eps in (1e-5, 0.1):
            np.testing.assert_array_equal(TF.ram(t["b"], [t[m] for m in ms], eps).numpy(),
                                          R.ram(x["b"], [x[m] for m in ms], eps))
            got = TF.ramplus_tl(t["b"], [t[m] for m in ms], 0.5, 0.6, eps).numpy()
            want = R.ramplus_tl(x["b"], [x[m] for m in ms], 0.5, 0.6, eps)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)   # float32 lambda_
        np.testing.assert_array_equal(TF.arcee_fusion(t["b"], t["m2"]).numpy(),
                                      R.arcee_fusion(x["b"], x["m2"]))

    def test_fixtures_compute_and_written_dtypes(self):
        for key, compute, written in [("extra/arcee_fusion_bf16", "F32", "F32"),
                                      ("extra/arcee_fusion_out_dtype", "F32", "BF16"),
                                      ("tests/test_ram_merge", "BF16", "BF16"),
                                      ("extra/ramplus_tl_f16", "F32", "F32"),
                                      ("extra/ramplus_tl_bf16_out_dtype", "F32", "BF16")]:
            got = T.merge(fixture(key), self.resolve)
            self.assertEqual(set(got.compute_dtypes.values()), {compute}, key)
            self.assertEqual(set(got.dtypes.values()), {written}, key)
            self.assertFalse(any(m.any() for m in got.tie_mask.values()), key)
        for key in ("extra/ram_three_models", "extra/ramplus_tl_f16", "extra/arcee_fusion_bf16"):
            config = T.as_float32(fixture(key))
            ref, got = R.merge(config, self.resolve), T.merge(config, self.resolve)
            for name, want in ref.tensors.items():
                err = np.abs(got.tensors[name] - want).max()
                self.assertLessEqual(err, 1e-6 * np.abs(want).max(), (key, name))


if __name__ == "__main__":
    unittest.main()
