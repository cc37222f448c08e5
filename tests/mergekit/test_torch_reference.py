"""Hand-worked checks of torch_reference.py (mergekit's kernels in torch, in the dtype):

    cd tests/mergekit && PYTHONPATH=../../python /usr/bin/python3 -W error -m unittest test_torch_reference
"""
import os
import unittest

import numpy as np
import torch
import yaml

import reference as R
import torch_kernels as K
import torch_ops as O
import torch_reference as T
from test_ram_fusion import Models, RamFusionTorch  # noqa: F401  (ram, ramplus_tl, arcee_fusion)

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
HERE = os.path.dirname(os.path.abspath(__file__))


def job(method, sources, parameters=None, name="x"):
    """A TensorJob over models named in `sources` ({model: parameters}); the first is the
    base."""
    config = {"merge_method": method, "base_model": next(iter(sources)),
              "parameters": parameters}
    sl = {"sources": [{"model": m, "parameters": p} for m, p in sources.items()]}
    return R.TensorJob(name, [(m, name) for m in sources], R.Reader(config, sl, 0.0))


def tensors(dtype, **values):
    """{name: the values (given in float64) as loaded with `dtype`: float32, then .to}."""
    return {k: torch.tensor(v, dtype=F32).to(dtype) for k, v in values.items()}


def f64(values):
    return {k: v.double().numpy() for k, v in values.items()}


def fixed(*u):
    return lambda: np.array(u, dtype=np.float64)


class TorchItself(unittest.TestCase):
    """The facts of this torch the module's docstring states."""

    def test_scalars_are_rounded_to_the_dtype_first(self):
        x = torch.tensor([3.0], dtype=BF16)
        self.assertEqual((x * 0.3).item(), 0.90234375)        # 3 * bf16(0.3) = 3 * 0.30078125
        self.assertEqual(torch.tensor([0.9]).to(BF16).item(), 0.8984375)   # not 3 * 0.3
        self.assertEqual((torch.tensor([3.0], dtype=F16) * 0.3).item(), 0.900390625)

    def test_float64_to_bf16_and_f16_round_through_float32(self):
        self.assertEqual(torch.tensor([1 + 2 ** -8 + 2 ** -30], dtype=BF16).item(), 1.0)
        self.assertEqual(torch.tensor([1 + 2 ** -11 + 2 ** -30], dtype=F16).item(), 1.0)

    def test_tie_order(self):
        self.assertEqual(torch.argsort(torch.ones(8), descending=True).tolist(), list(range(8)))
        self.assertEqual(torch.topk(torch.ones(8), 3).indices.tolist(), [6, 5, 4])


class TorchScalars(unittest.TestCase):
    """torch 2's reduced-float `tensor * scalar` and `tensor / scalar` (torch_ops), the default,
    against torch 1.13's (TORCH_SCALARS = "torch1"). float32(0.3) = 0.300000011920929;
    bf16(0.3) = 0.30078125; bfloat16's spacing is 2^-8 in [0.5, 1), 2^-9 in [0.25, 0.5)."""

    def test_default_is_torch2(self):
        self.assertEqual(O.TORCH_SCALARS, "torch2")
        x = torch.tensor([3.0], dtype=BF16)
        self.assertEqual(O.mul_scalar(x, 0.3).item(), 0.8984375)
        with O.torch_scalars("torch1"):
            self.assertEqual(O.mul_scalar(x, 0.3).item(), (x * 0.3).item())
        self.assertEqual(O.TORCH_SCALARS, "torch2")
        with self.assertRaises(ValueError), O.torch_scalars("torch3"):
            pass

    def test_bf16_task_arithmetic_lambda(self):
        # torch 2: bf16(3 * 0.300000012) = bf16(0.900000036) = 230 / 256 (230.4);
        # torch 1.13: 3 * 0.30078125 = 0.90234375 = 231 / 256, exactly
        v = tensors(BF16, b=[0.0], m=[3.0])
        j = job("task_arithmetic", {"b": None, "m": {"weight": 1.0}}, {"lambda": 0.3})
        self.assertEqual(T.gta_merge("task_arithmetic", j, v, "b")[0].item(), 0.8984375)
        with O.torch_scalars("torch1"):
            self.assertEqual(T.gta_merge("task_arithmetic", j, v, "b")[0].item(), 0.90234375)

    def test_bf16_passthrough_scale(self):
        j = job("passthrough", {"a": {"scale": 0.3}})
        # 1.5 * 0.300000012 = 0.450000018 -> 230 / 512 (230.4); torch 1.13:
        # 1.5 * 0.30078125 = 231 / 512 exactly
        v = tensors(BF16, a=[3.0, 1.5])
        got = K.passthrough_merge(j, v, None)
        self.assertEqual(got.tolist(), [0.8984375, 0.44921875])
        with O.torch_scalars("torch1"):
            got = K.passthrough_merge(j, v, None)
        self.assertEqual(got.tolist(), [0.90234375, 0.451171875])
        v = tensors(F32, a=[3.0])   # float32: x * 0.3 either way
        self.assertEqual(K.passthrough_merge(j, v, None).item(), (v["a"] * 0.3).item())

    def test_bf16_nearswap_number_over_tensor(self):
        # t / |a - b| is |a - b|.reciprocal() * t: bf16(1 / 0.875) = 146 / 128; torch 2:
        # 1.140625 * 0.300000012 = 0.3421875 -> 175 / 512 (175.2), times b = 0.875:
        # 0.29907 -> 153 / 512; torch 1.13: 1.140625 * 0.30078125 = 0.34308 -> 176 / 512,
        # times 0.875 = 0.30078125 exactly
        v = tensors(BF16, a=[0.0], b=[0.875])
        j = job("nearswap", {"a": None, "b": None}, {"t": 0.3})
        self.assertEqual(K.nearswap_merge(j, v, "a").item(), 0.298828125)
        with O.torch_scalars("torch1"):
            self.assertEqual(K.nearswap_merge(j, v, "a").item(), 0.30078125)
        self.assertEqual((0.3 / v["b"] * v["b"]).item(), 0.30078125)   # this torch's own

    def test_division_by_a_float32_zero_dim_tensor(self):
        # karcher's t / ||t|| (a float32 norm): torch 2 reads the norm unrounded,
        # 7 / 0.300000012 = 23.33 -> 187 / 8; torch 1.13: 7 / 0.30078125 = 23.27 -> 186 / 8
        x, n = torch.tensor([7.0], dtype=BF16), torch.tensor(0.3)
        self.assertEqual(O.div_scalar(x, n).item(), 23.375)
        with O.torch_scalars("torch1"):
            self.assertEqual(O.div_scalar(x, n).item(), (x / n).item())
            self.assertEqual((x / n).item(), 23.25)
        b = torch.tensor(0.30078125, dtype=BF16)   # a 0-dim tensor of the dtype: unchanged
        self.assertEqual(O.mul_scalar(x, b).item(), (x * b).item())


class Ties(unittest.TestCase):
    def test_split_ties(self):
        v = torch.tensor([0.5, 0.25, 0.25, 0.25, 0.1])
        self.assertEqual(K.split_ties(v, 3, 5).tolist(), [False, True, True, True, False])
        self.assertFalse(K.split_ties(v, 1, 5).any())    # the class is kept whole
        self.assertFalse(K.split_ties(v, 5, 5).any())    # nothing kept

    def test_magnitude_differs_from_lower_index_first_only_where_marked(self):
        g = np.random.default_rng(4)
        for n in (8, 64, 256):
            tau = torch.tensor(g.integers(-3, 4, n) / 64.0, dtype=BF16)
            got, ties = T.magnitude(tau, 0.5, False)
            want = R.magnitude(tau.double().numpy(), 0.5, False)
            differ = got.double().numpy() != want
            self.assertFalse((differ & ~ties.mask()).any())
            self.assertTrue(ties.direct.any())

    def test_della_ties_where_the_rank_decides(self):
        tau = torch.tensor([[0.25, 0.25, 0.5, 0.75]], dtype=BF16)   # ranks 1-2 tied
        # p by rank (float32 work dtype: f16 and f32) 0.4, 0.4667, 0.5333, 0.6
        _, ties = T.della_magprune(tau.half(), 0.5, 0.1, False, fixed(0.45, 0.3, 0.9, 0.9))
        self.assertEqual(ties.direct.tolist(), [[True, False, False, False]])


class Sparsify(unittest.TestCase):
    def test_bf16_task_vector_changes_the_kept_set(self):
        # stored float32: base [1, 0], model [1.01, 0.009]; in bfloat16 the task vectors
        # are [0.0078125, 0.00897...]: the top 1 is the second, in float64 the first.
        v = tensors(BF16, b=[1.0, 0.0], m=[1.01, 0.009])
        j = job("ties", {"b": None, "m": {"weight": 1.0, "density": 0.5}})
        got, _ = T.gta_merge("ties", j, v, "b")
        self.assertEqual(got.tolist(), [1.0, 0.00897216796875])
        want = R.gta_merge("ties", j, f64(tensors(F32, b=[1.0, 0.0], m=[1.01, 0.009])), "b")
        self.assertEqual(want[1], 0.0)

    def test_bf16_weight_changes_the_majority_sign(self):
        # weights 0.3 -> 0.30078125: 0.30078125 * 1 - 0.30078125 = 0, the sign +, where
        # float64's 0.3 - 0.30078125 < 0 keeps the second model
        v = tensors(BF16, b=[0.0], m1=[1.0], m2=[-0.30078125])
        j = job("ties", {"b": None, "m1": {"weight": 0.3}, "m2": {"weight": 1.0}})
        self.assertEqual(T.gta_merge("ties", j, v, "b")[0].item(), 1.0)
        self.assertEqual(R.gta_merge("ties", j, f64(v), "b")[0], -0.30078125)

    def test_f16_lambda_in_float32(self):
        # torch 2: f16(3 * float32(0.3)) = f16(0.9000000358) = 1843 / 2048; torch 1.13:
        # 3 * f16(0.3) = 3 * 0.30004882812 = 0.900146484 -> 1844 / 2048
        v = tensors(F16, b=[0.0], m=[3.0])
        j = job("task_arithmetic", {"b": None, "m": {"weight": 1.0}}, {"lambda": 0.3})
        self.assertEqual(T.gta_merge("task_arithmetic", j, v, "b")[0].item(), 0.89990234375)
        with O.torch_scalars("torch1"):
            self.assertEqual(T.gta_merge("task_arithmetic", j, v, "b")[0].item(), 0.900390625)
        self.assertEqual(R.gta_merge("task_arithmetic", j, f64(v), "b")[0], 0.8999999999999999)

    def test_dare_probability_in_the_work_dtype(self):
        u = fixed(0.6601, 0.5, 0.7)
        got, _ = T.bernoulli(torch.ones(3, dtype=BF16), 0.66, False, u)
        self.assertEqual(got.tolist(), [1, 1, 0])     # bf16(0.66) = 0.66015625
        got, _ = T.bernoulli(torch.ones(3, dtype=F16), 0.66, False, u)
        self.assertEqual(got.tolist(), [0, 1, 0])     # f16 works in float32: 0.6600000262

    def test_della_probabilities_in_bf16(self):
        ranks = torch.arange(8).to(BF16)[None] + 1
        p = T.della_probabilities(ranks, 0.66, 0.05)[0].double().numpy()
        # bf16(0.61) + bf16(bf16(bf16(r - 1) / 7) * 2 * float32(0.05)), rounded: by hand (here
        # as with torch 1.13's bf16(0.05))
        self.assertEqual([p[0], p[3], p[7]], [0.609375, 0.65234375, 0.7109375])
        np.testing.assert_allclose(R.della_probabilities(np.arange(1.0, 9.0), 0.66, 0.05)[
            [0, 3, 7]], [0.61, 0.61 + 0.1 * 3 / 7, 0.71])
        tau = torch.tensor(np.arange(1, 9) / 8.0, dtype=BF16)
        got, _ = T.della_magprune(tau, 0.66, 0.05, False, fixed(0.6095, *[0.0] * 6, 0.7105))
        self.assertEqual(got[[0, 7]].tolist(), [0.0, 1.0])   # float64: kept, dropped

    def test_refusals_as_the_reference(self):
        with self.assertRaises(R.Unsupported) as e:
            T.della_magprune(torch.ones(4), 0.5, 0.5, False, fixed(0, 0, 0, 0))
        self.assertEqual(e.exception.key, "epsilon")
        got, ties = T.magnitude(torch.ones(4, dtype=BF16), 0.1, False)   # k = 0: none
        self.assertEqual(got.tolist(), [0, 0, 0, 0])
        self.assertFalse(ties.direct.any())


class Methods(unittest.TestCase):
    def test_linear_weights_rounded_to_bf16(self):
        a, b = torch.tensor([3.0], dtype=BF16), torch.tensor([0.0], dtype=BF16)
        self.assertEqual(K.linear([a, b], [0.3, 0.3], False).item(), 0.90234375)
        self.assertEqual(K.linear([a, b], [0.3, 0.3], True).item(), 1.5)
        self.assertEqual(K.linear([a.half(), b.half()], [0.3, 0.3], False).item(), 0.900390625)

    def test_passthrough_scale_and_slerp_dtype(self):
        j = job("passthrough", {"a": {"scale": 0.3}})
        self.assertEqual(K.passthrough_merge(j, tensors(BF16, a=[3.0]), None).item(), 0.8984375)
        v = tensors(BF16, b=[1.0, 0.0], m=[0.0, 1.0])
        got = K.slerp_merge(job("slerp", {"b": None, "m": None}, {"t": 0.5}), v, "b")
        self.assertEqual((got.dtype, got.tolist()), (BF16, [0.70703125, 0.70703125]))

    def test_f16_kernels_missing_in_this_torch_run_through_float32(self):
        v = tensors(F16, b=[1.0, 1.0], x=[2.0, 1.0], y=[2.0, 2.0])
        got = K.model_stock(v["b"], [v["x"], v["y"]])
        t = 2 * np.sqrt(0.5) / (1 + np.sqrt(0.5))
        self.assertEqual(got.dtype, F16)
        np.testing.assert_allclose(got.double().numpy(), [1 + t, 1 + t / 2], rtol=2e-3)
        x, y = f64(v)["x"], f64(v)["y"]
        got = K.nuslerp(0.5, v["x"], v["y"], flatten=True)
        self.assertEqual(got.dtype, F16)
        np.testing.assert_allclose(got.double().numpy(), R.nuslerp(0.5, x, y), rtol=2e-3)
        got = K.karcher([v["x"], v["y"]], [0.5, 0.5])
        self.assertEqual(got.dtype, F16)
        np.testing.assert_allclose(got.double().numpy(), R.karcher([x, y], [0.5, 0.5]),
                                   rtol=2e-3)

    def test_sce_ties_reach_every_coordinate(self):
        v = tensors(BF16, b=[0.0] * 4, x=[1.0, -1.0, 0.5, 0.25], y=[0.0, 0.0, 0.0, 0.0])
        _, ties = K.sce(v["b"], [v["x"], v["y"]], select_topk=0.25)
        self.assertEqual(ties.direct.tolist(), [True, True, False, False])
        self.assertTrue(ties.mask().all())
        # float16, no tie: keeps 1.0 (variance 0.25) of task vectors [1, 0.5, 0.25, 0]
        h = tensors(F16, b=[0.0] * 4, x=[1.0, 0.5, 0.25, 0.0], y=[0.0] * 4)
        got, ties = K.sce(h["b"], [h["x"], h["y"]], select_topk=0.4)
        self.assertEqual((got.dtype, got.tolist()), (F16, [1.0, 0.0, 0.0, 0.0]))
        self.assertFalse(ties.mask().any())


class WholeMerges(Models, unittest.TestCase):
    def fixture(self, key):
        with open(os.path.join(HERE, "fixtures", key + ".yml"), encoding="utf-8") as f:
            return yaml.safe_load(f)

    def test_float32_agrees_with_the_reference(self):
        for key in ("examples/linear", "tests/test_ties_merge", "extra/dare_linear",
                    "extra/della_sum", "extra/breadcrumbs_sparse", "tests/test_karcher_merge",
                    "tests/test_multislerp_merge", "tests/test_sce_merge",
                    "tests/test_nuslerp_merges-base_model_c-row_wise_true-flatten_false",
                    "extra/slerp_appended_base", "extra/model_stock_three"):
            config = T.as_float32(self.fixture(key))
            ref, got = R.merge(config, self.resolve), T.merge(config, self.resolve)
            self.assertEqual(set(got.tensors), set(ref.tensors))
            for name, want in ref.tensors.items():
                self.assertEqual(got.compute_dtypes[name], "F32")
                err = np.abs(got.tensors[name] - want)[~got.tie_mask[name]]
                self.assertLessEqual(err.max(initial=0), 1e-6 * np.abs(want).max(), (key, name))

    def test_compute_and_output_dtypes(self):
        for key, compute, out in [("extra/ties_mixed_dtypes", "BF16", "BF16"),
                                  ("extra/linear_f16_bf16", "F32", "F32"),
                                  ("extra/model_stock_mixed_dtypes", "F32", "F32"),
                                  ("extra/linear_out_dtype", "F32", "BF16"),
                                  ("examples/ties", "F16", "F16")]:
            got = T.merge(self.fixture(key), self.resolve)
            self.assertEqual(set(got.compute_dtypes.values()), {compute}, key)
            self.assertEqual(set(got.dtypes.values()), {out}, key)
            for name, x in got.tensors.items():
                cast = torch.from_numpy(x).to(T.TORCH_DTYPES[compute]).double().numpy()
                np.testing.assert_array_equal(x, cast)

    def test_refusals_and_files_as_the_reference(self):
        config = self.fixture("tests/test_della_invalid_epsilon")
        with self.assertRaises(R.Unsupported) as e:
            T.merge(config, self.resolve)
        self.assertEqual(e.exception.key, "epsilon")
        config = self.fixture("examples/orcamini-platy-44layer")
        ref, got = R.merge(config, self.resolve), T.merge(config, self.resolve)
        self.assertEqual((got.donor, got.num_hidden_layers, got.torch_dtype),
                         (ref.donor, ref.num_hidden_layers, ref.torch_dtype))


if __name__ == "__main__":
    unittest.main()
