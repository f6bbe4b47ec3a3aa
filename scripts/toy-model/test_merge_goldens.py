"""Unit test of scripts/oracle/merge_toy_goldens.py (a new checkpoint's oracle goldens put
in place): standard library only.

  /usr/bin/python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'
"""
import json
import os
import shutil
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "oracle"))

import merge_toy_goldens  # noqa: E402


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if isinstance(data, (bytes, bytearray)):
            f.write(data.decode())
        else:
            json.dump(data, f, indent=1)


class MergeToyGoldens(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.toy_eval, self.decoding, self.out = (os.path.join(d, x) for x in ("toy-eval", "decoding", "out"))
        _write(os.path.join(self.toy_eval, "en-single-01.wav"), b"RIFF")
        _write(os.path.join(self.toy_eval, "references.json"), [{"file": "en-single-01.wav", "hyp": "old"}])
        _write(os.path.join(self.decoding, "decoding.json"),
               {"greedy": [1, 2], "toy_greedy": [3], "toy_gone": 1})
        _write(os.path.join(self.decoding, "toy_alignment_matrix.npy"), b"old")
        _write(os.path.join(self.out, "references.json"), [{"file": "en-single-01.wav", "hyp": "new"}])
        _write(os.path.join(self.out, "g", "decoding", "decoding.json"),
               {"greedy": [9, 9], "toy_greedy": [4], "toy_words": [5]})
        _write(os.path.join(self.out, "g", "decoding", "toy_alignment_matrix.npy"), b"new")

    def tearDown(self):
        self.tmp.cleanup()

    def merge(self):
        return merge_toy_goldens.merge(self.out, self.toy_eval, self.decoding, log=lambda *_: None)

    def test_only_the_toy_keys_are_replaced(self):
        self.assertEqual(self.merge(), ["toy_greedy", "toy_words"])
        with open(os.path.join(self.decoding, "decoding.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"greedy": [1, 2], "toy_greedy": [4], "toy_words": [5]})
        with open(os.path.join(self.decoding, "toy_alignment_matrix.npy")) as f:
            self.assertEqual(f.read(), "new")
        with open(os.path.join(self.toy_eval, "references.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)[0]["hyp"], "new")

    def test_goldens_tgz_when_the_files_did_not_come_back_loose(self):
        """run_all.sh without GOLDEN_DIR under $OUT leaves only goldens.tgz (./decoding/...)."""
        with tarfile.open(os.path.join(self.out, "goldens.tgz"), "w:gz") as tar:
            tar.add(os.path.join(self.out, "g"), arcname=".")
        shutil.rmtree(os.path.join(self.out, "g"))
        self.assertEqual(self.merge(), ["toy_greedy", "toy_words"])
        with open(os.path.join(self.decoding, "toy_alignment_matrix.npy")) as f:
            self.assertEqual(f.read(), "new")

    def test_bad_outputs_are_clear_errors_and_change_nothing(self):
        _write(os.path.join(self.out, "g", "decoding", "decoding.json"), {"toy": {"error": "OOM"}})
        with self.assertRaisesRegex(ValueError, "toy part failed: OOM"):
            self.merge()
        _write(os.path.join(self.out, "references.json"), [{"file": "fr-single-99.wav"}])
        with self.assertRaisesRegex(ValueError, "does not hold"):
            self.merge()
        os.remove(os.path.join(self.out, "references.json"))
        with self.assertRaisesRegex(FileNotFoundError, "toy_eval.py"):
            self.merge()
        with open(os.path.join(self.decoding, "decoding.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["toy_greedy"], [3])
        with open(os.path.join(self.toy_eval, "references.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)[0]["hyp"], "old")


if __name__ == "__main__":
    unittest.main()
