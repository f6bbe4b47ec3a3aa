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
                runstate.read_slice(cut, "en", 3, 3)  # lines 8, 9, 0, 1 are in it; 3 is not

    def test_a_state_inside_its_slice_reads_on_from_there(self):
        """A slice cut for two runs: the second run's state lies inside it (wrapping too),
        and reads the rest of the slice, the same lines as from the full corpus."""
        with tempfile.TemporaryDirectory() as d:
            full, cut = os.path.join(d, "full"), os.path.join(d, "cut")
            os.makedirs(full)
            _corpus(full, "en", [f"Sentence {i}." for i in range(10)])
            runstate.cut_slices(full, {"en": 6}, 8, cut)  # lines 6..9, 0..3
            self.assertEqual(runstate.read_slice(cut, "en", 9, 3), runstate.read_slice(full, "en", 9, 3))
            self.assertEqual(runstate.read_slice(cut, "en", 1, 3), runstate.read_slice(full, "en", 1, 3))
            self.assertEqual([n for n, _ in runstate.read_slice(cut, "en", 2, 5)], [2, 3])  # what is left
            for outside in (4, 5):
                with self.assertRaisesRegex(ValueError, "holds 8 lines, but the state is at"):
                    runstate.read_slice(cut, "en", outside, 3)

    def test_changed_corpus_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            _corpus(d, "de", ["Eins.", "Zwei."])
            state = runstate.new_state({}, runstate.corpus_info(d, ["de"]), seed=1)
            _corpus(d, "de", ["Eins.", "Drei."])
            with self.assertRaisesRegex(ValueError, "corpus train-de changed"):
                runstate.check_corpus(state, runstate.corpus_info(d, ["de"]))
            with self.assertRaisesRegex(FileNotFoundError, "build.py"):
                runstate.corpus_info(d, ["fr"])


    def test_rebase_keeps_the_state_and_restarts_changed_languages(self):
        with tempfile.TemporaryDirectory() as d:
            old, new, parts, out = (os.path.join(d, x) for x in ("old", "new", "parts", "out"))
            for folder in (old, new):
                os.makedirs(folder)
                _corpus(folder, "de", ["Eins.", "Zwei.", "Drei."])
            _corpus(old, "en", ["One.", "Two.", "Three."])
            _corpus(new, "en", ["Two.", "A sneeze.", "One.", "Three."])
            state = runstate.new_state({"d_model": 8}, runstate.corpus_info(old, ["en", "de"]), seed=3)
            state.update(step=500, position={"en": 2, "de": 1}, wraps={"en": 4, "de": 2})
            src = os.path.join(d, "src")
            os.makedirs(src)
            runstate.save_json(os.path.join(src, "state.json"), state)
            with open(os.path.join(src, "model.safetensors"), "wb") as f:
                f.write(b"weights")
            with open(os.path.join(src, "adam-moments.pt"), "wb") as f:
                f.write(b"moments")
            runstate.pack_state(src, parts)
            got = runstate.rebase(parts, new, out, log=lambda *_: None)
            self.assertEqual((got["step"], got["position"], got["wraps"]), (500, {"en": 0, "de": 1}, {"en": 0, "de": 2}))
            self.assertEqual(got["corpus"], runstate.corpus_info(new, ["en", "de"]))
            self.assertEqual(got["rebases"][0]["languages"]["en"]["from_position"], 2)
            back = os.path.join(d, "back")
            self.assertEqual(runstate.unpack_state(out, back), got)
            runstate.check_corpus(got, runstate.corpus_info(new, ["en", "de"]))
            with open(os.path.join(back, "adam-moments.pt"), "rb") as f:
                self.assertEqual(f.read(), b"moments")
            with self.assertRaisesRegex(ValueError, "nothing to rebase"):
                runstate.rebase(out, new, os.path.join(d, "again"), log=lambda *_: None)


def _checkpoint(d, d_model=8, heads=2, enc=2, dec=1, vocab=16, card=None):
    """A tiny fake shipped checkpoint: config.json, fp16 model.safetensors (written with the
    standard library in the safetensors layout), generation_config.json, MODEL_CARD.md."""
    import json
    import struct
    os.makedirs(d, exist_ok=True)
    cfg = {"model_type": "whisper", "d_model": d_model, "encoder_attention_heads": heads,
           "decoder_attention_heads": heads, "encoder_layers": enc, "decoder_layers": dec, "vocab_size": vocab}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    shapes = {"model.decoder.embed_tokens.weight": [vocab, d_model], "model.encoder.conv1.weight": [d_model, 80, 3]}
    for i in range(enc):
        shapes[f"model.encoder.layers.{i}.fc1.weight"] = [4 * d_model, d_model]
    for i in range(dec):
        shapes[f"model.decoder.layers.{i}.fc1.weight"] = [4 * d_model, d_model]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in sorted(shapes.items()):
        n = 2 * shape[0] * shape[1] * (shape[2] if len(shape) > 2 else 1)
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    head = json.dumps(header).encode()
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + random.Random(5).randbytes(offset))
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"alignment_heads": [[0, 1]]}, f)
    if card is not None:
        with open(os.path.join(d, "MODEL_CARD.md"), "w") as f:
            f.write(card.replace("SHA", runstate.sha256_file(os.path.join(d, "model.safetensors"))))
    return d


def _results(d, run, step, windows, seed=1):
    import json
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"open-run{run}-results.json"), "w") as f:
        json.dump({"args": {"seed": seed}, "state": {"step": step, "windows_seen": windows,
                                                     "position": {"en": 5, "de": 1, "fr": 1, "es": 1},
                                                     "wraps": {"en": 1, "de": 3, "fr": 3, "es": 3}}}, f)
    return d


def _full_corpus(d):
    os.makedirs(d, exist_ok=True)
    for lang in runstate.LANGS:
        _corpus(d, lang, [f"{lang} sentence {i}." for i in range(12)])
        with open(os.path.join(d, f"eval-{lang}.txt"), "w") as f:
            f.write(f"{lang} held out.\n")
    return d


CARD = "# toy\n\nsha256 of `model.safetensors`: `SHA`.\n\nRun 9 (`results/open-run9-results.json`), logs " \
       "in `results/open-run*-*`; see `open-run9-results.json` and `open-run9-hark-eval.json`.\n"
QUIET = lambda *a: None  # noqa: E731


class FromModel(unittest.TestCase):
    """runstate.from_model: a resumable state from a shipped checkpoint when the parts are lost."""

    def test_state_from_a_checkpoint_round_trips_and_is_resumed(self):
        import argparse
        import train
        with tempfile.TemporaryDirectory() as d:
            model = _checkpoint(os.path.join(d, "model"), card=CARD)
            results = _results(os.path.join(d, "results"), 9, 18114, 2318592, seed=1)
            full = _full_corpus(os.path.join(d, "full"))
            parts_dir = os.path.join(d, "parts")
            made = runstate.from_model(model, parts_dir, results_dir=results, part_bytes=16384, log=QUIET)
            self.assertTrue(os.path.exists(os.path.join(parts_dir, "state.tar.sha256")))
            self.assertGreaterEqual(len([n for n in os.listdir(parts_dir) if ".part-" in n]), 2)
            back = os.path.join(d, "back")
            state = runstate.unpack_state(parts_dir, back)
            self.assertEqual(state, made)
            for name in runstate.MODEL_FILES:  # the weights byte for byte, in the shipped layout
                with open(os.path.join(model, name), "rb") as a, open(os.path.join(back, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)
            self.assertFalse(os.path.exists(os.path.join(back, "adam-moments.pt")))  # fresh moments on resume
            self.assertFalse(os.path.exists(os.path.join(back, "MODEL_CARD.md")))
            self.assertEqual(state["shape"], {"d_model": 8, "heads": 2, "enc_layers": 2, "dec_layers": 1})
            self.assertEqual((state["step"], state["windows_seen"], state["seed"]), (18114, 2318592, 1))
            self.assertEqual(state["position"], {lang: 0 for lang in runstate.LANGS})  # unknown: re-read
            self.assertEqual(state["wraps"]["de"], 3)
            self.assertEqual(state["corpus"], {})  # no --corpus: the first resumed run records it
            self.assertIn("open-run9-results.json", state["origin"]["history"])
            side = runstate.load_json(os.path.join(back, runstate.SIDECAR))
            self.assertEqual(side["model_sha256"], runstate.sha256_file(os.path.join(model, "model.safetensors")))
            self.assertEqual(side["step"], 18114)
            # what remake.sh does next: slice from the state's position, then train.py's resume
            cut = os.path.join(d, "cut")
            runstate.cut_slices(full, runstate.positions_of(parts_dir, runstate.LANGS), 5, cut)
            args = argparse.Namespace(resume=back, corpus=cut, d_model=256, heads=4, enc_layers=6, dec_layers=4,
                                      seed=42, clips_per_lang=8, eval_clips=4, template_share=train.TEMPLATE_SHARE)
            resumed = train.load_state(args)
            self.assertEqual((args.d_model, args.heads, args.enc_layers, args.dec_layers, args.seed), (8, 2, 2, 1, 1))
            self.assertEqual(resumed["corpus"], runstate.corpus_info(full, runstate.LANGS))
            texts, lines, eval_texts = train.plan_texts(args, resumed)
            self.assertEqual(lines["en"][:3], [0, 1, 2])
            self.assertEqual(texts["en"][0], "en sentence 0.")
            self.assertEqual(eval_texts["fr"], ["fr held out."])
            runstate.advance(resumed, {"en": lines["en"][:3]})
            self.assertEqual(resumed["position"]["en"], 3)

    def test_the_corpus_given_is_recorded_and_checked(self):
        import argparse
        import train
        with tempfile.TemporaryDirectory() as d:
            model = _checkpoint(os.path.join(d, "model"))
            full = _full_corpus(os.path.join(d, "full"))
            parts_dir = os.path.join(d, "parts")
            state = runstate.from_model(model, parts_dir, corpus_dir=full, results_dir=d, log=QUIET)
            self.assertEqual(state["corpus"], runstate.corpus_info(full, runstate.LANGS))
            self.assertEqual((state["step"], state["windows_seen"]), (0, 0))  # no card: defaults (full warm-up)
            self.assertEqual(state["origin"]["history"], "defaults")
            back = os.path.join(d, "back")
            runstate.unpack_state(parts_dir, back)
            _corpus(full, "de", ["Andere Sätze."])
            args = argparse.Namespace(resume=back, corpus=full, seed=1)
            with self.assertRaisesRegex(ValueError, "corpus train-de changed"):
                train.load_state(args)

    def test_the_sidecar_gives_step_and_positions_of_its_corpus(self):
        with tempfile.TemporaryDirectory() as d:
            model = _checkpoint(os.path.join(d, "model"), card=CARD)
            results = _results(os.path.join(d, "results"), 9, 18114, 2318592)
            full = _full_corpus(os.path.join(d, "full"))
            info = runstate.corpus_info(full, runstate.LANGS)
            trained = runstate.new_state({"d_model": 8}, info, seed=3)
            trained.update(step=21737, windows_seen=2782336, position={"en": 7, "de": 2, "fr": 11, "es": 4})
            trained["corpus"]["fr"] = {"lines": 12, "sha256": "0" * 64}  # fr was another build
            runstate.write_sidecar(model, trained)
            side = runstate.load_json(os.path.join(model, runstate.SIDECAR))
            self.assertLess(os.path.getsize(os.path.join(model, runstate.SIDECAR)), 4096)
            self.assertEqual(side["model_sha256"], runstate.sha256_file(os.path.join(model, "model.safetensors")))
            state = runstate.from_model(model, os.path.join(d, "p1"), corpus_dir=full, results_dir=results,
                                        log=QUIET)
            self.assertEqual((state["step"], state["windows_seen"], state["seed"]), (21737, 2782336, 3))
            self.assertEqual(state["position"], {"en": 7, "de": 2, "fr": 0, "es": 4})
            self.assertEqual(state["origin"]["history"], runstate.SIDECAR)
            self.assertEqual(runstate.positions_of(os.path.join(d, "p1"), runstate.LANGS), state["position"])
            # without --corpus the sidecar's corpus is recorded (train.py checks it on resume)
            state = runstate.from_model(model, os.path.join(d, "p2"), results_dir=results, log=QUIET)
            self.assertEqual(state["position"]["fr"], 11)
            self.assertEqual(state["corpus"]["fr"]["sha256"], "0" * 64)
            # a sidecar of other weights is ignored: the card and its results file count
            with open(os.path.join(model, "model.safetensors"), "ab") as f:
                f.write(b"\0\0")
            with open(os.path.join(model, "MODEL_CARD.md"), "w") as f:
                f.write(CARD.replace("SHA", runstate.sha256_file(os.path.join(model, "model.safetensors"))))
            state = runstate.from_model(model, os.path.join(d, "p3"), corpus_dir=full, results_dir=results,
                                        log=QUIET)
            self.assertEqual((state["step"], state["position"]["en"]), (18114, 0))

    def test_a_card_of_other_weights_or_of_several_runs_gives_defaults(self):
        with tempfile.TemporaryDirectory() as d:
            results = _results(os.path.join(d, "results"), 9, 18114, 2318592)
            _results(results, 10, 19967, 2555776)
            model = _checkpoint(os.path.join(d, "m1"), card=CARD.replace("SHA", "ab" * 32))
            self.assertEqual(runstate.from_model(model, os.path.join(d, "p1"), results_dir=results, log=QUIET)["step"], 0)
            model = _checkpoint(os.path.join(d, "m2"), card=CARD + "Run 10: `results/open-run10-results.json`.\n")
            self.assertEqual(runstate.from_model(model, os.path.join(d, "p2"), results_dir=results, log=QUIET)["step"], 0)
            state = runstate.from_model(model, os.path.join(d, "p3"), results_dir=results, step=500, windows_seen=9,
                                        log=QUIET)
            self.assertEqual((state["step"], state["windows_seen"]), (500, 9))

    def test_checkpoints_the_trainer_cannot_resume_are_refused(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            model = _checkpoint(os.path.join(d, "m"))
            cfg = runstate.load_json(os.path.join(model, "config.json"))
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump(cfg | {"encoder_layers": 3}, f)
            with self.assertRaisesRegex(ValueError, "encoder layers"):
                runstate.from_model(model, os.path.join(d, "p"), results_dir=d, log=QUIET)
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump(cfg | {"decoder_attention_heads": 4}, f)
            with self.assertRaisesRegex(ValueError, "head counts differ"):
                runstate.from_model(model, os.path.join(d, "p"), results_dir=d, log=QUIET)
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump(cfg, f)
            with open(os.path.join(model, "model.safetensors"), "w") as f:
                f.write("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 46\n")
            with self.assertRaisesRegex(ValueError, "Git LFS pointer"):
                runstate.from_model(model, os.path.join(d, "p"), results_dir=d, log=QUIET)
            self.assertFalse(os.path.exists(os.path.join(d, "p", "state.tar.sha256")))

    def test_command_line(self):
        import contextlib
        import io
        with tempfile.TemporaryDirectory() as d:
            model = _checkpoint(os.path.join(d, "model"))
            full = _full_corpus(os.path.join(d, "full"))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = runstate.main(["runstate.py", "from-model", model, os.path.join(d, "p"), "--corpus", full,
                                    "--step", "1234", "--position", "en=11,fr=3"])
            self.assertEqual(rc, 0)
            self.assertIn('"step": 1234', out.getvalue())
            state = runstate.unpack_state(os.path.join(d, "p"), os.path.join(d, "b"))
            self.assertEqual((state["step"], state["position"]), (1234, {"en": 11, "de": 0, "fr": 3, "es": 0}))
            with self.assertRaisesRegex(ValueError, "the corpus has 12 lines"):
                runstate.from_model(model, os.path.join(d, "p"), full, position={"en": 12}, log=QUIET)

    def test_the_shipped_checkpoint_names_its_history(self):
        model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "hark-toy-speech")
        weights = os.path.join(model, "model.safetensors")
        if not os.path.exists(weights) or os.path.getsize(weights) < 2**20:
            self.skipTest("models/hark-toy-speech is not in this tree (slimmed) or is an LFS pointer")
        shape = runstate.shape_of_model(model)
        cfg = runstate.load_json(os.path.join(model, "config.json"))
        self.assertEqual(shape["d_model"], cfg["d_model"])
        history = runstate.shipped_history(model, runstate.sha256_file(weights), log=QUIET)
        self.assertIsNotNone(history, "models/hark-toy-speech: neither training-state.json nor a MODEL_CARD.md naming "
                                      "the weights' sha256 and one results/open-runN-results.json")
        self.assertGreater(history["step"], 0)


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
