"""hark_eval.py's long-form tools without espeak-ng or hark: more recordings
(--longform-repeat), recordings cut at their pauses (--longform-cut), where the errors
are (place_errors), wer.align, and the fresh synthesis workers that make the audio
reproducible. Run: python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'"""
import importlib.util
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The modules under test need numpy (Debian's /usr/bin/python3 has it); without it, as the
# other toy-model tests do, these skip.
HAVE_NUMPY = importlib.util.find_spec("numpy") is not None
if HAVE_NUMPY:
    import numpy as np  # noqa: E402

    import evalsets  # noqa: E402
    import hark_eval as H  # noqa: E402
    import layout  # noqa: E402
    import train  # noqa: E402
import wer as W  # noqa: E402  (no numpy needed)
NEEDS_NUMPY = unittest.skipUnless(HAVE_NUMPY, "numpy missing (use Debian's /usr/bin/python3)")


class FakeHeldOut:
    """What evalsets.longform reads of a HeldOut: a clip table, audio, word timings."""

    def __init__(self, langs=("en", "de"), n=30):
        rng = random.Random(3)
        self.table, self.audio, self.words = layout.ClipTable(), [], []
        for lang in langs:
            for i in range(n):
                dur = rng.uniform(1.5, 5.0)
                self.table.add(lang, dur, f"{lang} sentence number {i} here.", [1, 2, 3])
                self.audio.append((np.ones(int(dur * evalsets.RATE)) * 1000).astype(np.int16))
                self.words.append(None)


def long_item(utterances, gap=1.0, first=0.5):
    """A long-form item of utterances (text, seconds) with `gap` s pauses (a list: one each)."""
    gaps = gap if isinstance(gap, list) else [gap] * len(utterances)
    segs, t = [], first
    for (text, dur), g in zip(utterances, gaps):
        segs.append({"start": t, "end": t + dur, "text": text})
        t += dur + g
    pcm = np.arange(int((segs[-1]["end"] + 0.5) * evalsets.RATE), dtype=np.int64).astype(np.int16)
    return {"name": "en-long-0", "lang": "en", "kind": "long", "pcm": pcm, "segments": segs,
            "text": " ".join(s["text"] for s in segs), "words": None}


def _pid(_):
    return os.getpid()


@NEEDS_NUMPY
class LongformTools(unittest.TestCase):
    def test_repeat_keeps_the_first_round_and_adds_new_recordings(self):
        held = FakeHeldOut()
        plan = {"en": (60, 90), "de": (60,)}
        one = H.longform_items(held, 1, plan)
        three = H.longform_items(held, 3, plan)
        self.assertEqual([it["name"] for it in one], ["en-long-0", "en-long-1", "de-long-0"])
        self.assertEqual([it["name"] for it in three],
                         [f"en-long-{k}" for k in range(6)] + [f"de-long-{k}" for k in range(3)])
        by_name = {it["name"]: it for it in three}
        for it in one:  # the default set is the first round, sample for sample
            self.assertTrue(np.array_equal(it["pcm"], by_name[it["name"]]["pcm"]))
        self.assertNotEqual(by_name["en-long-0"]["text"], by_name["en-long-2"]["text"])  # same length, new draw
        self.assertAlmostEqual(len(by_name["en-long-2"]["pcm"]) / evalsets.RATE, 60, delta=6)

    def test_cut_at_pauses_keeps_every_utterance_whole_in_pieces_of_30_s(self):
        rng = random.Random(2)
        utts = [(f"utterance {i}", rng.uniform(1.0, 6.0)) for i in range(40)]
        item = long_item(utts, gap=[rng.uniform(0.3, 5.0) for _ in utts])
        pieces = H.cut_at_pauses(item)
        self.assertGreater(len(pieces), 4)
        self.assertEqual(" ".join(p["text"] for p in pieces), item["text"])
        for p in pieces:
            self.assertEqual(p["parent"], "en-long-0")
            self.assertLessEqual(len(p["pcm"]) / evalsets.RATE, H.CUT_MAX_S + 1e-6)
            for s in p["segments"]:  # inside the piece, not touching its ends
                self.assertGreater(s["start"], 0)
                self.assertLess(s["end"], len(p["pcm"]) / evalsets.RATE)
        # the pieces are the recording's own samples, in order, without gaps
        self.assertTrue(np.array_equal(np.concatenate([p["pcm"] for p in pieces]), item["pcm"][: sum(
            len(p["pcm"]) for p in pieces)]))

    def test_an_utterance_longer_than_a_piece_gets_its_own(self):
        item = long_item([("a b", 2.0), ("a very long one", 29.8), ("c d", 2.0)], gap=4.0)
        pieces = H.cut_at_pauses(item)
        self.assertEqual([p["text"] for p in pieces], ["a b", "a very long one", "c d"])
        self.assertLessEqual(len(pieces[1]["pcm"]) / evalsets.RATE, H.CUT_MAX_S)

    def test_place_errors_finds_window_edges_pauses_and_lost_utterances(self):
        item = long_item([("one two three", 3.0), ("four five six", 3.0), ("seven eight nine", 3.0),
                          ("ten eleven twelve", 3.0)], gap=[1.0, 5.0, 1.0, 1.0], first=0.0)
        # utterances at 0-3, 4-7, 12-15, 16-19 (words spread by characters: "eight" 13.07-14.14 s);
        # windows start at 0 and 12.5 (inside utterance 3, after the 5 s pause)
        hyp = "one two three four five six seven eight xx yy zz nine ten eleven twelve"
        p = H.place_errors(item, hyp, [0.0, 12.5])
        self.assertEqual((p["errors"], p["words"], p["dropped_utterances"]), (3, 12, 0))
        self.assertEqual(p["insertion_runs"], [("xx yy zz", 13.07)])  # after "eight"
        self.assertEqual(p["edge"], [3, 2])  # "seven" and "eight" lie within EDGE_S of 12.5
        self.assertEqual(p["not_edge"], [0, 10])
        self.assertEqual(p["after_pause"], [3, 3])
        self.assertEqual(p["later_windows"], [3, 5])  # "eight" onwards start after 12.5
        self.assertEqual(p["first_window"], [0, 7])
        p = H.place_errors(item, "one two three seven eight nine ten eleven twelve", [0.0])
        self.assertEqual((p["errors"], p["dropped_utterances"]), (3, 1))
        self.assertEqual(p["edge"], [0, 0])  # no window start after 0
        self.assertEqual(p["first_window"], [3, 12])

    def test_reference_words_follow_espeaks_times_when_there_are_any(self):
        item = long_item([("Hello, world-wide!", 2.0)], first=1.0)
        self.assertEqual([w for w, *_ in H.reference_words(item)], ["hello", "world", "wide"])
        item["words"] = [{"word": "Hello,", "start": 1.1, "end": 1.5}, {"word": "world-wide!", "start": 1.6, "end": 2.9}]
        self.assertEqual(H.reference_words(item), [("hello", 1.1, 1.5, 0), ("world", 1.6, 2.9, 0), ("wide", 1.6, 2.9, 0)])


@NEEDS_NUMPY
class Align(unittest.TestCase):
    def test_script_has_the_edit_distances_errors_and_covers_both_sides(self):
        rng = random.Random(4)
        for _ in range(200):
            ref = [rng.choice("abcd") for _ in range(rng.randint(0, 9))]
            hyp = [rng.choice("abcd") for _ in range(rng.randint(0, 9))]
            ops = W.align(ref, hyp)
            self.assertEqual(sum(op != "ok" for op, _, _ in ops), W.edit_distance(ref, hyp))
            self.assertEqual([i for _, i, _ in ops if i is not None], list(range(len(ref))))
            self.assertEqual([j for _, _, j in ops if j is not None], list(range(len(hyp))))
            for op, i, j in ops:
                if op == "ok":
                    self.assertEqual(ref[i], hyp[j])


@NEEDS_NUMPY
class NumbersWindows(unittest.TestCase):
    def test_one_template_sentence_a_window_named_and_kept_apart(self):
        seen = {}

        def fake_clips(args, log, texts):
            seen.update(texts)
            return FakeHeldOut(langs=tuple(texts), n=len(next(iter(texts.values()))))

        args = type("Args", (), {"numbers": 6, "seed": 2})()
        real, H.held_out_clips = H.held_out_clips, fake_clips
        try:
            items, _ = H.numbers_items(args, print, ["en", "de"])
        finally:
            H.held_out_clips = real
        import textgen
        self.assertEqual(seen["en"], textgen.sentences("en", H.NUMBERS_SEED + 2, 6))
        self.assertEqual(sorted(it["name"] for it in items if it["lang"] == "de"), [f"num-de-{i:02d}" for i in range(6)])
        self.assertEqual({it["kind"] for it in items}, {"numbers"})
        self.assertEqual({len(it["plan"]["placements"]) for it in items}, {1})
        import by_voice
        self.assertNotIn("numbers", by_voice.SHORT_KINDS)  # the short-window figures leave them out


class WordTiming(unittest.TestCase):
    """wer.word_time_errors, which hark_eval.py's --word-timing and evaluate_full.py share."""

    def test_matched_words_give_their_errors_and_the_rest_none(self):
        ref = [{"word": "We", "start": 0.10, "end": 0.30, "exact": True},
               {"word": "were", "start": 0.30, "end": 0.50, "exact": True},
               {"word": "surrounded,", "start": 0.50, "end": 1.10, "exact": False},
               {"word": "by", "start": 1.10, "end": 1.30, "exact": True},
               {"word": "darkness.", "start": 1.30, "end": 2.00, "exact": True}]
        hyp = [{"word": " We", "start": 0.0, "end": 0.35},
               {"word": " where", "start": 0.35, "end": 0.5},    # misheard: no pair
               {"word": " surrounded", "start": 0.5, "end": 1.0},  # interpolated reference: no pair
               {"word": " by", "start": 1.2, "end": 1.3},
               {"word": ".", "start": 1.3, "end": 1.3},           # punctuation alone: no word
               {"word": " darkness", "start": 1.3, "end": 2.4}]
        errs = W.word_time_errors(ref, hyp)
        self.assertEqual(len(errs), 3)
        for (s, e), (ws, we) in zip(errs, [(0.1, 0.05), (0.1, 0.0), (0.0, 0.4)]):
            self.assertAlmostEqual(s, ws)
            self.assertAlmostEqual(e, we)

    def test_summary_of_the_pairs(self):
        summary = W.word_time_summary([(0.1, 0.05), (0.3, 0.0), (0.0, 0.4)], 2)
        self.assertEqual(summary, {"matched_words": 3, "windows": 2, "mean_start_error_s": 0.1333,
                                   "mean_end_error_s": 0.15, "share_start_within_0.2s": 0.6667})
        self.assertEqual(W.word_time_summary([], 5), {"matched_words": 0, "windows": 5})

    def test_nothing_heard_is_no_pair(self):
        self.assertEqual(W.word_time_errors([{"word": "yes", "start": 0, "end": 1}], []), [])


@NEEDS_NUMPY
class FirstSpeechWindows(unittest.TestCase):
    def test_the_first_n_speech_windows_of_each_language_in_order(self):
        short = [{"name": "s", "kind": "silence", "lang": None}] + [
            {"name": f"{lang}-{k}", "kind": "single" if k % 2 else "multi", "lang": lang}
            for k in range(4) for lang in ("en", "de")]
        chosen, taken = H.first_speech_windows(short, 3)
        self.assertEqual([it["name"] for it in chosen], ["en-0", "de-0", "en-1", "de-1", "en-2", "de-2"])
        self.assertEqual(taken, {"en": 3, "de": 3})
        self.assertEqual(H.first_speech_windows(short, 0), ([], {}))


@NEEDS_NUMPY
class HypothesisRecords(unittest.TestCase):
    def test_short_windows_list_their_utterances_and_voices(self):
        held = type("Held", (), {})()
        held.table = type("Table", (), {"text": ["One.", "Two.", "Three."]})()
        held.voices = ["en", "en-029+norbert", "en-us+m4"]
        window = {"name": "en-multi-03", "lang": "en", "kind": "multi", "text": "Three. One.",
                  "plan": {"placements": [(2, 0.4), (0, 3.1)]}}
        self.assertEqual(H.hypothesis_record(window, "three one", held),
                         {"reference": "Three. One.", "hark": "three one", "lang": "en", "kind": "multi",
                          "utterances": [{"text": "Three.", "voice": "en-us+m4"}, {"text": "One.", "voice": "en"}]})
        self.assertEqual(H.hypothesis_record({"name": "en-long-0", "text": "x"}, "y", held),
                         {"reference": "x", "hark": "y"})


@NEEDS_NUMPY
class FreshWorkers(unittest.TestCase):
    def test_every_task_gets_a_new_process(self):
        pool = train.start_pool(2, fresh_workers=True)
        try:
            pids = pool.map(_pid, range(4), chunksize=1)
        finally:
            pool.terminate()
        self.assertEqual(len(set(pids)), 4)


if __name__ == "__main__":
    unittest.main()
