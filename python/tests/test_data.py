"""compatnets.idx, compatnets.captions and compatnets.data on small made-up IDX files (and
on the real Fashion-MNIST files when Debian's dataset-fashion-mnist is installed)."""
import filecmp
import gzip
import json
import os
import tempfile
import unittest

import numpy as np

from compatnets import captions as cap
from compatnets.data import SOURCE, DataError, build, load_fashion, read_captions
from compatnets.idx import IdxError, read_idx, write_idx
from compatnets.safetensors import load
from tests.fixtures import fake_source


class IdxTest(unittest.TestCase):
    def test_round_trip_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.gz")
            x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
            write_idx(path, x)
            np.testing.assert_array_equal(read_idx(path), x)
            write_idx(os.path.join(d, "f"), np.ones((2, 2), np.float32))
            self.assertEqual(read_idx(os.path.join(d, "f")).dtype, np.float32)
            with gzip.open(path, "rb") as f:
                data = f.read()
            with gzip.open(path, "wb") as f:
                f.write(data[:-5])
            with self.assertRaisesRegex(IdxError, r"x.gz: 19 bytes of values from offset 16; "
                                                  r"shape \[2, 3, 4\] needs 24"):
                read_idx(path)
            with open(path, "wb") as f:
                f.write(gzip.compress(data)[:30])
            with self.assertRaisesRegex(IdxError, "x.gz: cannot be read as gzip .* truncated"):
                read_idx(path)
            with gzip.open(path, "wb") as f:
                f.write(b"\x01\x02\x03\x04")
            with self.assertRaisesRegex(IdxError, "not an IDX magic number"):
                read_idx(path)
            with self.assertRaisesRegex(IdxError, "nope.gz: not found"):
                read_idx(os.path.join(d, "nope.gz"))


class CaptionsTest(unittest.TestCase):
    def test_measure_a_hand_made_block(self):
        x = np.zeros((2, 28, 28), np.uint8)
        x[0, 4:10, 10:14] = 255      # 6 × 4, off-centre: its mirror image does not overlap it
        x[1, 4:10, 12:16] = 128      # 6 × 4 about the centre column: symmetric
        a = cap.measure(x)
        np.testing.assert_allclose(a["ink"], [24 / 784, 24 / 784])
        np.testing.assert_allclose(a["brightness"], [1.0, 128 / 255], rtol=1e-6)
        np.testing.assert_allclose(a["aspect"], [1.5, 1.5])
        np.testing.assert_allclose(a["symmetry"], [0.0, 1.0], atol=1e-7)

    def test_measure_the_described_attributes(self):
        x = np.zeros((2, 28, 28), np.uint8)
        x[0, 4:10, 10:14] = 200               # a 6 × 4 solid block: flat, full, centred
        x[1, 4:10, 10:14] = 200
        x[1, 4:10, 10:14:2] = 100             # every other column darker: striped
        x[1, 7:10, 10:14] = 0                 # the lower half gone: 3 rows of ink
        a = cap.measure(x)
        self.assertEqual(set(a), set(cap.DESCRIBED))
        np.testing.assert_allclose(a["fill"], [1.0, 1.0])
        np.testing.assert_allclose(a["texture"][0], 0.0, atol=1e-7)
        # striped: neighbours along a row differ by 100/255; along a column not at all
        np.testing.assert_allclose(a["texture"][1], (3 * 3 * 100 / 255) / (9 + 8), rtol=1e-5)
        np.testing.assert_allclose(a["balance"], [0.5, 0.5], rtol=1e-6)
        np.testing.assert_allclose(a["contrast"], [0.0, 50 / 255], atol=1e-6)
        y = np.zeros((1, 28, 28), np.uint8)
        y[0, 2:4, 2:10] = 255                 # a heavy bar on top of a faint stem
        y[0, 4:12, 5:7] = 40
        self.assertLess(cap.measure(y)["balance"][0], 0.5)

    def test_captions_vary_name_the_class_and_use_the_vocabulary(self):
        lv = np.array([[0, 1, 2, 3, 4, 0, 1, 2], [4, 4, 0, 1, 2, 3, 3, 3]])
        facts = []
        texts = cap.captions(1, 0, [7, 3], lv, 5, hard=False, facts=facts)
        self.assertEqual(len(texts), 10)
        self.assertGreaterEqual(len(set(texts[:5])), 3, texts[:5])
        for t, (classes, stated) in zip(texts, facts):
            label = 7 if t in texts[:5] else 3
            self.assertTrue(any(n in t for n in cap.NOUNS[label]), t)
            self.assertEqual(classes, (label,))
            self.assertEqual(len(stated), cap.STATED[False])
            for a, level in stated.items():  # each stated level's words are in the caption
                self.assertTrue(any(w in t for w in cap.WORDS[cap.DESCRIBED[a]][level]), t)
        hard = cap.captions(1, 4, [7, 3], lv, 5, hard=True)
        for t in texts + hard:
            self.assertTrue(set(cap.tokens(t)) <= set(cap.VOCABULARY), t)
        self.assertEqual(texts, cap.captions(1, 0, [7, 3], lv, 5, hard=False))
        self.assertNotEqual(texts, cap.captions(2, 0, [7, 3], lv, 5, hard=False))

    def test_every_level_has_its_own_words(self):
        words = [w for lv in cap.WORDS.values() for b in lv for w in b]
        self.assertEqual(len(words), len(set(words)))
        self.assertTrue(all(len(lv) == cap.LEVELS for lv in cap.WORDS.values()))

    def test_articles(self):
        rng = np.random.default_rng(0)
        for _ in range(200):
            lv = rng.integers(0, cap.LEVELS, len(cap.DESCRIBED))
            t = cap.describe(rng, int(rng.integers(10)), lv, bool(rng.integers(2)))[0]
            self.assertNotRegex(t, r"\ba [aeiou]", t)
            self.assertNotRegex(t, r"\ban [^aeiou]", t)

    def test_oracle_by_hand(self):
        # Images 0 and 1 alike (class 2, levels 0); image 2 another class. A caption of image
        # 0 stating one level fits images 0 and 1; one of image 2 fits only image 2.
        lv = np.zeros((3, 8), int)
        facts = [((2,), {0: 0}), ((2,), {1: 0}), ((5,), {0: 0})]
        # image 0: its own caption and image 1's fit it -> 1/2; the same for image 1; image 2: 1
        self.assertAlmostEqual(cap.oracle_r1([2, 2, 5], lv, facts, 1), (0.5 + 0.5 + 1) / 3)
        lv[1, 0] = 3  # image 1 differs in the level image 0's caption states
        facts[1] = ((2,), {0: 3})
        self.assertAlmostEqual(cap.oracle_r1([2, 2, 5], lv, facts, 1), 1.0)
        coarse = [((0, 2, 4, 6), {}), ((2,), {}), ((5,), {})]  # a group noun fits both tops
        self.assertAlmostEqual(cap.oracle_r1([2, 2, 5], lv, coarse, 1), (0.5 + 0.5 + 1) / 3)


class DataTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.dir.name, "src")
        os.makedirs(self.src)
        fake_source(self.src)
        self.sizes = {"encoder": 150, "train": 60, "probe": 40, "eval": 30}

    def tearDown(self):
        self.dir.cleanup()

    def test_splits_are_disjoint_paired_and_reproducible(self):
        out, again = (os.path.join(self.dir.name, n) for n in ("a", "b"))
        info = build(out, self.sizes, 3, 7, self.src, check_oracle=False)
        build(again, self.sizes, 3, 7, self.src, check_oracle=False)
        for folder in ("images", "captions", "pairing"):
            cmp = filecmp.dircmp(os.path.join(out, folder), os.path.join(again, folder))
            self.assertFalse(cmp.diff_files, folder)
        rows = {s: load(os.path.join(out, "images", s + ".safetensors")) for s in info["splits"]}
        self.assertEqual({s: len(r["labels"]) for s, r in rows.items()},
                         {"encoder": 150, "train": 60, "probe": 40, "flickr": 30, "coco": 30})
        seen = np.concatenate([rows[s]["source_index"] for s in ("encoder", "train", "probe")])
        self.assertEqual(len(set(seen.tolist())), 250)
        self.assertFalse(set(rows["flickr"]["source_index"]) & set(rows["coco"]["source_index"]))
        train_x = read_idx(os.path.join(self.src, "train-images-idx3-ubyte.gz"))
        np.testing.assert_array_equal(rows["probe"]["images"], train_x[rows["probe"]["source_index"]])
        for s, r in rows.items():
            texts = read_captions(out, s)
            pairing = load(os.path.join(out, "pairing", s + ".safetensors"))["caption_image"]
            self.assertEqual(len(texts), 3 * len(r["labels"]))
            np.testing.assert_array_equal(pairing, np.repeat(np.arange(len(r["labels"])), 3))
        self.assertEqual(info["splits"]["coco"], {"images": 30, "captions": 90})

    def test_captions_that_cannot_single_images_out_are_refused(self):
        # The made-up images of a class are all alike: no caption can tell them apart.
        with self.assertRaisesRegex(DataError, r"cannot single images out: oracle R@1 flickr "
                                               r"0\.\d+ < 0\.5"):
            build(os.path.join(self.dir.name, "a"), self.sizes, 3, 7, self.src)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "a", "data.json")))

    def test_too_few_images_and_missing_files(self):
        with self.assertRaisesRegex(DataError, "encoder \\+ train \\+ probe = 400 images; the training file has 300"):
            build(os.path.join(self.dir.name, "a"), dict(self.sizes, encoder=300), 3, 1, self.src,
                  check_oracle=False)
        os.remove(os.path.join(self.src, "t10k-labels-idx1-ubyte.gz"))
        with self.assertRaisesRegex(DataError, "t10k-labels-idx1-ubyte.gz: not found; .*apt-get install dataset-fashion-mnist"):
            load_fashion(self.src)

    @unittest.skipUnless(os.path.exists(SOURCE), "Debian's dataset-fashion-mnist is not installed")
    def test_the_real_files(self):
        train_x, train_y, test_x, test_y = load_fashion()
        self.assertEqual((train_x.shape, test_x.shape), ((60000, 28, 28), (10000, 28, 28)))
        self.assertEqual(np.bincount(test_y).tolist(), [1000] * 10)

    @unittest.skipUnless(os.path.exists(SOURCE), "Debian's dataset-fashion-mnist is not installed")
    def test_the_oracle_on_the_real_splits(self):
        # The pre-registered design (compatnets.captions): captions that a retriever knowing
        # each image exactly can find, on the real library's own sizes, harder on coco.
        out = os.path.join(self.dir.name, "real")
        info = build(out, {"encoder": 20000, "train": 10, "probe": 10, "eval": 1000}, 5, 1)
        oracle = info["oracle_r1"]
        self.assertGreaterEqual(oracle["flickr"], 0.5, oracle)
        self.assertGreaterEqual(oracle["coco"], 0.25, oracle)
        self.assertLess(oracle["coco"], oracle["flickr"], oracle)
        with open(os.path.join(out, "data.json")) as f:
            self.assertEqual(json.load(f)["oracle_r1"], oracle)


if __name__ == "__main__":
    unittest.main()
