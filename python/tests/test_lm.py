"""compatnets.corpus, compatnets.llama and compatnets.lm: a disjoint, checked corpus; Hugging
Face's Llama layout (sharded with an index, tied heads) and its refusals; pretraining,
specialists and the evaluation of a merged checkpoint."""
import filecmp
import json
import os
import shutil
import tempfile
import unittest

import numpy as np

from compatnets import corpus
from compatnets.safetensors import INDEX_NAME, SafetensorsError, load, save
from tests.fixtures import quiet, torch_module

llama = torch_module("llama")
lm = torch_module("lm")

TINY = ["--hidden", "16", "--layers", "2", "--heads", "2", "--intermediate", "24", "--batch", "4"]


def made_up_corpus(folder):
    """A corpus of the eight domains from made-up text (each domain its own alphabet)."""
    text = os.path.join(folder, "text")
    rng = np.random.default_rng(0)
    for i, d in enumerate(corpus.DOMAINS):
        os.makedirs(os.path.join(text, d))
        for j in range(3):
            letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz {}();"[i:i + 12] + b"\n", np.uint8)
            with open(os.path.join(text, d, f"f{j}.txt"), "wb") as f:
                f.write(rng.choice(letters, 1500).tobytes())
    out = os.path.join(folder, "corpus")
    code, err = quiet(corpus.main, ["--out", out, "--from", text, "--domain-bytes", "4000", "--block", "256",
                                    "--eval-windows", "4", "--probe-windows", "2", "--context", "16",
                                    "--gen-windows", "3", "--gen-prompt", "8", "--gen-bytes", "4"])
    assert code == 0, err
    return out


class CorpusTest(unittest.TestCase):
    def test_parts_are_disjoint_blocks_and_checked(self):
        with tempfile.TemporaryDirectory() as d:
            out = made_up_corpus(d)
            with open(os.path.join(out, "corpus.json")) as f:
                info = json.load(f)
            text, _ = corpus.domain_text("c", 4000, os.path.join(d, "text"))
            train, held = corpus.split(text, 256, 10)
            self.assertEqual(held, text[9 * 256:10 * 256])  # the 10th of 16 blocks
            self.assertEqual(len(train) + len(held), len(text))
            with open(os.path.join(out, "c.heldout"), "rb") as f:
                self.assertEqual(f.read(), held)
            self.assertEqual(len(info["domains"]["c"]["sources"]), 3)
            c = corpus.Corpus(out)
            self.assertEqual(c.part("c", "train"), train)
            with open(os.path.join(out, "german.heldout"), "r+b") as f:
                f.write(b"X")
            with self.assertRaisesRegex(ValueError, "german.heldout: sha256 differs"):
                corpus.Corpus(out).part("german", "heldout")

    def test_settings_are_part_of_the_hash(self):
        with tempfile.TemporaryDirectory() as d:
            out = made_up_corpus(d)
            path = os.path.join(out, "corpus.json")
            with open(path) as f:
                info = json.load(f)
            info["eval_windows"] = 5
            with open(path, "w") as f:
                json.dump(info, f)
            with self.assertRaisesRegex(ValueError, "corpus.json: its sha256 does not match"):
                corpus.Corpus(out)

    def test_windows_spread_inside_blocks(self):
        starts = corpus.window_starts(2500, 1000, 300, 5)  # 3 + 3 + 1 windows fit in the blocks
        self.assertEqual(starts, [0, 600, 1000, 1300, 2000])  # of 0, 300, 600, 1000, 1300, 1600, 2000
        with self.assertRaisesRegex(ValueError, "7 windows of 300 bytes .* fewer than 8"):
            corpus.window_starts(2500, 1000, 300, 8)

    def test_generation_windows_start_lines_inside_blocks(self):
        data = b"ab\ncd\nefgh\nij" + b"k" * 10 + b"\nlmnop"
        self.assertEqual(corpus.generation_starts(data, 16, 3, 2, 2), [3, 24])  # of 3, 6, 11, 24
        starts = corpus.generation_starts(data, 8, 3, 2, 3)  # 24: bytes 21..25 cross a block's end
        self.assertEqual(starts, [3, 6, 11])
        self.assertTrue(all(data[s - 1] == 10 for s in starts))
        with self.assertRaisesRegex(ValueError, "3 line starts .* fewer than 4"):
            corpus.generation_starts(data, 8, 3, 2, 4)

    def test_a_missing_domain_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            code, err = quiet(corpus.main, ["--out", os.path.join(d, "c"), "--from", d])
            self.assertEqual(code, 2)
            self.assertIn("domain 'python': no files in", err)


@unittest.skipIf(llama is None, "python3-torch is not installed")
class LlamaTest(unittest.TestCase):
    def model(self, **kw):
        import torch
        torch.manual_seed(0)
        cfg = llama.Config(hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                           num_attention_heads=2, max_position_embeddings=32, **kw)
        return llama.Llama(cfg)

    def test_hugging_face_names_sharded_and_loaded_back(self):
        import torch
        m = self.model()
        with tempfile.TemporaryDirectory() as d:
            llama.save(d, m, shard_bytes=4000)
            with open(os.path.join(d, INDEX_NAME)) as f:
                index = json.load(f)
            files = sorted(set(index["weight_map"].values()))
            self.assertGreater(len(files), 1)
            self.assertEqual(files[0], f"model-00001-of-{len(files):05d}.safetensors")
            self.assertIn("model.layers.1.mlp.gate_proj.weight", index["weight_map"])
            self.assertIn("lm_head.weight", index["weight_map"])
            self.assertEqual(index["metadata"]["total_size"], sum(a.nbytes for a in load(d).values()))
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            self.assertEqual((cfg["model_type"], cfg["num_hidden_layers"], cfg["head_dim"]), ("llama", 2, 8))
            ids = torch.randint(0, 256, (2, 10))
            with torch.no_grad():
                self.assertTrue(torch.equal(m(ids), llama.load(d)(ids)))

    def test_rms_norm_and_rotary_as_defined(self):
        import torch
        norm = llama.RMSNorm(4, 1e-5)
        norm.weight.data = torch.tensor([1.0, 2.0, 1.0, 0.5])
        x = torch.tensor([[1.0, -2.0, 3.0, 0.0]])
        want = x / torch.sqrt(torch.tensor(14.0 / 4 + 1e-5)) * norm.weight
        self.assertTrue(torch.allclose(norm(x), want))
        # With RoPE, a query-key score depends only on the positions' difference.
        body = self.model().model
        q, k = torch.randn(8), torch.randn(8)
        rot = lambda v, p: v * body.cos[p] + llama.rotate_half(v) * body.sin[p]  # noqa: E731
        self.assertAlmostEqual(float(rot(q, 3) @ rot(k, 1)), float(rot(q, 9) @ rot(k, 7)), places=5)
        self.assertNotAlmostEqual(float(rot(q, 3) @ rot(k, 1)), float(rot(q, 3) @ rot(k, 2)), places=3)

    def test_a_resave_leaves_no_stale_shards(self):
        m = self.model()
        with tempfile.TemporaryDirectory() as d:
            llama.save(d, m, shard_bytes=4000)
            llama.save(d, m)
            self.assertEqual(sorted(f for f in os.listdir(d) if "model" in f), ["model.safetensors"])

    def test_unsupported_configs_and_tensors_are_refused(self):
        m = self.model()
        with tempfile.TemporaryDirectory() as d:
            llama.save(d, m)
            path = os.path.join(d, "config.json")
            with open(path) as f:
                cfg = json.load(f)
            for key, value, why in (("hidden_act", "gelu", "hidden_act 'gelu' is not supported"),
                                    ("tie_word_embeddings", "false", "tie_word_embeddings 'false' is not a bool"),
                                    ("hidden_size", 18, "hidden_size 18 is not num_attention_heads 2 heads")):
                with open(path, "w") as f:
                    json.dump(dict(cfg, **{key: value}), f)
                with self.assertRaisesRegex(SafetensorsError, why):
                    llama.load(d)
            with open(path, "w") as f:
                json.dump(cfg, f)
            save(os.path.join(d, "model.safetensors"), dict(m.tensors(), **{"model.extra.bias": np.zeros(2, np.float32)}))
            with self.assertRaisesRegex(SafetensorsError, "tensor 'model.extra.bias' is not part of a Llama"):
                llama.load(d)

    def test_cached_decoding_gives_the_full_forward_pass(self):
        import torch
        model = self.model()
        ids = torch.randint(0, 256, (3, 12), generator=torch.Generator().manual_seed(1))
        full = model(ids)
        past = []
        steps = [model(ids[:, :5], past)] + [model(ids[:, t:t + 1], past) for t in range(5, 12)]
        torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5)
        out = lm.greedy(model, ids[:, :5], 4)  # each token the argmax after the ones before
        x = ids[:, :5]
        for t in range(4):
            x = torch.cat((x, model(x)[:, -1].argmax(-1, keepdim=True)), 1)
        self.assertTrue(torch.equal(out, x[:, 5:]))

    def test_tied_head_is_not_stored(self):
        m = self.model(tie_word_embeddings=True)
        with tempfile.TemporaryDirectory() as d:
            llama.save(d, m, shard_bytes=4000)
            self.assertNotIn("lm_head.weight", load(d))
            back = llama.load(d)
            self.assertIs(back.lm_head.weight, back.model.embed_tokens.weight)

    def test_causal_and_rotary(self):
        import torch
        m = self.model()
        ids = torch.randint(0, 256, (1, 12))
        later = ids.clone()
        later[0, 8:] = (later[0, 8:] + 1) % 256
        with torch.no_grad():
            self.assertTrue(torch.equal(m(ids)[0, :8], m(later)[0, :8]))  # no peeking ahead
        self.assertTrue(torch.equal(llama.rotate_half(torch.tensor([1.0, 2, 3, 4])),
                                    torch.tensor([-3.0, -4, 1, 2])))

    def test_broken_checkpoints_are_refused_by_name(self):
        m = self.model()
        with tempfile.TemporaryDirectory() as d:
            llama.save(d, m, shard_bytes=4000)
            with open(os.path.join(d, INDEX_NAME)) as f:
                name = sorted(set(json.load(f)["weight_map"].values()))[1]
            shard = os.path.join(d, name)
            tensors = load(shard)
            gone = sorted(tensors)[0]
            save(shard, {k: v for k, v in tensors.items() if k != gone})
            with self.assertRaisesRegex(SafetensorsError, f"{name}: no tensor '{gone}'"):
                llama.load(d)
            os.remove(shard)
            with self.assertRaisesRegex(SafetensorsError, f"{name}: missing shard"):
                llama.load(d)

    def test_configs_must_agree(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            llama.save(a, self.model())
            llama.save(b, self.model(vocab_size=300))
            with self.assertRaisesRegex(SafetensorsError, "vocab_size 256 but .*b/config.json has 300"):
                llama.load(b, like=a)


@unittest.skipIf(lm is None, "python3-torch is not installed")
class LmJobsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        d = cls.dir.name
        cls.corpus = made_up_corpus(d)
        cls.base = os.path.join(d, "base")
        code, err = quiet(lm.main, ["pretrain", "--corpus", cls.corpus, "--out", cls.base, *TINY,
                                    "--steps", "4", "--shard-mb", "0.01"])
        assert code == 0, err
        cls.spec = os.path.join(d, "spec")
        for domain in ("python", "german"):
            code, err = quiet(lm.main, ["specialize", "--base", cls.base, "--domain", domain, "--corpus",
                                        cls.corpus, "--out", cls.spec, "--features", os.path.join(d, "feat"),
                                        "--steps", "4", "--save-steps", "2", "--batch", "4", "--shard-mb", "0.01",
                                        "--result", os.path.join(d, domain + ".json")])
            assert code == 0, err

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_pretraining_is_deterministic(self):
        again = os.path.join(self.dir.name, "again")
        code, err = quiet(lm.main, ["pretrain", "--corpus", self.corpus, "--out", again, *TINY,
                                    "--steps", "4", "--shard-mb", "0.01"])
        self.assertEqual(code, 0, err)
        names = sorted(os.listdir(self.base))
        self.assertEqual(names, sorted(os.listdir(again)))
        self.assertTrue(all(filecmp.cmp(os.path.join(self.base, n), os.path.join(again, n), shallow=False)
                            for n in names))

    def test_specialists_saved_scored_and_probed(self):
        for folder in ("python", "python@2", "german"):
            with open(os.path.join(self.spec, folder, "eval.json")) as f:
                e = json.load(f)
            self.assertEqual(set(e["domains"]), set(corpus.DOMAINS))
            self.assertEqual(e["base"], os.path.realpath(self.base))
        feats = load(os.path.join(self.dir.name, "feat", "llama+python", "probe.safetensors"))["features"]
        self.assertEqual(feats.shape, (2 * len(corpus.DOMAINS), 16))
        with open(os.path.join(self.dir.name, "python.json")) as f:
            r = json.load(f)
        self.assertEqual((r["steps"], r["tokens"]), (4, 4 * 4 * 16))
        base, spec = llama.load(self.base), llama.load(os.path.join(self.spec, "python"))
        pairs = [(p, q) for p, q in zip(spec.parameters(), base.parameters()) if q.dim() >= 2]
        tau = sum(float(((p - q) ** 2).sum()) for p, q in pairs)
        self.assertAlmostEqual(r["rel_norm"], (tau / sum(float((q ** 2).sum()) for _, q in pairs)) ** 0.5, places=5)
        self.assertGreater(r["rel_norm_mlp"], 0)
        with open(os.path.join(self.base, "loss_curve.json")) as f:
            curve = json.load(f)
        self.assertEqual(len(curve["heldout_loss"]), 10)  # 4 steps: several tenths end at one step
        self.assertEqual(curve["step"], [1, 1, 1, 2, 2, 2, 3, 3, 4, 4])

    def test_generation_scores_are_exact_continuations(self):
        model = llama.load(self.base)
        c = corpus.Corpus(self.corpus)
        s = lm.domain_scores(model, c, "c")
        prompts, target = lm.generation(c, "c")
        self.assertEqual(prompts.shape, (3, 8))
        self.assertEqual(s["gen"], float((lm.greedy(model, prompts, 4) == target).all(1).double().mean()))
        self.assertAlmostEqual(s["acc"], float(np.mean(s["win"])))

    def evaluate(self, checkpoint, expect=0):
        out = os.path.join(self.dir.name, "eval.json")
        code, err = quiet(lm.main, ["evaluate", "--checkpoint", checkpoint, "--base", self.base, "--finetuned",
                                    os.path.join(self.spec, "python"), os.path.join(self.spec, "german"),
                                    "--tasks", "python", "german", "--corpus", self.corpus, "--out", out])
        self.assertEqual(code, expect, err)
        if expect:
            return err
        with open(out) as f:
            return json.load(f)

    def test_evaluate_scores_a_merge_beside_members_and_base(self):
        r = self.evaluate(os.path.join(self.spec, "python"))  # a "merge" that is the first member
        self.assertEqual(r["acc_1"], r["ft_acc_1"])
        with open(os.path.join(self.base, "eval.json")) as f:
            self.assertEqual(r["base_acc_2"], json.load(f)["domains"]["german"]["acc"])
        r = self.evaluate(self.base)
        self.assertEqual((r["acc_1"], r["acc_2"]), (r["base_acc_1"], r["base_acc_2"]))
        self.assertEqual((r["diff_se"], r["gen"], r["all_acc"]), (0.0, r["base_gen"], r["base_all_acc"]))
        r = self.evaluate(os.path.join(self.spec, "german"))
        with open(os.path.join(self.base, "eval.json")) as f:
            base = json.load(f)["domains"]
        with open(os.path.join(self.spec, "german", "eval.json")) as f:
            mine = json.load(f)["domains"]
        diff = np.subtract(mine["python"]["win"] + mine["german"]["win"], base["python"]["win"] + base["german"]["win"])
        self.assertAlmostEqual(r["diff_se"], diff.std(ddof=1) / len(diff) ** 0.5)
        self.assertAlmostEqual(r["all_acc"], np.mean([mine[d]["acc"] for d in corpus.DOMAINS]))

    def test_a_changed_corpus_or_a_missing_shard_fails_by_name(self):
        copy = os.path.join(self.dir.name, "copy")
        shutil.copytree(self.spec, copy)
        shards = sorted(f for f in os.listdir(os.path.join(copy, "python")) if f.startswith("model-"))
        os.remove(os.path.join(copy, "python", shards[0]))
        self.assertIn("missing shard", self.evaluate(os.path.join(copy, "python"), expect=2))
        changed = os.path.join(self.dir.name, "changed")
        shutil.copytree(self.corpus, changed)
        with open(os.path.join(changed, "python.heldout"), "ab") as f:
            f.write(b"!")
        out = os.path.join(self.dir.name, "x.json")
        code, err = quiet(lm.main, ["evaluate", "--checkpoint", self.base, "--base", self.base, "--finetuned",
                                    os.path.join(self.spec, "python"), "--tasks", "python", "--corpus", changed,
                                    "--out", out])
        self.assertEqual(code, 2)
        self.assertIn("python.heldout: sha256 differs", err)


if __name__ == "__main__":
    unittest.main()
