"""Hand-worked checks of reference.py (and of check_configs.py's rounding), run by
check_configs.py before the fixtures, or on their own:

    cd tests/mergekit && /usr/bin/python3 -m unittest test_reference
"""
import os
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402
from make_models import write_models  # noqa: E402


def job(method, sources, parameters=None, slice_parameters=None, name="x", t=0.0):
    """A TensorJob over models named in `sources` ({model: per-model parameters}); the
    first model is the base."""
    config = {"merge_method": method, "base_model": next(iter(sources)),
              "parameters": parameters}
    sl = {"sources": [{"model": m, "parameters": p} for m, p in sources.items()],
          "parameters": slice_parameters}
    return R.TensorJob(name, [(m, name) for m in sources], R.Reader(config, sl, t))


class Settings(unittest.TestCase):
    def test_gradient_interpolates_at_t(self):
        g = [0, 0.5, 0.3, 0.7, 1]
        self.assertAlmostEqual(R.evaluate_setting("a", g, 0.3), 0.8 * 0.5 + 0.2 * 0.3)
        self.assertEqual(R.evaluate_setting("a", g, 0.0), 0)
        self.assertEqual(R.evaluate_setting("a", g, 1.0), 1)
        self.assertEqual(R.evaluate_setting("a", [1, 0.7, 0.1], 0.5), 0.7)
        self.assertEqual(R.evaluate_setting("a", 0.25, 0.9), 0.25)

    def test_filters_first_match_and_none(self):
        s = [{"filter": "mlp", "value": [1, 3]}, {"filter": "*", "value": 9}]
        self.assertEqual(R.evaluate_setting("model.layers.0.mlp.up_proj.weight", s, 0.5), 2)
        self.assertEqual(R.evaluate_setting("model.norm.weight", s, 0.5), 9)
        self.assertIsNone(R.evaluate_setting("model.norm.weight", s[:1], 0.5))
        self.assertEqual(R.evaluate_setting("x", [{"value": 4}], 0), 4)

    def test_precedence_source_slice_global_default(self):
        cfg = {"parameters": {"w": 3, "d": [{"filter": "nomatch", "value": 1}]}}
        sl = {"sources": [{"model": "a", "parameters": {"w": [{"filter": "mlp", "value": 1}]}},
                          {"model": "b"}], "parameters": {"w": 2}}
        r = R.Reader(cfg, sl, 0.0)
        self.assertEqual(r.parameter("w", "mlp.x", model="a"), 1)
        self.assertEqual(r.parameter("w", "attn.x", model="a"), 2)   # the filter falls through
        self.assertEqual(r.parameter("w", "attn.x", model="b"), 2)
        self.assertEqual(r.parameter("w", "attn.x"), 2)
        self.assertEqual(R.Reader(cfg, {"sources": []}, 0).parameter("w", "x"), 3)
        self.assertEqual(r.parameter("d", "x", default=7), 7)         # no filter matches
        with self.assertRaises(R.Unsupported):
            r.parameter("z", "x", model="a", required=True)


class Masks(unittest.TestCase):
    def test_hash_vectors(self):
        self.assertEqual(R.fnv1a64(""), 0xcbf29ce484222325)
        self.assertEqual(R.fnv1a64("a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(R.splitmix64_int(0), 0xe220a8397b1dcdaf)   # splitmix64's first output

    def test_uniforms_follow_the_formula(self):
        u = R.mask_uniforms(5, "w", 2, 1000)
        stream = 5 ^ R.fnv1a64("w") ^ R.splitmix64_int(3)
        for j in (0, 1, 999):
            self.assertEqual(u[j], (R.splitmix64_int(stream + j) >> 11) * 2.0 ** -53)
        self.assertTrue(0.45 < u.mean() < 0.55 and u.min() >= 0 and u.max() < 1)
        self.assertFalse(np.array_equal(u, R.mask_uniforms(5, "w", 1, 1000)))

    def test_stream_wraps(self):
        seed = (1 << 64) - 1
        stream = seed ^ R.fnv1a64("n") ^ R.splitmix64_int(1)
        u = R.mask_uniforms(seed, "n", 0, 3)
        self.assertEqual(u[2], (R.splitmix64_int((stream + 2) & R.MASK64) >> 11) * 2.0 ** -53)


class Sparsify(unittest.TestCase):
    tau = np.array([0.1, -0.5, 0.3, 0.3, -0.2])

    def test_magnitude_keeps_the_largest_ties_to_the_lower_index(self):
        np.testing.assert_array_equal(R.magnitude(self.tau, 0.4, False), [0, -0.5, 0.3, 0, 0])
        np.testing.assert_array_equal(R.magnitude(self.tau, 0.6, False), [0, -0.5, 0.3, 0.3, 0])
        np.testing.assert_allclose(R.magnitude(self.tau, 0.6, True),
                                   np.array([0, -0.5, 0.3, 0.3, 0]) * 1.4 / 1.1)
        np.testing.assert_array_equal(R.magnitude(self.tau, 0.1, False), np.zeros(5))  # k = 0

    def test_magnitude_outliers(self):
        tau = np.arange(1.0, 11.0)   # descending rank r of value v is 10 - v
        keep = R.magnitude_outliers(tau, 0.5, 0.2, False)    # n_top 2, n_bot 3: r in [2, 7)
        np.testing.assert_array_equal(keep, [0, 0, 0, 4, 5, 6, 7, 8, 0, 0])
        keep = R.magnitude_outliers(tau, 0.9, 0.2, False)    # n_bot -1: n_top 1, r in [1, 10)
        np.testing.assert_array_equal(keep, [1, 2, 3, 4, 5, 6, 7, 8, 9, 0])
        np.testing.assert_array_equal(R.magnitude_outliers(tau, 0.5, 0.05, False), np.zeros(10))

    def test_della_probabilities_by_row_rank(self):
        p = R.della_probabilities(np.array([[0.1, -0.4, 0.2], [3.0, 2.0, -1.0]]), 0.5, 0.1)
        np.testing.assert_allclose(p, [[0.4, 0.6, 0.5], [0.6, 0.5, 0.4]])
        p = R.della_probabilities(np.array([0.2, 0.1]), 0.5, 0.1)   # 1-D: one row
        np.testing.assert_allclose(p, [0.6, 0.4])

    def test_della_edges(self):
        z = R.della(self.tau, 0.0, 0.9, True, 0, "x", 0)
        np.testing.assert_array_equal(z, np.zeros(5))
        with self.assertRaises(R.Unsupported) as e:
            R.della(self.tau, 0.5, 0.5, True, 0, "x", 0)
        self.assertEqual(e.exception.key, "epsilon")

    def test_random_mask_keeps_about_density_and_rescales(self):
        tau = np.linspace(-1, 1, 20000).reshape(100, 200)
        out = R.random_mask(tau, 0.3, True, 1, "t", 0)
        kept = out != 0
        self.assertTrue(0.28 < kept.mean() < 0.32)
        scale = np.abs(tau).sum() / np.abs(tau[kept]).sum()
        np.testing.assert_allclose(out[kept], tau[kept] * scale)
        u = R.mask_uniforms(1, "t", 0, tau.size).reshape(tau.shape)
        np.testing.assert_array_equal(kept, (u < 0.3) & (tau != 0))


class Methods(unittest.TestCase):
    values = {"b": np.zeros(4), "m1": np.array([1.0, -2, 3, 0.5]),
              "m2": np.array([-2.0, -1, 1, 1])}
    sources = {"b": None, "m1": {"weight": 1.0}, "m2": {"weight": 0.5}}

    def test_ties_sign_consensus(self):
        # wd1 = [1, -2, 3, .5], wd2 = [-1, -.5, .5, .5]; sums [0, -2.5, 3.5, 1] -> signs + - + +
        got = R.gta_merge("ties", job("ties", self.sources), self.values, "b")
        np.testing.assert_allclose(got, [1 / 1, -2.5 / 1.5, 3.5 / 1.5, 1 / 1.5])

    def test_task_arithmetic_and_normalize_lambda(self):
        got = R.gta_merge("task_arithmetic", job("task_arithmetic", self.sources), self.values, "b")
        np.testing.assert_allclose(got, [0, -2.5, 3.5, 1])
        j = job("task_arithmetic", self.sources, parameters={"normalize": True, "lambda": 2})
        np.testing.assert_allclose(R.gta_merge("task_arithmetic", j, self.values, "b"),
                                   np.array([0, -2.5, 3.5, 1]) / 1.5 * 2)

    def test_weight_defaults_to_one_and_base_is_no_task_vector(self):
        values = {"b": np.ones(2), "m1": np.array([2.0, 3])}
        j = job("task_arithmetic", {"b": None, "m1": None})
        got = R.gta_merge("task_arithmetic", j, values, "b")
        np.testing.assert_allclose(got, [2, 3])

    def test_consensus_zero_never_agrees_divisor_one(self):
        values = {"b": np.zeros(2), "m1": np.array([0.0, 1]), "m2": np.array([0.0, -3])}
        got = R.gta_merge("ties", job("ties", self.sources), values, "b")
        np.testing.assert_allclose(got, [0, -1.5 / 0.5])

    def test_linear_mean_and_sum(self):
        a, b = np.array([1.0, 2, 3]), np.array([3.0, -2, 0])
        j = job("linear", {"a": {"weight": 1}, "b": {"weight": 1}})
        np.testing.assert_array_equal(R.linear_merge(j, {"a": a, "b": b}), (a + b) / 2)
        j = job("linear", {"a": {"weight": 2}, "b": {"weight": 1}}, parameters={"normalize": False})
        np.testing.assert_array_equal(R.linear_merge(j, {"a": a, "b": b}), 2 * a + b)

    def test_slerp(self):
        np.testing.assert_allclose(R.slerp(0.5, np.array([1.0, 0]), np.array([0.0, 1])),
                                   [np.sqrt(0.5), np.sqrt(0.5)])
        np.testing.assert_allclose(R.slerp(0.25, np.array([2.0, 0]), np.array([4.0, 0.001])),
                                   [2.5, 0.00025])   # nearly parallel: lerp
        v = R.slerp(1 / 3, np.array([1.0, 0]), np.array([-0.5, np.sqrt(3) / 2]))   # 120 degrees
        np.testing.assert_allclose(v, [np.cos(np.pi * 2 / 9), np.sin(np.pi * 2 / 9)])

    def test_model_stock(self):
        base = np.array([1.0, 1.0])
        for a, b, t in [([2.0, 1.0], [1.0, 2.0], 0.0), ([2.0, 1.0], [3.0, 1.0], 1.0),
                        ([2.0, 2.0], [2.0, 1.0], 2 * np.sqrt(0.5) / (1 + np.sqrt(0.5)))]:
            values = {"b": base, "x": np.array(a), "y": np.array(b)}
            j = job("model_stock", {"b": None, "x": None, "y": None})
            got = R.model_stock_merge(j, values, "b")
            np.testing.assert_allclose(got, t * (values["x"] + values["y"]) / 2 + (1 - t) * base)

    def test_passthrough_scale(self):
        j = job("passthrough", {"a": {"scale": [{"filter": "x", "value": [2, 4]}]}}, t=0.5)
        np.testing.assert_array_equal(R.passthrough_merge(j, {"a": np.array([1.0, -1])}), [3, -3])


class Rounding(unittest.TestCase):
    def test_round_to_matches_the_casts_and_the_bf16_writer(self):
        import check_configs as C
        x = np.random.default_rng(0).normal(size=5000) * np.logspace(-12, 4, 5000)
        np.testing.assert_array_equal(C.round_to(x, "F32"), x.astype(np.float32))
        np.testing.assert_array_equal(C.round_to(x, "F16"), x.astype(np.float16))
        f = x.astype(np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        bf = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
        np.testing.assert_array_equal(C.round_to(f.astype(np.float64), "BF16"), bf)
        self.assertEqual(C.ulp(np.array([1.0]), "BF16")[0], 2.0 ** -7)
        self.assertEqual(C.ulp(np.array([0.0]), "F16")[0], 2.0 ** -24)


class WholeMerges(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.paths = write_models(cls.dir.name)
        cls.ck = {n: R.load_checkpoint(p) for n, p in cls.paths.items()}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def merge(self, config):
        return R.merge(config, self.paths.__getitem__)

    def test_linear_one_one_is_the_mean(self):
        m = self.merge({"merge_method": "linear", "models": [
            {"model": "model_a", "parameters": {"weight": 1}},
            {"model": "model_b", "parameters": {"weight": 1}}]})
        a, b = self.ck["model_a"].tensors, self.ck["model_b"].tensors
        self.assertEqual(set(m.tensors), set(a))
        for n in a:
            np.testing.assert_allclose(m.tensors[n], (a[n] + b[n]) / 2, rtol=0, atol=1e-15)
        self.assertEqual(set(m.dtypes.values()), {"F32"})
        self.assertEqual((m.donor, m.num_hidden_layers, m.torch_dtype), ("model_a", 40, "float32"))

    def test_stacked_slices_renumber_layers(self):
        m = self.merge({"merge_method": "passthrough", "dtype": "float16", "slices": [
            {"sources": [{"model": "model_a", "layer_range": [0, 24]}]},
            {"sources": [{"model": "model_b", "layer_range": [20, 40]}]}]})
        a, b = self.ck["model_a"].tensors, self.ck["model_b"].tensors
        self.assertEqual(m.num_hidden_layers, 44)
        self.assertEqual(len(m.tensors), 3 + 44 * 9)
        w = "self_attn.q_proj.weight"
        np.testing.assert_array_equal(m.tensors[f"model.layers.23.{w}"], a[f"model.layers.23.{w}"])
        np.testing.assert_array_equal(m.tensors[f"model.layers.24.{w}"], b[f"model.layers.20.{w}"])
        np.testing.assert_array_equal(m.tensors[f"model.layers.43.{w}"], b[f"model.layers.39.{w}"])
        e = "model.embed_tokens.weight"
        np.testing.assert_array_equal(m.tensors[e], a[e])
        np.testing.assert_array_equal(m.tensors["lm_head.weight"], b["lm_head.weight"])
        self.assertEqual(set(m.dtypes.values()), {"F16"})

    def test_layer_t_and_dtype_from_the_base(self):
        m = self.merge({"merge_method": "task_arithmetic", "base_model": "model_a_f16",
                        "models": [{"model": "base", "parameters": {"weight": [0, 1]}}]})
        a, base = self.ck["model_a_f16"].tensors, self.ck["base"].tensors
        for n, t in [("model.layers.13.mlp.up_proj.weight", 13 / 39), ("model.norm.weight", 0.0),
                     ("model.layers.39.mlp.up_proj.weight", 1.0)]:
            np.testing.assert_allclose(m.tensors[n], a[n] + t * (base[n] - a[n]), rtol=1e-14)
        self.assertEqual(set(m.dtypes.values()), {"F16"})
        self.assertEqual((m.donor, m.torch_dtype), ("model_a_f16", "float16"))

    def test_refusals_name_their_key(self):
        nuslerp = {"merge_method": "nuslerp", "models": [{"model": "model_a"}]}
        linear = {"merge_method": "linear", "base_model": "base",
                  "models": [{"model": "model_a", "parameters": {"weight": 1}}]}
        for config, key in [(nuslerp, "nuslerp"), (linear, "weight")]:
            with self.assertRaises(R.Unsupported) as e:
                self.merge(config)
            self.assertEqual(e.exception.key, key)


if __name__ == "__main__":
    unittest.main()
