"""by_voice.py: errors counted to utterances and tallied per voice (standard library only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class UtteranceErrors(unittest.TestCase):
    def test_errors_go_to_the_utterance_they_follow(self):
        import by_voice
        import wer
        utts = ["The cat sat.", "On a mat, today."]
        cases = {
            "the cat sad on mat today": [1, 1],  # a substitution in each
            "well the cat sat on a mat today": [1, 0],  # an insertion before any word: the first
            "the cat sat on a mat today indeed": [0, 1],  # an insertion at the end: the last
            "": [3, 4],
            "the cat sat on a mat today": [0, 0],
        }
        for hyp, want in cases.items():
            got = by_voice.utterance_errors(utts, hyp)
            self.assertEqual([e for e, _ in got], want, hyp)
            self.assertEqual([n for _, n in got], [3, 4])
            self.assertEqual(sum(want), wer.edit_distance(wer.normalize(" ".join(utts)), wer.normalize(hyp)))
        self.assertEqual(by_voice.utterance_errors([], "anything"), [])

    def test_tally_per_variant_accent_and_pair(self):
        import by_voice
        records = {
            "en-multi-00": {"reference": "The cat sat. On a mat.", "hark": "the cat sad on a mat", "lang": "en",
                            "kind": "multi", "utterances": [{"text": "The cat sat.", "voice": "en-029+norbert"},
                                                            {"text": "On a mat.", "voice": "en"}]},
            "en-single-00": {"reference": "Hello there.", "hark": "hello", "lang": "en", "kind": "single",
                             "utterances": [{"text": "Hello there.", "voice": "en-us+norbert"}]},
            "de-single-00": {"reference": "Hallo.", "hark": "", "lang": "de", "kind": "single",
                             "utterances": [{"text": "Hallo.", "voice": "de+m4"}]},
            "silence-00": {"reference": "", "hark": "", "lang": None, "kind": "silence", "utterances": []},
            "en-long-0": {"reference": "Hello.", "hark": "", "lang": "en", "kind": "long",  # not a short window
                          "utterances": [{"text": "Hello.", "voice": "en-us+norbert"}]},
            "en-long-0-cut-00": {"reference": "x", "hark": "y"},
        }
        table, windows = by_voice.tally(records, "en")
        self.assertEqual(sorted(windows), [(1, 2), (1, 6)])  # (errors, words) of each of the two windows
        self.assertEqual(dict(table["variant"]), {"norbert": [2, 5], "(plain)": [0, 3]})
        self.assertEqual(dict(table["accent"]), {"en-029": [1, 3], "en": [0, 3], "en-us": [1, 2]})
        self.assertEqual(table["pair"]["en-us+norbert"], [1, 2])
        self.assertEqual(by_voice.tally(records, "fr")[1], [])

    def test_window_interval_holds_the_rate_and_widens_with_uneven_windows(self):
        import by_voice
        even = by_voice.window_interval([(1, 10)] * 40)
        self.assertEqual(even, (10.0, 10.0))  # every window alike: no spread
        uneven = by_voice.window_interval([(4, 10), (0, 10), (0, 10), (0, 10)] * 10)
        self.assertLess(uneven[0], 10.0)
        self.assertGreater(uneven[1], 10.0)
        self.assertEqual(by_voice.window_interval([(4, 10), (0, 10), (0, 10), (0, 10)] * 10), uneven)  # seeded

if __name__ == "__main__":
    unittest.main()
