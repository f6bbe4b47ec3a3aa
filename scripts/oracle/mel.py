#!/usr/bin/env python3
"""Log-mel goldens for hark's front end (tests/unit/audio/mel_parity_test.cc).

Run from the repository root on the oracle machine:
    python3 scripts/oracle/mel.py --out OUT_DIR
then unpack OUT_DIR into tests/data/golden/mel/.

Reference: transformers' WhisperFeatureExtractor, numpy path (_np_extract_fbank_features),
for 80 and 128 mel bins. Inputs are 16 kHz PCM16 WAVs read with the standard library
(samples / 32768 as float32, exactly what hark's WAV parser yields):
  jfk       tests/data/audio/jfk.wav      (11.0 s)
  ls_test   tests/data/audio/ls-test.wav  (6.67 s; ls-test.flac decoded losslessly)
  concat33  jfk + ls_test + jfk + ls_test cut to 528000 samples (33.0 s): crosses the
            30 s window boundary
Each clip is padded with 30 s of zeros before the mel, as OpenAI's transcribe() does
(log_mel_spectrogram(audio, padding=N_SAMPLES)); the full-length mel then has
(len + 480000) // 160 frames. To keep the goldens small only the first
len // 160 + 40 frames are stored (every later frame is log-mel of pure silence, a
single constant that equals the last stored frames).

Files written into --out:
  <clip>_<n_mels>.npy   float32 [n_mels, frames_stored]
  meta.json             versions, lengths, which reference ran, and cross-checks:
                        numpy vs torch path, padded first window vs the extractor's
                        default 30 s __call__ output (identical for clips < 30 s)
Without transformers (a local dry run) it falls back to a float64 numpy implementation
of the same formula with assets/mel_filters.npz and says so in meta.json.
"""
import argparse
import json
import os
import sys
import wave

import numpy as np

SR = 16000
N_FFT = 400
HOP = 160
N_SAMPLES = 30 * SR
EXTRA_FRAMES = 40


def read_wav16(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == SR, path
        raw = w.readframes(w.getnframes())
    return (np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(32768.0)).astype(np.float32)


def clips():
    jfk = read_wav16("tests/data/audio/jfk.wav")
    out = {"jfk": jfk}
    if not os.path.exists("tests/data/audio/ls-test.wav"):  # keep the jfk goldens if it is missing
        print("WARNING: tests/data/audio/ls-test.wav missing: ls_test and concat33 skipped", file=sys.stderr)
        return out
    ls = read_wav16("tests/data/audio/ls-test.wav")
    out["ls_test"] = ls
    out["concat33"] = np.concatenate([jfk, ls, jfk, ls])[: 33 * SR].astype(np.float32)
    return out


def fallback_log_mel(audio, n_mels):
    """Same formula in float64 numpy (used only when transformers is missing)."""
    filters = np.load("assets/mel_filters.npz")[f"mel_{n_mels}"].astype(np.float64)
    x = np.pad(audio.astype(np.float64), (N_FFT // 2, N_FFT // 2), mode="reflect")
    n = np.arange(N_FFT)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)
    frames = 1 + (len(x) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(frames)[:, None]
    spec = np.abs(np.fft.rfft(x[idx] * window, axis=1)) ** 2
    mel = filters @ spec.T
    log_spec = np.log10(np.maximum(mel, 1e-10))[:, :-1]
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)


def first_item(out):
    out = np.asarray(out, dtype=np.float32)
    return out[0] if out.ndim == 3 else out


def np_extract(fe, audio):
    # transformers >= 4.40: (waveform_batch, device) -> [batch, n_mels, frames]
    try:
        return first_item(fe._np_extract_fbank_features(audio[None, :], "cpu"))
    except TypeError:
        return first_item(fe._np_extract_fbank_features(audio))


def torch_extract(fe, audio):
    try:
        return first_item(fe._torch_extract_fbank_features(audio[None, :], "cpu"))
    except TypeError:
        return first_item(fe._torch_extract_fbank_features(audio))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    meta = {"numpy": np.__version__, "frames_stored_beyond_content": EXTRA_FRAMES, "clips": {}}
    try:
        import transformers
        from transformers import WhisperFeatureExtractor
        meta["transformers"] = transformers.__version__
        meta["reference"] = "transformers WhisperFeatureExtractor._np_extract_fbank_features"
    except Exception as e:  # local dry run
        WhisperFeatureExtractor = None
        meta["reference"] = f"numpy fallback (transformers unavailable: {e})"
        print("WARNING: transformers unavailable, using the numpy fallback", file=sys.stderr)

    for name, audio in clips().items():
        padded = np.concatenate([audio, np.zeros(N_SAMPLES, np.float32)])
        keep = len(audio) // HOP + EXTRA_FRAMES
        info = {"samples": int(len(audio)), "frames_full": int(len(padded) // HOP), "frames_stored": int(keep)}
        for n_mels in (80, 128):
            if WhisperFeatureExtractor is not None:
                fe = WhisperFeatureExtractor(feature_size=n_mels)
                mel = np_extract(fe, padded)
                try:
                    info[f"max_abs_numpy_vs_torch_{n_mels}"] = float(np.abs(mel - torch_extract(fe, padded)).max())
                except Exception as e:
                    info[f"torch_path_{n_mels}"] = f"unavailable: {e}"
                if len(audio) < N_SAMPLES:
                    default = fe(audio, sampling_rate=SR, return_tensors="np")["input_features"][0]
                    info[f"max_abs_window0_vs_default_call_{n_mels}"] = float(np.abs(mel[:, :3000] - default).max())
                info[f"max_abs_vs_fallback_{n_mels}"] = float(np.abs(mel - fallback_log_mel(padded, n_mels)).max())
            else:
                mel = fallback_log_mel(padded, n_mels)
            assert mel.shape == (n_mels, len(padded) // HOP), mel.shape
            np.save(os.path.join(args.out, f"{name}_{n_mels}.npy"), np.ascontiguousarray(mel[:, :keep], np.float32))
        meta["clips"][name] = info
        print(name, json.dumps(info))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
