"""by_voice.py: errors counted to utterances."""
import importlib.util
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@unittest.skipIf(importlib.util.find_spec("numpy") is None, "numpy missing (by_voice imports the evaluation sets)")
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


if __name__ == "__main__":
    unittest.main()
