"""compatnets.safetensors: round trips, BF16 rounding, sharded checkpoints, and the errors
a malformed file gets."""
import json
import os
import struct
import tempfile
import unittest

import numpy as np

from compatnets.safetensors import SafetensorsError, load, read, save, shard_files


def raw_file(path, header, data=b""):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "a.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_round_trip_keeps_dtype_shape_values_and_metadata(self):
        rng = np.random.default_rng(0)
        tensors = {"f32": rng.normal(size=(3, 4)).astype(np.float32),
                   "f64": rng.normal(size=5), "f16": np.array([1, -2, 0.5, 65504], np.float16),
                   "i64": np.arange(6).reshape(2, 3), "i32": np.array([7, -7], np.int32),
                   "u8": np.array([0, 255], np.uint8), "scalar": np.array(3.5, np.float32)}
        save(self.path, tensors, metadata={"format": "pt"})
        r = read(self.path)
        self.assertEqual(r.metadata, {"format": "pt"})
        self.assertEqual(r.dtypes, {"f32": "F32", "f64": "F64", "f16": "F16", "i64": "I64",
                                    "i32": "I32", "u8": "U8", "scalar": "F32"})
        self.assertEqual(r.data_start % 8, 0)
        for name, want in tensors.items():
            self.assertEqual(r.tensors[name].dtype, want.dtype, name)
            np.testing.assert_array_equal(r.tensors[name], want, err_msg=name)

    def test_bf16_rounds_to_nearest_even(self):
        # 1 + 2^-8 lies halfway between 1 (0x3F80) and 1 + 2^-7 (0x3F81): even is 0x3F80;
        # 1 + 3·2^-8 lies halfway between 0x3F81 and 0x3F82: even is 0x3F82 = 1 + 2^-6.
        x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.0, 3.140625], np.float32)
        save(self.path, {"w": x, "n": np.array([1, 2])}, dtypes="BF16")
        r = read(self.path)
        self.assertEqual(r.dtypes, {"w": "BF16", "n": "I64"})  # a string applies to floats only
        np.testing.assert_array_equal(r.tensors["w"], [1.0, 1.0, 1 + 2**-6, -2.0, 3.140625])
        with open(self.path, "rb") as f:
            data = f.read()
        bits = np.frombuffer(data[r.data_start:r.data_start + 10], "<u2")
        self.assertEqual([hex(b) for b in bits], ["0x3f80", "0x3f80", "0x3f82", "0xc000", "0x4049"])
        save(self.path, {"w": np.array([np.nan, np.inf, -np.inf], np.float32)}, dtypes="BF16")
        w = read(self.path).tensors["w"]
        self.assertTrue(np.isnan(w[0]) and w[1] == np.inf and w[2] == -np.inf, w)

    def test_per_tensor_dtypes(self):
        save(self.path, {"a": np.ones(2), "b": np.ones(2)}, dtypes={"a": "F16"})
        self.assertEqual(read(self.path).dtypes, {"a": "F16", "b": "F64"})

    def test_sharded_folder_and_index(self):
        save(os.path.join(self.dir.name, "s1.safetensors"), {"x": np.zeros(2, np.float32)})
        save(os.path.join(self.dir.name, "s2.safetensors"), {"y": np.ones(3, np.float32)})
        index = os.path.join(self.dir.name, "model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"weight_map": {"x": "s1.safetensors", "y": "s2.safetensors"}}, f)
        for where in (self.dir.name, index):
            t = load(where)
            self.assertEqual(sorted(t), ["x", "y"])
            np.testing.assert_array_equal(t["y"], np.ones(3))
        self.assertEqual([os.path.basename(f) for f in shard_files(self.dir.name)],
                         ["s1.safetensors", "s2.safetensors"])

    def test_folder_without_index_needs_one_file(self):
        save(os.path.join(self.dir.name, "one.safetensors"), {"x": np.zeros(1)})
        self.assertEqual(list(load(self.dir.name)), ["x"])
        save(os.path.join(self.dir.name, "two.safetensors"), {"x": np.zeros(1)})
        with self.assertRaisesRegex(SafetensorsError, "no model.safetensors.index.json and 2"):
            load(self.dir.name)

    def test_malformed_files_name_file_offset_and_reason(self):
        cases = [
            (b"\x01\x02", "shorter than the 8-byte header length"),
            (struct.pack("<Q", 1000) + b"{}", "header of 1000 bytes at offset 8 runs past"),
            (struct.pack("<Q", 3) + b"{x}", "header at offset 8 is not JSON"),
        ]
        for data, want in cases:
            with open(self.path, "wb") as f:
                f.write(data)
            with self.assertRaisesRegex(SafetensorsError, "a.safetensors: .*" + want):
                read(self.path)
        raw_file(self.path, {"w": {"dtype": "F7", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4)
        with self.assertRaisesRegex(SafetensorsError, "tensor 'w' has dtype 'F7'"):
            read(self.path)
        raw_file(self.path, {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8)
        with self.assertRaisesRegex(SafetensorsError, "tensor 'w' spans bytes .* past the end"):
            read(self.path)
        raw_file(self.path, {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8)
        with self.assertRaisesRegex(SafetensorsError, r"'w' at offset \d+ has 8 bytes; F32 \[3\] needs 12"):
            read(self.path)
        raw_file(self.path, {"w": {"dtype": "F32", "shape": [1]}})
        with self.assertRaisesRegex(SafetensorsError, "lacks dtype, shape or data_offsets"):
            read(self.path)

    def test_save_rejects_what_it_cannot_store(self):
        with self.assertRaisesRegex(SafetensorsError, "tensor 'c': numpy dtype complex128"):
            save(self.path, {"c": np.zeros(2, complex)})
        with self.assertRaisesRegex(SafetensorsError, "tensor 'i': BF16 needs a float array"):
            save(self.path, {"i": np.zeros(2, int)}, dtypes={"i": "BF16"})


if __name__ == "__main__":
    unittest.main()
