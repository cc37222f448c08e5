"""Hand-worked checks of reference.py (and of check_configs.py's rounding), run by
check_configs.py before the fixtures, or on their own:

    cd tests/mergekit && PYTHONPATH=../../python /usr/bin/python3 -m unittest test_reference
"""
import tempfile
import unittest

import numpy as np

import reference as R
from make_models import write_models
from test_ram_fusion import RamFusionReference  # noqa: F401  (ram, ramplus_tl, arcee_fusion)


def job(method, sources, parameters=None, slice_parameters=None, name="x", t=0.0, base=True):
    """A TensorJob over models named in `sources` ({model: per-model parameters}); the
    first model is the base (no base with base=False)."""
    config = {"merge_method": method, "base_model": next(iter(sources)) if base else None,
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


class Only(object):
    """Sets R.ENABLED_NEW_METHODS to exactly `names` for a with-block, then restores it."""

    def __init__(self, *names):
        self.names = set(names)

    def __enter__(self):
        self.saved = set(R.ENABLED_NEW_METHODS)
        R.ENABLED_NEW_METHODS.clear()
        R.ENABLED_NEW_METHODS.update(self.names)

    def __exit__(self, *exc):
        R.ENABLED_NEW_METHODS.clear()
        R.ENABLED_NEW_METHODS.update(self.saved)


class Enabled:
    """Enables methods in R.ENABLED_NEW_METHODS for a with-block, then restores the set."""

    def __init__(self, *names):
        self.names = set(names)

    def __enter__(self):
        self.saved = set(R.ENABLED_NEW_METHODS)
        R.ENABLED_NEW_METHODS.update(self.names)

    def __exit__(self, *exc):
        R.ENABLED_NEW_METHODS.clear()
        R.ENABLED_NEW_METHODS.update(self.saved)


def v(*x):
    return np.array(x, dtype=np.float64)


class NewMethods(unittest.TestCase):
    def test_nearswap_below_and_above_t(self):
        # |a - b| = .05, .2, 1, 0 with t = .1: weights 1, .5, .1, 1 (diff clamped to 1e-6)
        a, b = v(0, 0, 0, 1), v(0.05, 0.2, -1, 1)
        np.testing.assert_allclose(R.nearswap(a, b, 0.1), [0.05, 0.1, -0.1, 1], rtol=1e-15)
        np.testing.assert_array_equal(R.nearswap(a, b, 0.0), a)
        j = job("nearswap", {"b": None, "m": None}, parameters={"t": 0.1})
        np.testing.assert_allclose(R.nearswap_merge(j, {"b": a, "m": b}, "b"), [0.05, 0.1, -0.1, 1])
        for params, sources, key in [(None, {"b": None, "m": None}, "t"),
                                     ({"t": 1}, {"b": None, "m": None, "n": None}, "nearswap")]:
            with self.assertRaises(R.Unsupported) as e:
                R.nearswap_merge(job("nearswap", sources, params),
                                 {"b": a, "m": b, "n": b}, "b")
            self.assertEqual(e.exception.key, key)

    # task vectors of three models over base 1; the variances across them are
    # 0, 8/3, 2, 2/3, 2/3, 0 (four nonzero)
    tvs = [v(2, 1, 0, -1, 3, 0), v(2, -1, 0, 1, 1, 0), v(2, 3, 3, 0, 2, 0)]

    def sce_job(self, **parameters):
        values = {"b": np.ones(6), **{f"m{i}": 1 + t for i, t in enumerate(self.tvs)}}
        j = job("sce", {"b": None, "m0": None, "m1": None, "m2": None}, parameters=parameters)
        return R.sce_merge(j, values, "b")

    def test_sce_top_k_tie_goes_to_the_lower_index(self):
        # k = 4 * .75 = 3: coordinates 1, 2 and 3 (3 and 4 tie at 2/3). Masked task vectors
        # [0 1 0 -1 0 0], [0 -1 0 1 0 0], [0 3 3 0 0 0]: mean squares 1/3, 1/3, 3 -> weights
        # 1/11, 1/11, 9/11; majority sign + everywhere (coordinate 3 sums to 0).
        # 1: (1/11 + 27/11) / (10/11) = 2.8; 2: 3; 3: only model 1 agrees: 1; the rest 0.
        np.testing.assert_allclose(self.sce_job(select_topk=0.75), 1 + v(0, 2.8, 3, 1, 0, 0),
                                   rtol=1e-14)
        # k = 2: coordinates 1 and 2 only; mean squares 1/6, 1/6, 3 -> weights 1/20, 1/20,
        # 18/20; 1: (1/20 + 54/20) / (19/20) = 55/19
        np.testing.assert_allclose(self.sce_job(select_topk=0.5), 1 + v(0, 55 / 19, 3, 0, 0, 0),
                                   rtol=1e-14)

    def test_sce_without_selection(self):
        # mean squares 15/6, 7/6, 26/6 -> weights 15/48, 7/48, 26/48
        want = 1 + v(2, 93 / 41, 3, 1, (15 * 3 + 7 + 26 * 2) / 48, 0)
        np.testing.assert_allclose(self.sce_job(int8_mask=True), want, rtol=1e-14)
        np.testing.assert_array_equal(self.sce_job(select_topk=0), np.ones(6))

    def test_sce_weights_and_k_as_torch_computes_them(self):
        tiny = np.stack([v(1e-4, 0), v(0, 2e-4)])      # mean squares sum below 1e-6: uniform
        np.testing.assert_array_equal(R.sce_weight(tiny), [0.5, 0.5])
        np.testing.assert_allclose(R.sce_weight(np.stack([v(1, 1), v(3, 1)])), [1 / 6, 5 / 6])
        # 180 nonzero variances, density .35: float32(180) * float32(.35) = 63 (float64: 62.99..)
        tvs = np.stack([np.zeros(200), np.r_[np.arange(1.0, 181), np.zeros(20)]])
        self.assertEqual(R.sce_mask(tvs, 0.35).sum(), 63)
        self.assertEqual(R.sce_mask(tvs, 0.35)[117:180].sum(), 63)   # the largest

    def test_multislerp_is_the_normalised_mean_times_the_mean_norm(self):
        e = 1e-8
        got = R.multislerp([v(1, 0), v(0, 1)], [1, 1])       # orthogonal unit vectors
        np.testing.assert_allclose(got, v(1, 1) / np.sqrt(2), rtol=1e-15, atol=0)
        # norms 2 and 1, weights .75 and .25: direction (3, 1)/sqrt(10), norm 1.75
        got = R.multislerp([v(2, 0), v(0, 1)], [3, 1], eps=e)
        np.testing.assert_allclose(got, 1.75 * v(3, 1) / np.sqrt(10), rtol=1e-7)
        got = R.multislerp([v(3, 1), v(1, 2)], [3, 1], base_value=v(1, 1))   # task vectors
        np.testing.assert_allclose(got, 1 + 1.75 * v(3, 1) / np.sqrt(10), rtol=1e-7)
        got = R.multislerp([v(2, 0), v(0, 1)], [3, 1], normalize_weights=False)
        np.testing.assert_allclose(got, 7 * v(3, 1) / np.sqrt(10), rtol=1e-7)

    def test_multislerp_fallbacks(self):
        np.testing.assert_array_equal(R.multislerp([v(1, 2)], [5]), [1, 2])
        # antipodal task vectors (1, 2), (-2, -4): their mean, (-.5, -1), plus the base
        got = R.multislerp([v(2, 3), v(-1, -3)], [1, 1], base_value=v(1, 1))
        np.testing.assert_allclose(got, [0.5, 0], rtol=1e-15)
        with self.assertRaises(R.Unsupported) as e:
            R.multislerp([v(1, 0), v(-1, 0), v(0, 0)], [1, 1, 1])
        self.assertEqual(e.exception.key, "multislerp")
        j = job("multislerp", {"a": {"weight": 3}, "b": {"weight": 1}}, base=False)
        got = R.multislerp_merge(j, {"a": v(2, 0), "b": v(0, 1)}, None)
        np.testing.assert_allclose(got, 1.75 * v(3, 1) / np.sqrt(10), rtol=1e-7)
        with self.assertRaises(R.Unsupported) as e:
            R.multislerp_merge(job("multislerp", {"a": {"weight": 3}, "b": None}, base=False),
                               {"a": v(2, 0), "b": v(0, 1)}, None)
        self.assertEqual(e.exception.key, "weight")

    def test_nuslerp_rows_columns_and_flattened(self):
        v0, v1 = np.array([[1.0, 0], [2, 0]]), np.array([[0.0, 1], [4, 0]])
        # t = 1/3; row 0: orthogonal, sin(pi/3) v0 + sin(pi/6) v1; row 1 colinear: lerp
        rows = [[np.sqrt(3) / 2, 0.5], [8 / 3, 0]]
        np.testing.assert_allclose(R.nuslerp(1 / 3, v0, v1, flatten=False), rows, rtol=1e-15)
        np.testing.assert_allclose(R.nuslerp(1 / 3, v0.T, v1.T, row_wise=True, flatten=False),
                                   np.transpose(rows), rtol=1e-15)
        # flattened: cos = 8 / (sqrt(5) sqrt(17))
        th = np.arccos(8 / np.sqrt(85))
        want = (np.sin(2 / 3 * th) * v0 + np.sin(th / 3) * v1) / np.sin(th)
        np.testing.assert_allclose(R.nuslerp(1 / 3, v0, v1), want, rtol=1e-14)
        np.testing.assert_allclose(R.nuslerp(1 / 3, v(0, 0), v(1, 0)), [0.5, 0])   # zero: unit 0

    def test_nuslerp_weights_and_base(self):
        values = {"c": v(1, 1), "a": v(2, 1), "b": v(1, 2)}
        j = job("nuslerp", {"a": {"weight": 2}, "b": {"weight": 1}}, base=False)
        th = np.arccos(4 / 5)
        want = (np.sin(2 / 3 * th) * v(2, 1) + np.sin(th / 3) * v(1, 2)) / np.sin(th)
        np.testing.assert_allclose(R.nuslerp_merge(j, values, None), want, rtol=1e-14)
        j = job("nuslerp", {"c": None, "a": {"weight": -1}, "b": {"weight": 1}})   # t = .5
        np.testing.assert_allclose(R.nuslerp_merge(j, values, "c"), 1 + v(1, 1) / np.sqrt(2),
                                   rtol=1e-15)
        with self.assertRaises(R.Unsupported) as e:
            R.nuslerp_merge(job("nuslerp", {"c": None, "a": {"weight": 1}}), values, "c")
        self.assertEqual(e.exception.key, "nuslerp")

    def test_karcher(self):
        # orthogonal: the geodesic midpoint at once, times the mean norm 3
        np.testing.assert_allclose(R.karcher([v(2, 0), v(0, 4)], [0.5, 0.5]),
                                   3 * v(1, 1) / np.sqrt(2), rtol=1e-15)
        # angles 0, 0, 90 degrees: the mean angle 30 degrees, norm (2 + 1 + 3)/3
        ts = [v(2, 0), v(1, 0), v(0, 3)]
        np.testing.assert_allclose(R.karcher(ts, [1 / 3] * 3), [np.sqrt(3), 1], rtol=1e-13)
        np.testing.assert_allclose(R.karcher(ts, [1 / 3] * 3, max_iter=0),
                                   2 * v(2, 1) / np.sqrt(5), rtol=1e-15)   # the initial guess
        # a zero input: no direction, but it counts in the norm
        np.testing.assert_allclose(R.karcher([v(0, 3), v(0, 0)], [0.5, 0.5]), [0, 1.5])
        np.testing.assert_array_equal(R.karcher([v(0, 0), v(0, 0)], [0.5, 0.5]), [0, 0])
        j = job("karcher", {"c": None, "a": None, "b": None}, parameters={"max_iter": 5.0})
        got = R.karcher_merge(j, {"c": v(2, 0), "a": v(1, 0), "b": v(0, 3)})   # base counts
        np.testing.assert_allclose(got, [np.sqrt(3), 1], rtol=1e-13)
        with self.assertRaises(R.Unsupported) as e:
            R.karcher_merge(job("karcher", {"c": None, "a": None}, {"max_iter": 2.5}),
                            {"c": v(2, 0), "a": v(1, 0)})
        self.assertEqual(e.exception.key, "max_iter")

    def test_arcee_fusion_threshold(self):
        # 1-D: importance = |delta| * KL (one number): sorted |delta| .1 .. .8, 5; median .5,
        # q1 .3, q3 .7: kept where |delta| >= 1.1
        b = np.r_[np.arange(1, 9) / 10, 5.0]
        np.testing.assert_allclose(R.arcee_fusion(np.zeros(9), b), np.r_[np.zeros(8), 5])
        # rows: KL(row 0) = k0 >> KL(row 1) = k1; sorted importance .5k1 .5k1 .6k1 k0 2k0 3k0:
        # median .6k1, q1 .5k1, q3 k0; threshold about 1.5 k0: 2 and 3 of row 0 kept
        base = np.full((2, 3), 0.5)
        delta = np.array([[1.0, 2, 3], [0.5, 0.5, 0.6]])
        kl = []
        for row in delta:
            p = np.exp(row) / np.exp(row).sum() + 1e-8
            kl.append(np.sum(p * np.log(p / (1 / 3 + 1e-8))))
        self.assertLess(kl[1] * 100, kl[0])
        np.testing.assert_allclose(R.arcee_fusion(base, base + delta),
                                   base + [[0, 2, 3], [0, 0, 0]], rtol=1e-15)
        values = {"a": base, "b": base + delta, "c": base}
        for sources, base_name, key in [({"a": None, "b": None, "c": None}, "a", "arcee_fusion"),
                                        ({"b": None, "c": None}, None, "base_model")]:
            with self.assertRaises(R.Unsupported) as e:
                R.arcee_fusion_merge(job("arcee_fusion", sources), values, base_name)
            self.assertEqual(e.exception.key, key)

    def test_model_stock_filter_wise_rows(self):
        # offsets per row: (1,0)/(0,1): cos 0, t 0; (1,0)/(2,0): cos 1, t 1;
        # (1,0)/(1/2, sqrt3/2): cos 1/2, t 2/3
        w0 = np.array([[0.0, 0], [1, 1], [0, 0]])
        x = w0 + [[1, 0], [1, 0], [1, 0]]
        y = w0 + np.array([[0, 1], [2, 0], [0.5, np.sqrt(3) / 2]])
        want = [[0, 0], [2.5, 1], [0.5, np.sqrt(3) / 6]]
        np.testing.assert_allclose(R.model_stock_filter_wise(w0, [x, y]), want, atol=1e-15)
        values = {"b": w0, "x": x, "y": y}
        j = job("model_stock", {"b": None, "x": None, "y": None},
                parameters={"filter_wise": True})
        with Only(), self.assertRaises(R.Unsupported) as e:
            R.model_stock_merge(j, values, "b")
        self.assertEqual(e.exception.key, "filter_wise")
        with Enabled("model_stock_filter_wise"):
            np.testing.assert_allclose(R.model_stock_merge(j, values, "b"), want, atol=1e-15)
        # a 1-D tensor is one row: the same as without filter_wise
        one = {k: a[1] - [0, 1] + a[0] for k, a in values.items()}
        with Enabled("model_stock_filter_wise"):
            got = R.model_stock_merge(j, one, "b")
        plain = R.model_stock_merge(job("model_stock", {"b": None, "x": None, "y": None}), one, "b")
        np.testing.assert_allclose(got, plain, rtol=1e-15)


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
            with Only(), self.assertRaises(R.Unsupported) as e:
                self.merge(config)
            self.assertEqual(e.exception.key, key)

    def test_new_methods_are_refused_unless_enabled(self):
        self.assertLessEqual(R.ENABLED_NEW_METHODS, set(R.NEW_METHODS) | {"model_stock_filter_wise"})
        for method in R.NEW_METHODS:
            with Only(), self.assertRaises(R.Unsupported) as e:
                self.merge({"merge_method": method, "base_model": "base", "models": [
                    {"model": "model_a", "parameters": {"weight": 1}}]})
            self.assertEqual(e.exception.key, method)
        with Only(*R.NEW_METHODS), self.assertRaises(R.Unsupported) as e:
            self.merge({"merge_method": "model_stock", "base_model": "base",
                        "parameters": {"filter_wise": True},
                        "models": [{"model": "model_a"}, {"model": "model_b"}]})
        self.assertEqual(e.exception.key, "filter_wise")

    def enabled_merge(self, method, models, base="base", **parameters):
        config = {"merge_method": method, "base_model": base, "parameters": parameters,
                  "models": [{"model": m, "parameters": p} for m, p in models.items()]}
        with Enabled(method):
            return self.merge(config).tensors

    def test_nearswap_sce_nuslerp_whole(self):
        a, b = self.ck["model_a"].tensors, self.ck["model_b"].tensors
        cases = [(self.enabled_merge("nearswap", {"model_b": None}, "model_a", t=1e9), b),
                 (self.enabled_merge("nearswap", {"model_b": None}, "model_a", t=0), a),
                 (self.enabled_merge("sce", {"model_b": None}, "model_a"), b),
                 # one task vector: every variance is 0, so k = 0 and nothing is kept
                 (self.enabled_merge("sce", {"model_b": None}, "model_a", select_topk=0.5), a),
                 (self.enabled_merge("nuslerp", {"model_a": {"weight": 1},
                                                 "model_b": {"weight": 0}}), a)]
        for merged, want in cases:
            self.assertEqual(set(merged), set(want))
            for n in want:
                np.testing.assert_allclose(merged[n], want[n], rtol=0, atol=1e-12)

    def test_multislerp_and_karcher_whole(self):
        a, b = self.ck["model_a"].tensors, self.ck["model_b"].tensors
        ms = self.enabled_merge("multislerp", {"model_a": {"weight": 0.6},
                                               "model_b": {"weight": 0.4}}, base=None)
        ka = self.enabled_merge("karcher", {"model_a": None, "model_b": None}, base=None)
        for n in a:
            na, nb = np.linalg.norm(a[n]), np.linalg.norm(b[n])
            mean = 0.6 * a[n] / na + 0.4 * b[n] / nb
            want = mean / np.linalg.norm(mean) * (0.6 * na + 0.4 * nb)
            np.testing.assert_allclose(ms[n], want, rtol=1e-7, atol=1e-7 * np.abs(want).max())
            mid = a[n] / na + b[n] / nb   # two points: the geodesic midpoint
            want = mid / np.linalg.norm(mid) * (na + nb) / 2
            np.testing.assert_allclose(ka[n], want, rtol=0, atol=1e-12)

    def test_arcee_fusion_and_filter_wise_model_stock_whole(self):
        a, b, c = (self.ck[m].tensors for m in ("model_a", "model_b", "model_c"))
        fused = self.enabled_merge("arcee_fusion", {"model_a": None, "model_b": None}, "model_a")
        kept = 0
        for n in a:
            from_b = fused[n] == b[n]
            self.assertTrue(np.all(from_b | (fused[n] == a[n])), n)
            kept += from_b[b[n] != a[n]].sum()
        self.assertTrue(0 < kept < sum(t.size for t in a.values()) / 4)
        config = {"merge_method": "model_stock", "base_model": "base",
                  "parameters": {"filter_wise": True},
                  "models": [{"model": "model_a"}, {"model": "model_b"}, {"model": "model_c"}]}
        with Enabled("model_stock_filter_wise"):
            merged = self.merge(config).tensors
        w0 = self.ck["base"].tensors
        j = job("model_stock", {"b": None, "x": None, "y": None, "z": None})
        for n in ("model.layers.3.mlp.up_proj.weight", "model.norm.weight"):
            rows = [(a[n], b[n], c[n], w0[n])] if a[n].ndim == 1 else \
                zip(a[n], b[n], c[n], w0[n])
            want = [R.model_stock_merge(j, {"b": r0, "x": x, "y": y, "z": z}, "b")
                    for x, y, z, r0 in rows]
            np.testing.assert_allclose(merged[n], np.reshape(want, a[n].shape), rtol=1e-13)


if __name__ == "__main__":
    unittest.main()
