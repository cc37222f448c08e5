"""compatnets.idx, compatnets.captions and compatnets.data on small made-up IDX files (and
on the real Fashion-MNIST files when Debian's dataset-fashion-mnist is installed)."""
import filecmp
import gzip
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

    def test_captions_vary_name_the_class_and_use_the_vocabulary(self):
        b = np.array([[0, 1, 2, 0], [2, 2, 0, 1]])
        texts = cap.captions(1, 0, [7, 3], b, 5, hard=False)
        self.assertEqual(len(texts), 10)
        self.assertGreaterEqual(len(set(texts[:5])), 3, texts[:5])
        for t in texts[:5]:
            self.assertTrue(any(n in t for n in cap.NOUNS[7]), t)
        for t in texts + cap.captions(1, 4, [7, 3], b, 5, hard=True):
            self.assertTrue(set(cap.tokens(t)) <= set(cap.VOCABULARY), t)
        self.assertEqual(texts, cap.captions(1, 0, [7, 3], b, 5, hard=False))
        self.assertNotEqual(texts, cap.captions(2, 0, [7, 3], b, 5, hard=False))

    def test_articles(self):
        rng = np.random.default_rng(0)
        for _ in range(200):
            t = cap.caption(rng, int(rng.integers(10)), rng.integers(0, 3, 4), bool(rng.integers(2)))
            self.assertNotRegex(t, r"\ba [aeiou]", t)
            self.assertNotRegex(t, r"\ban [^aeiou]", t)


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
        info = build(out, self.sizes, 3, 7, self.src)
        build(again, self.sizes, 3, 7, self.src)
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

    def test_too_few_images_and_missing_files(self):
        with self.assertRaisesRegex(DataError, "encoder \\+ train \\+ probe = 400 images; the training file has 300"):
            build(os.path.join(self.dir.name, "a"), dict(self.sizes, encoder=300), 3, 1, self.src)
        os.remove(os.path.join(self.src, "t10k-labels-idx1-ubyte.gz"))
        with self.assertRaisesRegex(DataError, "t10k-labels-idx1-ubyte.gz: not found; .*apt-get install dataset-fashion-mnist"):
            load_fashion(self.src)

    @unittest.skipUnless(os.path.exists(SOURCE), "Debian's dataset-fashion-mnist is not installed")
    def test_the_real_files(self):
        train_x, train_y, test_x, test_y = load_fashion()
        self.assertEqual((train_x.shape, test_x.shape), ((60000, 28, 28), (10000, 28, 28)))
        self.assertEqual(np.bincount(test_y).tolist(), [1000] * 10)


if __name__ == "__main__":
    unittest.main()
