"""Unit tests of augment.py (numpy; Debian's /usr/bin/python3):

  /usr/bin/python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'
"""
import contextlib
import importlib.util
import io
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@unittest.skipIf(importlib.util.find_spec("numpy") is None, "numpy missing (use Debian's /usr/bin/python3)")
class Effects(unittest.TestCase):
    def setUp(self):
        import numpy as np
        import augment
        self.np, self.A = np, augment
        t = np.arange(augment.RATE * 2) / augment.RATE
        gate = (np.sin(2 * np.pi * 2 * t) > 0).astype(np.float32)
        self.x = (0.2 * np.sin(2 * np.pi * 1000 * t) + 0.1 * np.sin(2 * np.pi * 6000 * t)).astype(np.float32) * gate

    def band_energy(self, y, lo, hi):
        np = self.np
        spec = np.abs(np.fft.rfft(y)) ** 2
        f = np.fft.rfftfreq(len(y), 1.0 / self.A.RATE)
        return float(spec[(f >= lo) & (f < hi)].sum())

    def test_telephone_removes_the_high_band_and_keeps_length(self):
        y = self.A.telephone(self.x)
        self.assertEqual(len(y), len(self.x))
        self.assertLess(self.band_energy(y, 4000, 8000), 1e-3 * self.band_energy(self.x, 4000, 8000))
        self.assertGreater(self.band_energy(y, 900, 1100), 0.5 * self.band_energy(self.x, 900, 1100))

    def test_reverb_keeps_level_and_length(self):
        y = self.A.reverb(self.x, self.np.random.default_rng(1), rt60=0.5, wet=0.4)
        self.assertEqual(len(y), len(self.x))
        self.assertAlmostEqual(self.A.rms(y), self.A.rms(self.x), places=3)
        self.assertGreater(self.A.rms(y - self.x), 0.05 * self.A.rms(self.x))

    def test_align_removes_a_known_delay(self):
        np = self.np
        delayed = np.concatenate([np.zeros(321, np.float32), self.x])
        y, lag = self.A.align(self.x, delayed)
        self.assertEqual(lag, 321)
        self.assertLess(self.A.rms(y[: -400] - self.x[: -400]), 1e-6)

    def test_codecs_keep_timing_when_present(self):
        for fn in (self.A.opus_roundtrip, self.A.mp3_roundtrip):
            y = fn(self.x)
            if y is None:
                continue  # library not installed here
            self.assertEqual(len(y), len(self.x))
            snr = 10 * self.np.log10(self.A.rms(self.x) ** 2 / self.A.rms(self.x - y) ** 2)
            self.assertGreater(snr, 10.0, fn.__name__)  # misaligned output would be near 0 dB

    def test_noise_snr_and_colour(self):
        np = self.np
        rng = np.random.default_rng(3)
        y = self.A.add_noise(self.x, rng, snr_db=20.0)
        self.assertAlmostEqual(20 * np.log10(self.A.rms(self.x) / self.A.rms(y - self.x)), 20.0, delta=0.5)
        brown = self.A.colored_noise(32000, rng, 2)
        self.assertGreater(self.band_energy(brown, 20, 500), 10 * self.band_energy(brown, 4000, 8000))

    def test_draw_and_apply(self):
        effects = [tuple(self.A.draw_effects(random.Random(i))) for i in range(400)]
        self.assertGreater(effects.count(()), 200)  # most clips stay clean
        self.assertTrue(any("reverb" in e for e in effects) and any("telephone" in e for e in effects))
        y, used = self.A.apply(self.x, ["reverb", "telephone"], seed=5)
        self.assertEqual((len(y), used), (len(self.x), ["reverb", "telephone"]))
        y2, _ = self.A.apply(self.x, ["reverb", "telephone"], seed=5)
        self.assertTrue(self.np.array_equal(y, y2))
        with self.assertRaisesRegex(ValueError, r"\[augment\] unknown effect"):
            self.A.apply(self.x, ["chorus"], seed=1)


@unittest.skipIf(importlib.util.find_spec("numpy") is None, "numpy missing (use Debian's /usr/bin/python3)")
class VoiceShape(unittest.TestCase):
    """augment.vtlp: formants move by alpha, pitch, length and timing stay."""
    F0, FORMANTS = 100.0, ((600.0, 80.0), (1400.0, 100.0), (2600.0, 150.0))

    def setUp(self):
        import numpy as np
        import augment
        self.np, self.A = np, augment

    def vowel(self, seconds=1.5):
        """A steady vowel: harmonics of 100 Hz weighted by three formant resonances and
        the source's fall of ~6 dB per octave."""
        np = self.np
        t = np.arange(int(self.A.RATE * seconds)) / self.A.RATE
        x = np.zeros(len(t))
        for k in range(1, int(7900 / self.F0)):
            f = k * self.F0
            amp = (sum(1.0 / (1.0 + ((f - fc) / bw) ** 2) for fc, bw in self.FORMANTS) + 1e-3) * self.F0 / f
            x += amp * np.sin(2 * np.pi * f * t + 0.7 * k)
        return (0.3 * x / np.abs(x).max()).astype(np.float32)

    def harmonic_amps(self, y):
        """Amplitude at each harmonic of F0 (middle second, no edge effects)."""
        np = self.np
        mid = y[len(y) // 2 - self.A.RATE // 2: len(y) // 2 + self.A.RATE // 2]  # 1 s: 1 Hz bins
        spec = np.abs(np.fft.rfft(mid * np.hanning(len(mid))))
        return spec, spec[np.arange(1, int(7900 / self.F0)) * int(self.F0)]

    def centroid(self, y):
        np = self.np
        spec = np.abs(np.fft.rfft(y)) ** 2
        return float((spec * np.fft.rfftfreq(len(y), 1.0 / self.A.RATE)).sum() / spec.sum())

    def test_identity_at_alpha_one(self):
        x = self.vowel()
        y = self.A.vtlp(x, 1.0)
        self.assertEqual(len(y), len(x))
        self.assertLess(float(self.np.abs(y - x).max()), 1e-4 * float(self.np.abs(x).max()))
        noise = self.np.random.default_rng(4).standard_normal(12345).astype(self.np.float32)
        self.assertLess(self.A.rms(self.A.vtlp(noise, 1.0) - noise), 1e-4 * self.A.rms(noise))

    def test_length_kept_for_any_length(self):
        rng = self.np.random.default_rng(2)
        for n in (0, 3, 100, 511, 513, 16001, 40000):
            x = rng.standard_normal(n).astype(self.np.float32) * 0.1
            for alpha in (0.85, 1.15):
                y = self.A.vtlp(x, alpha, [3.0, -3.0, 0.0, 2.0, -6.0])
                self.assertEqual(len(y), n)
                self.assertTrue(self.np.all(self.np.isfinite(y)))

    def test_formants_and_centroid_move_with_alpha(self):
        x = self.vowel()
        c0 = self.centroid(x)
        _, amps = self.harmonic_amps(x)
        self.assertEqual(int(self.np.argmax(amps[:10])) + 1, 6)  # F1 at 600 Hz: the 6th harmonic
        for alpha in (0.85, 0.9, 1.1, 1.15):
            y = self.A.vtlp(x, alpha)
            c = self.centroid(y)
            if alpha < 1:
                self.assertLess(c, 0.97 * c0, alpha)
            else:
                self.assertGreater(c, 1.03 * c0, alpha)
            _, amps = self.harmonic_amps(y)
            f1 = (int(self.np.argmax(amps[:10])) + 1) * self.F0
            self.assertLessEqual(abs(f1 - 600 * alpha), self.F0 / 2 + 1, (alpha, f1))
            f2 = (int(self.np.argmax(amps[10:20])) + 11) * self.F0
            self.assertLessEqual(abs(f2 - 1400 * alpha), self.F0 + 1, (alpha, f2))

    def test_pitch_and_level_kept(self):
        x = self.vowel()
        for alpha in (0.85, 1.15):
            y = self.A.vtlp(x, alpha, [4.0, -4.0, 4.0, -4.0, 4.0])
            spec, _ = self.harmonic_amps(y)
            power = spec ** 2
            near = sum(power[int(k * self.F0) - 3: int(k * self.F0) + 4].sum() for k in range(1, 80))
            self.assertGreater(near / power.sum(), 0.99, alpha)  # energy only at the same harmonics
            self.assertAlmostEqual(self.A.rms(y), self.A.rms(x), places=4)

    def test_timing_kept(self):
        np = self.np
        x = np.zeros(self.A.RATE * 2, np.float32)
        burst = self.vowel(0.4)
        x[16000: 16000 + len(burst)] = burst
        for alpha in (0.85, 1.15):
            y = self.A.vtlp(x, alpha)
            loud = np.nonzero(np.abs(y) > 0.1 * np.abs(y).max())[0]
            self.assertLess(abs(int(loud[0]) - 16000), 80, alpha)  # 5 ms
            self.assertLess(abs(int(loud[-1]) - (16000 + len(burst))), 80, alpha)
            self.assertLess(self.A.rms(y[:15000]), 1e-3 * self.A.rms(y))  # nothing before the burst

    def test_warp_map(self):
        np = self.np
        f = np.array([0.0, 1000.0, 4000.0, 8000.0])
        self.assertTrue(np.allclose(self.A.warp_source_hz(f, 1.0), f))
        for alpha in (0.85, 1.15):
            src = self.A.warp_source_hz(np.linspace(0, 8000, 257), alpha)
            self.assertAlmostEqual(float(src[0]), 0.0)
            self.assertAlmostEqual(float(src[-1]), 8000.0)  # Nyquist stays
            self.assertTrue(np.all(np.diff(src) > 0))
            self.assertAlmostEqual(float(self.A.warp_source_hz(np.array([1000.0]), alpha)[0]), 1000.0 / alpha)

    def test_deterministic_from_the_seed(self):
        x = self.vowel()
        y1, used = self.A.apply(x, ["vtlp", "reverb"], seed=77)
        y2, _ = self.A.apply(x, ["vtlp", "reverb"], seed=77)
        self.assertEqual(used, ["vtlp", "reverb"])
        self.assertTrue(self.np.array_equal(y1, y2))
        y3, _ = self.A.apply(x, ["vtlp", "reverb"], seed=78)
        self.assertFalse(self.np.array_equal(y1, y3))
        # the other effects' parameters do not depend on whether vtlp ran before them
        alpha, tone = self.A.vtlp_params(77)
        reverb_only, _ = self.A.apply(self.A.vtlp(x, alpha, tone), ["reverb"], seed=77)
        self.assertTrue(self.np.array_equal(y1, reverb_only))
        alphas = [self.A.vtlp_params(s)[0] for s in range(2000)]
        lo, hi = self.A.VTLP_ALPHA
        self.assertTrue(all(lo <= a <= hi for a in alphas))
        self.assertLess(min(alphas), lo + 0.01)
        self.assertGreater(max(alphas), hi - 0.01)
        self.assertEqual(self.A.vtlp_params(5), self.A.vtlp_params(5))

    def test_share_of_training_clips_and_never_held_out(self):
        import synth
        texts = {lang: [f"{lang} {i}." for i in range(500)] for lang in ("en", "de", "fr", "es")}
        has = lambda meta: sum("vtlp" in m["effects"] for m in meta) / len(meta)  # noqa: E731
        _, default = synth.plan_jobs(texts, 1, held_out=False)
        self.assertAlmostEqual(has(default), self.A.VTLP_SHARE, delta=0.04)
        _, quarter = synth.plan_jobs(texts, 1, held_out=False, vtlp_share=0.25)
        self.assertAlmostEqual(has(quarter), 0.25, delta=0.04)
        jobs_off, off = synth.plan_jobs(texts, 1, held_out=False, vtlp_share=0.0)
        self.assertEqual(has(off), 0.0)
        # choosing vtlp changes nothing else in the plan: same voices, other effects, seeds
        strip = lambda meta: [dict(m, effects=[e for e in m["effects"] if e != "vtlp"]) for m in meta]  # noqa: E731
        self.assertEqual(strip(default), off)
        self.assertTrue(all(e != "vtlp" for m in off for e in m["effects"]))
        self.assertTrue(all(m["effects"].index("vtlp") == 0 for m in default if "vtlp" in m["effects"]))
        for share in (None, 1.0):
            held_jobs, held = synth.plan_jobs(texts, 1, held_out=True, effect_shares={}, vtlp_share=share)
            self.assertEqual(has(held), 0.0)
            self.assertTrue(all(not item[6] for job in held_jobs for item in job))
            _, held_default_fx = synth.plan_jobs(texts, 1, held_out=True, vtlp_share=share)
            self.assertEqual(sum("vtlp" in m["effects"] for m in held_default_fx), 0)
        _, clean = synth.plan_jobs(texts, 1, held_out=False, effect_shares={}, vtlp_share=1.0)
        self.assertEqual(has(clean), 0.0)

    def test_train_option(self):
        import train
        args = train.parse_args(["--out", "/tmp/x", "--vtlp-share", "0.3"])
        self.assertEqual(args.vtlp_share, 0.3)
        self.assertIsNone(train.parse_args(["--out", "/tmp/x"]).vtlp_share)  # main() fills in VTLP_SHARE
        for bad in ("1.5", "-0.1"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                train.parse_args(["--out", "/tmp/x", "--vtlp-share", bad])

    def test_template_share_option(self):
        import train
        self.assertEqual(train.parse_args(["--out", "/tmp/x"]).template_share, train.TEMPLATE_SHARE)
        self.assertEqual(train.parse_args(["--out", "/tmp/x", "--template-share", "0.15"]).template_share, 0.15)
        for bad in ("1.5", "-0.1"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                train.parse_args(["--out", "/tmp/x", "--template-share", bad])


if __name__ == "__main__":
    unittest.main()
