"""Unit tests of augment.py (numpy; Debian's /usr/bin/python3):

  /usr/bin/python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'
"""
import importlib.util
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


if __name__ == "__main__":
    unittest.main()
