"""synth.py's voice shapes made as espeak-ng variant files (SHAPED_VARIANTS): their text,
the plan's share, never on held-out clips, and (where espeak-ng is unpacked: `.
scripts/toy-model/espeak-env.sh`) that espeak renders a lowered F2 as the held-out
`norbert` variant does."""
import importlib.util
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
NEEDS_NUMPY = unittest.skipIf(importlib.util.find_spec("numpy") is None, "numpy missing (synth.py imports it)")


@NEEDS_NUMPY
class ShapedVariants(unittest.TestCase):
    def setUp(self):
        import synth
        self.S = synth

    def test_variant_files_are_fixed_and_in_range(self):
        S = self.S
        self.assertEqual(len(set(S.SHAPED_VARIANTS)), len(S.SHAPED_VARIANTS))
        self.assertFalse(set(S.SHAPED_VARIANTS) & set(S.ALL_VARIANTS))
        seen_f2 = []
        for name in S.SHAPED_VARIANTS:
            text = S.shaped_variant_text(name)
            self.assertEqual(text, S.shaped_variant_text(name))
            lines = text.splitlines()
            self.assertEqual(lines[:2], ["language variant", f"name {name}"])
            for k in (1, 2, 3):
                freq, strength, width = map(int, next(l for l in lines if l.startswith(f"formant {k} ")).split()[2:])
                lo, hi = S.SHAPED_FORMANT_PCT[k]
                self.assertTrue(lo <= freq <= hi, (name, k, freq))
                lo, hi = S.SHAPED_STRENGTH_PCT[k]
                self.assertTrue(lo <= strength <= hi, (name, k, strength))
                self.assertEqual(width, 100)
                if k == 2:
                    seen_f2.append(freq)
            tone = list(map(int, next(l for l in lines if l.startswith("tone ")).split()[1:]))
            self.assertEqual(tone[0::2], [600, 1200, 4000])
        self.assertLess(min(seen_f2), 72)  # some as low as the held-out norbert's 75 %
        self.assertGreater(max(seen_f2), 115)

    def test_install_writes_every_file(self):
        with tempfile.TemporaryDirectory() as d:
            folder = os.path.join(d, "espeak-ng-data", "voices", "!v")
            os.makedirs(folder)
            self.assertEqual(self.S.install_shaped_variants(d), folder)
            self.assertEqual(sorted(os.listdir(folder)), sorted(self.S.SHAPED_VARIANTS))
            # more voice files than espeak-ng lists: a clear error, not its warning on every start
            lang = os.path.join(d, "espeak-ng-data", "lang")
            os.makedirs(lang)
            for i in range(self.S.ESPEAK_MAX_VOICES - len(self.S.SHAPED_VARIANTS) + 1):
                open(os.path.join(lang, f"x{i}"), "w").close()
            with self.assertRaisesRegex(RuntimeError, "over the 349 it lists"):
                self.S.install_shaped_variants(d)
            with open(os.path.join(folder, self.S.SHAPED_VARIANTS[3]), encoding="utf-8") as f:
                self.assertEqual(f.read(), self.S.shaped_variant_text(self.S.SHAPED_VARIANTS[3]))
            with self.assertRaisesRegex(FileNotFoundError, "variant folder"):
                self.S.install_shaped_variants(os.path.join(d, "nothing"))

    def test_plan_share_never_held_out_and_nothing_else_changes(self):
        S = self.S
        texts = {lang: [f"{lang} {i}." for i in range(500)] for lang in ("en", "de", "fr", "es")}
        shaped = lambda meta: sum("+hark-shape-" in m["voice"] for m in meta) / len(meta)  # noqa: E731
        _, default = S.plan_jobs(texts, 1, held_out=False)
        self.assertAlmostEqual(shaped(default), S.SHAPED_SHARE, delta=0.04)
        jobs_off, off = S.plan_jobs(texts, 1, held_out=False, shaped_share=0.0)
        self.assertEqual(shaped(off), 0.0)
        # only the variant of the chosen clips changes: the accent, speed, pitch, effects, seeds stay
        for a, b in zip(default, off):
            self.assertEqual(a["voice"].split("+")[0], b["voice"].split("+")[0])
            self.assertEqual({k: v for k, v in a.items() if k != "voice"}, {k: v for k, v in b.items() if k != "voice"})
        self.assertEqual([item[7] for job in S.plan_jobs(texts, 1, held_out=False)[0] for item in job],
                         [item[7] for job in jobs_off for item in job])
        for share in (None, 1.0):
            _, held = S.plan_jobs(texts, 1, held_out=True, shaped_share=share)
            self.assertEqual(shaped(held), 0.0)
            _, clean = S.plan_jobs(texts, 1, held_out=False, effect_shares={}, shaped_share=share)
            self.assertEqual(shaped(clean), 0.0)
        _, everyone = S.plan_jobs(texts, 1, held_out=False, shaped_share=1.0)
        self.assertEqual(shaped(everyone), 1.0)

    def test_train_option(self):
        import contextlib
        import io
        import train
        self.assertEqual(train.parse_args(["--out", "/tmp/x", "--shaped-voice-share", "0"]).shaped_voice_share, 0.0)
        self.assertIsNone(train.parse_args(["--out", "/tmp/x"]).shaped_voice_share)  # main() fills in SHAPED_SHARE
        for bad in ("1.5", "-0.1"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                train.parse_args(["--out", "/tmp/x", "--shaped-voice-share", bad])

    def test_install_needs_espeak_data(self):
        saved = os.environ.pop("ESPEAK_DATA", None)
        try:
            with self.assertRaisesRegex(RuntimeError, "espeak-env.sh"):
                self.S.install_shaped_variants()
        finally:
            if saved is not None:
                os.environ["ESPEAK_DATA"] = saved

    @unittest.skipUnless(os.environ.get("ESPEAK_DATA") and os.environ.get("ESPEAK_BIN"),
                         "espeak-ng not unpacked here (. scripts/toy-model/espeak-env.sh)")
    def test_espeak_renders_a_lowered_second_formant(self):
        """`heed` spoken with the shape of lowest F2: energy moves from espeak's F2 region
        (2.1-2.4 kHz) into the 1.5-1.85 kHz valley, as with the held-out norbert."""
        import numpy as np
        S = self.S
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(os.environ["ESPEAK_DATA"], "espeak-ng-data"), os.path.join(d, "espeak-ng-data"))
            S.install_shaped_variants(d)
            low = min(S.SHAPED_VARIANTS, key=lambda n: int(S.shaped_variant_text(n).split("formant 2 ")[1].split()[0]))
            saved = os.environ["ESPEAK_DATA"]
            os.environ["ESPEAK_DATA"] = d
            try:
                levels = {}
                for voice in ("en", "en+norbert", "en+" + low):
                    x, _ = S.trim(S._synth_program(voice, 80, 50, 50, "heed")[0])  # the program reads the copy
                    x = x.astype(np.float32)
                    mid = x[len(x) // 3: 2 * len(x) // 3]
                    p = np.abs(np.fft.rfft(mid * np.hanning(len(mid)))) ** 2
                    f = np.fft.rfftfreq(len(mid), 1.0 / S.ESPEAK_RATE)
                    band = lambda lo, hi: 10 * np.log10(p[(f >= lo) & (f < hi)].max())  # noqa: E731
                    levels[voice] = (band(1500, 1850) - band(200, 500), band(2100, 2400) - band(200, 500))
            finally:
                os.environ["ESPEAK_DATA"] = saved
        plain, norbert, shaped = levels["en"], levels["en+norbert"], levels["en+" + low]
        self.assertGreater(norbert[0], plain[0] + 15)  # what the held-out voice does
        self.assertGreater(shaped[0], plain[0] + 15, levels)
        self.assertLess(shaped[1], plain[1] - 10, levels)


if __name__ == "__main__":
    unittest.main()
