"""Window plans and targets (layout.py) without torch: prompts, late first utterances,
long pauses. Run: python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'"""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layout  # noqa: E402
import tokens as T  # noqa: E402


def table_of(lang="en", n=40):
    table = layout.ClipTable()
    rng = random.Random(0)
    for i in range(n):
        table.add(lang, rng.uniform(1.0, 4.0), f"Sentence {i}.", [1000 + i, 1100 + i, 13])
    return table


class Layout(unittest.TestCase):
    def test_prompts_are_cut_to_whispers_length(self):
        table = layout.ClipTable()
        for i in range(10):
            table.add("de", 1.0 + i, "x", list(range(30)))
        rng = random.Random(1)
        lengths = [len(layout.draw_prompt(rng, table, "de", p_prompt=1.0)) for _ in range(300)]
        self.assertEqual(max(lengths), layout.MAX_PROMPT_TOKENS)
        self.assertGreater(min(lengths), 0)
        self.assertEqual(layout.draw_prompt(rng, table, "de", p_prompt=0.0), [])

    def test_late_first_utterance_gets_the_latest_allowed_first_timestamp(self):
        table, rng = table_of(), random.Random(2)
        for _ in range(50):
            plan = layout.plan_window(rng, table, "en", "multi", late_start=1.0)
            start = plan["placements"][0][1]
            self.assertGreaterEqual(start, layout.LATE_START_S[0])
            self.assertLess(start, layout.LATE_START_S[1])
            ids, _ = layout.targets(plan, table, timestamps=True)
            self.assertEqual(ids[3], T.timestamp_token(1.0))  # SOT lang TRANSCRIBE <|1.00|>
            if len(plan["placements"]) > 1:  # later segments keep their true times
                clip, second = plan["placements"][1]
                self.assertIn(T.timestamp_token(second), ids)

    def test_default_windows_start_early_with_short_pauses(self):
        table, rng = table_of(), random.Random(3)
        for _ in range(50):
            plan = layout.plan_window(rng, table, "en", "multi")
            self.assertLess(plan["placements"][0][1], layout.FIRST_START_MAX_S)
            for (a, sa), (_, sb) in zip(plan["placements"], plan["placements"][1:]):
                self.assertLessEqual(sb - (sa + table.duration[a]), 2.0 + 1e-9)
            ids, _ = layout.targets(plan, table, timestamps=True)
            self.assertEqual(ids[3], T.timestamp_token(plan["placements"][0][1]))

    def test_long_pauses_appear_when_asked(self):
        table, rng = table_of(), random.Random(4)
        gaps = []
        for _ in range(50):
            plan = layout.plan_window(rng, table, "en", "multi", long_gap=1.0)
            gaps += [sb - (sa + table.duration[a]) for (a, sa), (_, sb) in zip(plan["placements"], plan["placements"][1:])]
        self.assertTrue(gaps)
        self.assertTrue(all(layout.LONG_GAP_S[0] - 1e-9 <= g < layout.LONG_GAP_S[1] for g in gaps))


if __name__ == "__main__":
    unittest.main()
