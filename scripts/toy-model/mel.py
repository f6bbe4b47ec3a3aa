"""Whisper's 80-bin log-mel spectrogram in torch (batched, on the GPU), computed as
transformers' WhisperFeatureExtractor does: periodic Hann window of 400 samples, hop 160,
centred frames with reflect padding, power spectrum, Slaney mel filters
(assets/mel_filters.npz), log10 floored at 1e-10, last frame dropped, clamped to
(max - 8) per clip, then (x + 4) / 4."""
import os

import numpy as np
import torch

N_FFT, HOP, N_SAMPLES = 400, 160, 480000
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class LogMel:
    def __init__(self, device, n_mels=80):
        filters = np.load(os.path.join(REPO, "assets", "mel_filters.npz"))[f"mel_{n_mels}"]
        self.filters = torch.from_numpy(np.asarray(filters, np.float32)).to(device)  # [n_mels, 201]
        self.window = torch.hann_window(N_FFT, periodic=True, device=device)

    def __call__(self, audio):
        """audio: [B, 480000] float32 -> [B, n_mels, 3000]."""
        spec = torch.stft(audio, N_FFT, HOP, window=self.window, center=True, pad_mode="reflect",
                          return_complex=True)
        power = spec[..., :-1].abs() ** 2
        mel = torch.clamp(self.filters @ power, min=1e-10).log10()
        peak = mel.amax(dim=(1, 2), keepdim=True)
        return (torch.maximum(mel, peak - 8.0) + 4.0) / 4.0
