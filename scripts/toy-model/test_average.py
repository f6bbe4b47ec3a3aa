"""average.py: the mean of checkpoints keeps the first one's layout; mismatches are errors."""
import importlib.util
import json
import os
import tempfile
import unittest

HAVE_NUMPY = importlib.util.find_spec("numpy") is not None
if HAVE_NUMPY:
    import numpy as np

    import average


def write_model(folder, tensors, metadata=None):
    """A safetensors file from {name: array} in the given order, plus a config.json."""
    os.makedirs(folder, exist_ok=True)
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, array in tensors.items():
        raw = array.tobytes()
        dtype = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    average.write_safetensors(os.path.join(folder, "model.safetensors"), header, b"".join(chunks))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"d_model": 4}, f)


@unittest.skipUnless(HAVE_NUMPY, "numpy missing (use Debian's /usr/bin/python3)")
class Average(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.a = {"w": np.array([[1, 2], [3, 4]], np.float16), "b": np.array([0.5, -1], np.float32)}
        self.b = {"w": np.array([[3, 2], [1, 0]], np.float16), "b": np.array([1.5, 1], np.float32)}
        write_model(f"{self.dir}/a", self.a, {"format": "pt"})
        write_model(f"{self.dir}/b", self.b, {"format": "pt"})

    def tearDown(self):
        self.tmp.cleanup()

    def load(self, folder):
        header, data = average.read_safetensors(os.path.join(folder, "model.safetensors"))
        return header, {k: average.tensor(header, data, k) for k in header if k != "__metadata__"}

    def test_equal_mean_keeps_names_order_dtypes_and_metadata(self):
        self.assertEqual(average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b"]), 0)
        header, tensors = self.load(f"{self.dir}/out")
        self.assertEqual(list(header), ["__metadata__", "w", "b"])
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertEqual(tensors["w"].dtype, np.float16)
        self.assertEqual(tensors["b"].dtype, np.float32)
        np.testing.assert_array_equal(tensors["w"], [[2, 2], [2, 2]])
        np.testing.assert_array_equal(tensors["b"], [1, 0])
        self.assertTrue(os.path.exists(f"{self.dir}/out/config.json"))

    def test_sidecar_of_the_furthest_trained_model_tied_to_the_new_weights(self):
        for name, step in (("a", 100), ("b", 250)):
            with open(f"{self.dir}/{name}/training-state.json", "w") as f:
                json.dump({"format": "hark-toy-training-state", "step": step, "model_sha256": name,
                           "position": {"en": step}}, f)
        average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b"])
        with open(f"{self.dir}/out/training-state.json") as f:
            side = json.load(f)
        self.assertEqual(side["step"], 250)
        self.assertEqual(side["position"], {"en": 250})
        self.assertEqual(side["model_sha256"], average.runstate.sha256_file(f"{self.dir}/out/model.safetensors"))
        self.assertEqual([(s["model_sha256"], s["step"], s["weight"]) for s in side["averaged_from"]],
                         [("a", 100, 0.5), ("b", 250, 0.5)])

    def test_no_sidecar_without_one_in_the_inputs(self):
        average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b"])
        self.assertFalse(os.path.exists(f"{self.dir}/out/training-state.json"))

    def test_weights(self):
        self.assertEqual(average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b", "--weights", "0.75,0.25"]), 0)
        _, tensors = self.load(f"{self.dir}/out")
        np.testing.assert_array_equal(tensors["w"], [[1.5, 2], [2.5, 3]])

    def test_data_starts_aligned(self):
        average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b"])
        with open(f"{self.dir}/out/model.safetensors", "rb") as f:
            size = int.from_bytes(f.read(8), "little")
        self.assertEqual(size % 8, 0)

    def test_shape_mismatch_is_an_error_naming_the_tensor(self):
        write_model(f"{self.dir}/c", {"w": np.zeros((2, 3), np.float16), "b": np.zeros(2, np.float32)})
        with self.assertRaisesRegex(ValueError, "w is F16 \\[2, 3\\]"):
            average.average([f"{self.dir}/a/model.safetensors", f"{self.dir}/c/model.safetensors"], [0.5, 0.5])

    def test_missing_tensor_is_an_error(self):
        write_model(f"{self.dir}/c", {"w": np.zeros((2, 2), np.float16)})
        self.assertEqual(average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/c"]), 1)
        self.assertFalse(os.path.exists(f"{self.dir}/out/model.safetensors"))

    def test_truncated_file_is_an_error(self):
        with open(f"{self.dir}/a/model.safetensors", "r+b") as f:
            f.truncate(20)
        self.assertEqual(average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b"]), 1)

    def test_weights_must_sum_to_one(self):
        with self.assertRaises(SystemExit):
            average.main([f"{self.dir}/out", f"{self.dir}/a", f"{self.dir}/b", "--weights", "0.5,0.6"])


if __name__ == "__main__":
    unittest.main()
