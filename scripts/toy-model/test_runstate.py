"""Unit tests of runstate.py (state parts, corpus positions) and of the torch-free pieces
of synthesis planning. Standard library (+ numpy where present):

  /usr/bin/python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'
"""
import lzma
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runstate  # noqa: E402


def _corpus(d, lang, lines):
    with lzma.open(os.path.join(d, f"train-{lang}.txt.xz"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


class Parts(unittest.TestCase):
    def test_pack_and_unpack_round_trip_in_small_parts(self):
        with tempfile.TemporaryDirectory() as d:
            state_dir, out, back = (os.path.join(d, x) for x in ("state", "out", "back"))
            os.makedirs(state_dir)
            blob = random.Random(1).randbytes(70000)
            with open(os.path.join(state_dir, "model.safetensors"), "wb") as f:
                f.write(blob)
            runstate.save_json(os.path.join(state_dir, "state.json"), {"step": 7})
            parts = runstate.pack_state(state_dir, out, part_bytes=16384)
            self.assertGreaterEqual(len(parts), 5)
            self.assertTrue(all(os.path.getsize(p) <= 16384 for p in parts))
            self.assertEqual(runstate.unpack_state(out, back), {"step": 7})
            with open(os.path.join(back, "model.safetensors"), "rb") as f:
                self.assertEqual(f.read(), blob)

    def test_a_missing_or_damaged_part_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            state_dir, out = os.path.join(d, "state"), os.path.join(d, "out")
            os.makedirs(state_dir)
            with open(os.path.join(state_dir, "state.json"), "wb") as f:
                f.write(random.Random(2).randbytes(50000))
            parts = runstate.pack_state(state_dir, out, part_bytes=16384)
            os.remove(parts[1])
            with self.assertRaisesRegex(ValueError, r"\[state\].*sha256"):
                runstate.unpack_state(out, os.path.join(d, "back"))
            with self.assertRaisesRegex(FileNotFoundError, r"\[state\] no state.tar.part"):
                runstate.unpack_state(os.path.join(d, "empty"), os.path.join(d, "back2"))


class Positions(unittest.TestCase):
    def test_slices_wrap_and_positions_advance(self):
        with tempfile.TemporaryDirectory() as d:
            _corpus(d, "en", [f"Sentence {i}." for i in range(10)])
            info = runstate.corpus_info(d, ["en"])
            self.assertEqual(info["en"]["lines"], 10)
            state = runstate.new_state({"d_model": 8}, info, seed=1)
            got = runstate.read_slice(d, "en", 8, 4)
            self.assertEqual([n for n, _ in got], [8, 9, 0, 1])
            self.assertEqual(got[2][1], "Sentence 0.")
            state["position"]["en"] = 8
            runstate.advance(state, {"en": [8, 0, 9]})  # jobs finish out of order
            self.assertEqual((state["position"]["en"], state["wraps"]["en"]), (1, 1))
            runstate.advance(state, {"en": [1, 2, 3]})
            self.assertEqual((state["position"]["en"], state["wraps"]["en"]), (4, 1))

    def test_slices_stand_in_for_the_full_corpus(self):
        with tempfile.TemporaryDirectory() as d:
            full, cut = os.path.join(d, "full"), os.path.join(d, "cut")
            os.makedirs(full)
            _corpus(full, "en", [f"Sentence {i}." for i in range(10)])
            with open(os.path.join(full, "eval-en.txt"), "w") as f:
                f.write("Held out.\n")
            runstate.cut_slices(full, {"en": 8}, 4, cut)
            self.assertEqual(runstate.corpus_info(cut, ["en"]), runstate.corpus_info(full, ["en"]))
            self.assertEqual(runstate.read_slice(cut, "en", 8, 3), runstate.read_slice(full, "en", 8, 3))
            self.assertTrue(os.path.exists(os.path.join(cut, "eval-en.txt")))
            with self.assertRaisesRegex(ValueError, "slice starts at line 8"):
                runstate.read_slice(cut, "en", 0, 3)

    def test_changed_corpus_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            _corpus(d, "de", ["Eins.", "Zwei."])
            state = runstate.new_state({}, runstate.corpus_info(d, ["de"]), seed=1)
            _corpus(d, "de", ["Eins.", "Drei."])
            with self.assertRaisesRegex(ValueError, "corpus train-de changed"):
                runstate.check_corpus(state, runstate.corpus_info(d, ["de"]))
            with self.assertRaisesRegex(FileNotFoundError, "build.py"):
                runstate.corpus_info(d, ["fr"])


class Planning(unittest.TestCase):
    def setUp(self):
        import importlib.util
        if importlib.util.find_spec("numpy") is None:
            self.skipTest("numpy missing (use Debian's /usr/bin/python3)")

    def test_held_out_voices_never_in_training_plans(self):
        import synth
        texts = {lang: [f"{lang} {i}." for i in range(300)] for lang in ("en", "de", "fr", "es")}
        _, train = synth.plan_jobs(texts, 1, held_out=False)
        _, held = synth.plan_jobs(texts, 1, held_out=True, effect_shares={})
        variant = lambda v: v.split("+")[1] if "+" in v else ""  # noqa: E731
        self.assertFalse({variant(m["voice"]) for m in train} & set(synth.EVAL_VARIANTS))
        self.assertTrue({variant(m["voice"]) for m in held} <= set(synth.EVAL_VARIANTS))
        self.assertTrue(all(not m["effects"] for m in held))
        self.assertTrue(any(m["effects"] for m in train))
        self.assertGreater(len({m["voice"] for m in train}), 150)

    def test_word_times_follow_events(self):
        import numpy as np
        import synth
        audio = np.zeros(16000, np.float32)
        audio[1000:5000] = 0.5
        audio[8000:15000] = 0.5
        # events: (1-based character, length, ms) at 22 050 Hz before trimming 441 samples
        words = synth.word_times("Hi there", [(1, 2, 20 + 62), (4, 5, 20 + 500)], 441, audio)
        self.assertEqual(words, [[0.062, 0.312, 1], [0.5, 0.938, 1]])
        self.assertIsNone(synth.word_times("Hi there", [], 0, audio))
        # "on" has no event (espeak joined it): its start is interpolated by characters
        words = synth.word_times("Hi on there", [(1, 2, 0), (7, 5, 600)], 0, audio)
        self.assertEqual([w[2] for w in words], [1, 0, 1])
        self.assertAlmostEqual(words[1][0], 0.3, places=3)


if __name__ == "__main__":
    unittest.main()
