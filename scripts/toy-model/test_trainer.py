"""Unit tests of the torch parts of trainer.py that need no transformers: coloured noise,
window assembly, the learning-rate schedule, the compact Adam moments and their
restoration. Skipped where torch is missing (Debian's python3-torch 1.13 suffices):

  /usr/bin/python3 -m unittest discover -s scripts/toy-model -p 'test_*.py'
"""
import importlib.util
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@unittest.skipIf(importlib.util.find_spec("torch") is None, "torch missing (apt-get install python3-torch)")
class Trainer(unittest.TestCase):
    def setUp(self):
        import torch
        import trainer
        self.torch, self.T = torch, trainer

    def test_coloured_noise_is_unit_rms_and_tilted(self):
        torch = self.torch
        torch.manual_seed(0)
        noise = self.T.coloured_noise(3, torch.tensor([[0.0], [1.0], [2.0]]), torch.device("cpu"))
        self.assertEqual(tuple(noise.shape), (3, 480000))
        for row in noise:
            self.assertAlmostEqual(float(row.pow(2).mean().sqrt()), 1.0, places=3)
        spec = torch.fft.rfft(noise).abs().pow(2)
        low, high = spec[:, 30:1500].sum(1), spec[:, 120000:240000].sum(1)  # 20-500 Hz, 4-8 kHz
        ratio = (low / high).tolist()
        self.assertLess(ratio[0], 0.1)
        self.assertGreater(ratio[2], 100 * ratio[1])

    def test_gather_audio_places_clips(self):
        torch, T = self.torch, self.T
        store = T.ClipStore(torch.device("cpu"), capacity_samples=10)  # grows as needed
        import numpy as np
        clip = (np.ones(16000) * 16000).astype(np.int16)
        self.assertTrue(store.add(clip, "en", "One.", [1]))
        self.assertFalse(store.add(clip[:100], "en", "Too short.", [1]))
        plans = [{"lang": "en", "kind": "single", "placements": [(0, 2.0)], "cut": None, "audio_end": 4.0}]
        audio = T.gather_audio(store, plans, random.Random(1), torch.device("cpu"))
        inside, before = audio[0, 32000 + 100:48000 - 100], audio[0, :31000]
        self.assertGreater(float(inside.abs().mean()), 0.2)
        self.assertLess(float(before.abs().max()), 0.1)  # noise only

    def test_noise_only_windows_reach_louder_noise(self):
        torch, T = self.torch, self.T
        store = T.ClipStore(torch.device("cpu"), capacity_samples=10)
        import numpy as np
        self.assertTrue(store.add((np.ones(16000) * 16000).astype(np.int16), "en", "One.", [1]))
        plans = [{"lang": None, "kind": "silence", "placements": [], "cut": None, "audio_end": 30.0}] * 48
        torch.manual_seed(0)
        audio = T.gather_audio(store, plans, random.Random(3), torch.device("cpu"))
        stds = [float(row.std()) for row in audio]
        self.assertGreater(max(stds), T.SPEECH_NOISE_MAX)  # beyond what speech windows get
        self.assertLess(max(stds), T.SILENCE_NOISE_MAX * 1.05)
        self.assertTrue(any(s == 0.0 for s in stds))  # and some stay digital silence

    def test_lang_weights(self):
        T = self.T
        self.assertEqual(T.parse_lang_weights("", ["de", "en"]), [1.0, 1.0])
        self.assertEqual(T.parse_lang_weights("en=1.5", ["de", "en", "es", "fr"]), [1.0, 1.5, 1.0, 1.0])
        for bad in ("xx=2", "en", "en=0", "en=-1"):
            with self.assertRaises(ValueError):
                T.parse_lang_weights(bad, ["de", "en"])

    def test_lr_schedule(self):
        f = self.T.lr_factor
        self.assertAlmostEqual(f(0, 100), 0.01)
        self.assertEqual(f(500, 100), 1.0)
        self.assertAlmostEqual(f(500, 100, resumed_at=500), 1 / 50)
        self.assertEqual(f(560, 100, resumed_at=500), 1.0)
        self.assertAlmostEqual(f(600, 100, cooldown_frac=0.5), 0.5)
        self.assertAlmostEqual(f(600, 100, cooldown_frac=1.3), 0.02)

    def test_lr_schedule_constant_then_decay_in_one_run(self):
        f = self.T.lr_factor
        # the defaults leave the plain decay as it was
        for frac in (0.0, 0.25, 0.5, 0.99, 1.3):
            self.assertEqual(f(600, 100, cooldown_frac=frac, cooldown_after=0.0, cooldown_scale=1.0),
                             f(600, 100, cooldown_frac=frac))
        kw = {"cooldown_after": 0.5, "cooldown_scale": 0.4}  # --lr 1e-3, --cooldown-after 0.5, --cooldown-lr 4e-4
        self.assertEqual(f(600, 100, cooldown_frac=0.0, **kw), 1.0)  # constant at --lr
        self.assertEqual(f(600, 100, cooldown_frac=0.49, **kw), 1.0)
        self.assertAlmostEqual(f(600, 100, cooldown_frac=0.5, **kw), 0.4)  # the decay starts at --cooldown-lr
        self.assertAlmostEqual(f(600, 100, cooldown_frac=0.75, **kw), 0.2)  # halfway down
        self.assertAlmostEqual(f(600, 100, cooldown_frac=0.99, **kw), 0.4 * 0.02)  # floor: 2 % of the decay's peak
        self.assertAlmostEqual(f(600, 100, cooldown_frac=1.3, **kw), 0.4 * 0.02)
        # a resume still re-warms over 50 steps, in the constant stretch as in the decay
        self.assertAlmostEqual(f(500, 100, resumed_at=500, cooldown_frac=0.0, **kw), 1 / 50)
        self.assertAlmostEqual(f(500, 100, resumed_at=500, cooldown_frac=0.75, **kw), 0.2 / 50)
        # without --cooldown the new settings do nothing
        self.assertEqual(f(600, 100, cooldown_frac=None, **kw), 1.0)

    def test_cooldown_options(self):
        import train
        base = ["--out", "/tmp/x"]
        a = train.parse_args(base)
        self.assertEqual((a.cooldown, a.cooldown_after, a.cooldown_lr), (False, 0.0, None))
        self.assertEqual(self.T.cooldown_scale(a), 1.0)
        a = train.parse_args(base + ["--cooldown", "--lr", "1e-3", "--cooldown-after", "0.5", "--cooldown-lr", "4e-4"])
        self.assertEqual(a.cooldown_after, 0.5)
        self.assertAlmostEqual(self.T.cooldown_scale(a), 0.4)
        for bad in (["--cooldown-after", "0.5"], ["--cooldown-lr", "4e-4"],
                    ["--cooldown", "--cooldown-after", "1"], ["--cooldown", "--cooldown-after", "-0.1"],
                    ["--cooldown", "--cooldown-lr", "0"]):
            with self.assertRaises(SystemExit), open(os.devnull, "w") as null:
                old, sys.stderr = sys.stderr, null
                try:
                    train.parse_args(base + bad)
                finally:
                    sys.stderr = old

    def test_moments_round_trip(self):
        torch, T = self.torch, self.T
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.LayerNorm(5))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98))
        for _ in range(3):
            loss = model(torch.randn(8, 6)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        weight = model[0].weight
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, T.MOMENTS_FILE)
            T.save_moments(opt, model, path)
            fresh = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98))
            T.restore_moments(fresh, model, path, log=lambda *a: None)
        old, new = opt.state[weight], fresh.state[weight]
        self.assertEqual(float(new["step"]), 3.0)
        self.assertTrue(torch.equal(new["exp_avg"], torch.zeros_like(weight)))
        v = old["exp_avg_sq"]
        self.assertTrue(torch.allclose(new["exp_avg_sq"].mean(1), v.mean(1), rtol=1e-5))  # row means kept
        self.assertTrue(torch.allclose(new["exp_avg_sq"].mean(0), v.mean(0), rtol=1e-5))  # column means kept
        bias = model[1].bias
        self.assertTrue(torch.equal(fresh.state[bias]["exp_avg_sq"], opt.state[bias]["exp_avg_sq"]))
        loss = model(torch.randn(8, 6)).pow(2).mean()  # the optimizer keeps working
        fresh.zero_grad()
        loss.backward()
        fresh.step()
        self.assertEqual(float(fresh.state[weight]["step"]), 4.0)

    def test_a_state_without_moments_resumes_with_fresh_ones(self):
        torch, T = self.torch, self.T
        model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.LayerNorm(5))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98))
        logs = []
        with tempfile.TemporaryDirectory() as d:  # a state made by runstate.py from-model: no adam-moments.pt
            self.assertEqual(T.resume_moments(opt, model, d, 18114, logs.append), "fresh")
            self.assertIn("start fresh", logs[-1])
            self.assertEqual(len(opt.state), 0)
            loss = model(torch.randn(8, 6)).pow(2).mean()
            loss.backward()
            opt.step()
            self.assertEqual(float(opt.state[model[0].weight]["step"]), 1.0)
            T.save_moments(opt, model, os.path.join(d, T.MOMENTS_FILE))
            fresh = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98))
            self.assertEqual(T.resume_moments(fresh, model, d, 18115, logs.append), "restored")
        self.assertEqual(T.resume_moments(opt, model, None, 0, logs.append), "new")
        # and the LR re-warms from the state's step as on every resume
        self.assertAlmostEqual(T.lr_factor(18114, 300, resumed_at=18114), 1 / 50)
        self.assertEqual(T.lr_factor(18164, 300, resumed_at=18114), 1.0)

    def split_model(self):
        """A model split as Whisper's is for target_loss (decoder stack `model`, then
        `proj_out`), each window's hidden states depending on its own features only."""
        torch = self.torch

        class Split(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(50, 16)
                self.proj_out = torch.nn.Linear(16, 50, bias=False)

            def model(self, input_features, decoder_input_ids, use_cache):
                out = type("Out", (), {})()
                per_window = input_features.mean((1, 2))[:, None, None]
                out.last_hidden_state = torch.tanh(self.embed(decoder_input_ids) + per_window)
                return out

        return Split()

    def test_target_loss_equals_the_whole_logits_loss(self):
        """The loss over the taught positions only is the ignore_index loss of the whole
        logits, gradients too, for a model split as Whisper's (decoder, then proj_out)."""
        import contextlib
        torch = self.torch
        F = torch.nn.functional
        torch.manual_seed(3)

        feats = torch.randn(3, 4, 5)
        inputs = torch.randint(0, 50, (3, 7))
        labels = torch.randint(0, 50, (3, 7))
        labels[0, 5:] = -100
        labels[1, :2] = -100
        labels[2, 1] = -100
        m = self.split_model()
        whole = m.proj_out(m.model(feats, inputs, False).last_hidden_state)
        expect = F.cross_entropy(whole.reshape(-1, 50), labels.reshape(-1), ignore_index=-100)
        expect.backward()
        grads = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        got = self.T.target_loss(m, feats, inputs, labels, contextlib.nullcontext())
        got.backward()
        self.assertAlmostEqual(float(got), float(expect), places=5)
        for g, p in zip(grads, m.parameters()):
            self.assertTrue(torch.allclose(g, p.grad, atol=1e-6))

    def test_backward_in_parts_gives_the_gradient_of_one_pass(self):
        """A batch split into passes (the fallback when it does not fit the GPU) has the
        loss and gradients of one pass, whatever the parts' numbers of taught positions,
        including a part with none."""
        import contextlib
        torch = self.torch
        torch.manual_seed(5)

        feats = torch.randn(5, 4, 5)
        inputs = torch.randint(0, 50, (5, 7))
        labels = torch.randint(0, 50, (5, 7))
        labels[0, 2:] = -100
        labels[3, :] = -100  # with 3 parts of 2 windows, the second part has one taught window
        labels[4, :] = -100  # and the third none
        m = self.split_model()
        one = self.T.backward_in_parts(m, feats, inputs, labels, contextlib.nullcontext(), 1)
        grads = [p.grad.clone() for p in m.parameters()]
        for parts in (2, 3, 5):
            m.zero_grad()
            got = self.T.backward_in_parts(m, feats, inputs, labels, contextlib.nullcontext(), parts)
            self.assertAlmostEqual(float(got), float(one), places=5, msg=f"{parts} parts")
            for g, p in zip(grads, m.parameters()):
                self.assertTrue(torch.allclose(g, p.grad, atol=1e-6), f"{parts} parts")

    def test_backward_fitting_doubles_the_passes_until_the_batch_fits(self):
        """Out of GPU memory, the step is redone in twice the passes (fresh gradients each
        try) until it fits; past the limit the error goes on."""
        import contextlib
        from unittest import mock
        torch = self.torch
        T = self.T
        torch.manual_seed(7)
        feats, inputs = torch.randn(4, 4, 5), torch.randint(0, 50, (4, 7))
        labels = torch.randint(0, 50, (4, 7))
        m = self.split_model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        want = T.backward_in_parts(m, feats, inputs, labels, contextlib.nullcontext(), 1)
        grads = [p.grad.clone() for p in m.parameters()]
        real, tried, logged = T.backward_in_parts, [], []

        def fits_in_four(model, f, i, lab, ac, parts):
            tried.append(parts)
            out = real(model, f, i, lab, ac, parts)  # a failing pass may leave gradients behind
            if parts < 4:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory")
            return out

        with mock.patch.object(T, "backward_in_parts", fits_in_four):
            loss, parts = T.backward_fitting(m, feats, inputs, labels, contextlib.nullcontext(), opt, 1, logged.append)
            self.assertEqual((tried, parts), ([1, 2, 4], 4))
            self.assertAlmostEqual(float(loss), float(want), places=5)
            for g, p in zip(grads, m.parameters()):
                self.assertTrue(torch.allclose(g, p.grad, atol=1e-6))
            self.assertEqual(len(logged), 2)
            with self.assertRaises(torch.cuda.OutOfMemoryError):
                T.backward_fitting(m, feats, inputs, labels, contextlib.nullcontext(), opt, 1, logged.append,
                                   max_parts=2)

    def test_targets_are_shifted_and_masked(self):
        import layout
        import tokens as Tk
        T = self.T
        table = layout.ClipTable()
        table.add("en", 2.0, "Hi.", [17250, 13])
        plans = [{"lang": "en", "kind": "single", "placements": [(0, 0.5)], "cut": None, "audio_end": 3.0},
                 {"lang": "en", "kind": "silence", "placements": [], "cut": None, "audio_end": 3.0}]
        inputs, labels = T.build_targets(plans, table, random.Random(0), self.torch.device("cpu"), p_timestamps=0.0,
                                         p_prompt=0.0)
        self.assertEqual(inputs[0, :5].tolist(), [Tk.SOT, Tk.lang_token("en"), Tk.TRANSCRIBE, Tk.NOTIMESTAMPS, 17250])
        self.assertEqual(labels[0, :6].tolist(), [Tk.lang_token("en"), Tk.TRANSCRIBE, Tk.NOTIMESTAMPS, 17250, 13, Tk.EOT])
        self.assertEqual(labels[1, 0].item(), -100)  # silence with a forced prompt: SOT step not taught

    def test_prompted_windows_teach_only_the_transcript(self):
        import layout
        import tokens as Tk
        T = self.T
        table = layout.ClipTable()
        for i in range(20):
            table.add("en", 2.0 + i % 3, f"Sentence {i}.", [1000 + i, 1100 + i, 13])
        plans = [{"lang": "en", "kind": "single", "placements": [(0, 0.5)], "cut": None, "audio_end": 3.0},
                 {"lang": "en", "kind": "silence", "placements": [], "cut": None, "audio_end": 3.0}]
        inputs, labels = T.build_targets(plans, table, random.Random(3), self.torch.device("cpu"), p_timestamps=1.0,
                                         p_prompt=1.0)
        for b in range(2):
            row, lab = inputs[b].tolist(), labels[b].tolist()
            self.assertEqual(row[0], Tk.STARTOFPREV)
            sot = row.index(Tk.SOT)
            self.assertTrue(2 <= sot <= 1 + layout.MAX_PROMPT_TOKENS)
            self.assertTrue(all(x == -100 for x in lab[:sot]))  # the prompt is context, not a target
            self.assertNotIn(Tk.SOT, row[1:sot])
        self.assertEqual(labels[0, inputs[0].tolist().index(Tk.SOT)].item(), Tk.lang_token("en"))
        self.assertEqual(labels[1, inputs[1].tolist().index(Tk.SOT)].item(), Tk.NOSPEECH)  # read after a prompt too



@unittest.skipIf(importlib.util.find_spec("torch") is None, "torch missing (apt-get install python3-torch)")
class WordTiming(unittest.TestCase):
    def test_dtw_over_attention_gives_word_times(self):
        import types
        import torch
        import evaluate_full
        import tokens as Tk
        tok = Tk.Tokenizer()
        text_ids = tok.encode(" Hello big world")  # one token per word
        prompt = 4
        n_in = prompt + len(text_ids) + 1

        class Stub:
            def __call__(self, input_features, decoder_input_ids, output_attentions):
                att = torch.full((1, 2, n_in, 1500), 1e-4)
                for k in range(len(text_ids)):  # text token k looks at frames 25k+10 .. 25k+30
                    att[0, :, prompt + k, 25 * k + 10: 25 * k + 30] = 1.0
                return types.SimpleNamespace(cross_attentions=(att, att))

        words = evaluate_full.word_times(Stub(), torch.zeros(80, 3000), 16000 * 2, text_ids, "en", [[0, 0], [1, 1]], tok)
        self.assertEqual([w for w, _, _ in words], ["Hello", "big", "world"])
        starts = [s for _, s, _ in words]
        for k, s in enumerate(starts):
            self.assertAlmostEqual(s, (25 * k + 10) * 0.02, delta=0.1)


if __name__ == "__main__":
    unittest.main()
