"""espeak-ng synthesis of many short clips on all CPU cores.

Each worker process loads libespeak-ng once through ctypes (synchronous mode, samples
delivered to a callback), which is ~20 ms per clip instead of ~100 ms for a process per
clip; if the library cannot be loaded it falls back to the espeak-ng program. Clips are
trimmed to the first and last audible sample (so utterance boundaries are the speech
boundaries), resampled 22 050 -> 16 000 Hz and returned as int16.

Environment (set by remake.sh on the GPU machine, unset here):
  ESPEAK_LIB   path of libespeak-ng.so.1      (default: the system's)
  ESPEAK_DATA  folder holding espeak-ng-data/ (default: the library's built-in path)
  ESPEAK_BIN   the espeak-ng program for the fallback (default: espeak-ng on PATH)
"""
import ctypes
import os
import random
import subprocess

import numpy as np

ESPEAK_RATE = 22050
TARGET_RATE = 16000
TRIM_MARGIN_S = 0.01

# Base voices per language and the variants used for training; EVAL_VARIANTS are never
# used in training, so the held-out set has new voice settings.
VOICES = {
    "en": ["en-us", "en", "en-gb-x-rp", "en-029", "en-gb-scotland"],
    "de": ["de"],
    "fr": ["fr", "fr-be"],
    "es": ["es", "es-419"],
}
TRAIN_VARIANTS = ["", "m1", "m2", "m3", "m5", "m6", "m7", "f1", "f2", "f4", "f5", "klatt", "klatt2"]
EVAL_VARIANTS = ["m4", "f3"]


def voice_settings(rng, lang, held_out):
    """(voice name, words per minute, pitch 0-100, pitch range 0-100)."""
    variant = rng.choice(EVAL_VARIANTS if held_out else TRAIN_VARIANTS)
    base = rng.choice(VOICES[lang])
    name = f"{base}+{variant}" if variant else base
    if held_out:
        return name, rng.randint(140, 180), rng.randint(35, 65), rng.randint(40, 70)
    return name, rng.randint(125, 195), rng.randint(25, 75), rng.randint(25, 85)


class _Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))
_state = {}

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_RATE_PARAM, ESPEAK_PITCH_PARAM, ESPEAK_RANGE_PARAM = 1, 3, 4
POS_CHARACTER, ESPEAK_CHARS_UTF8 = 1, 1


def _init_library():
    lib = ctypes.CDLL(os.environ.get("ESPEAK_LIB", "libespeak-ng.so.1"))
    data = os.environ.get("ESPEAK_DATA")
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_Synth.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                 ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    rate = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, data.encode() if data else None, 0)
    if rate != ESPEAK_RATE:
        raise RuntimeError(f"[synth] espeak_Initialize returned {rate}; check ESPEAK_DATA")
    chunks = []

    def on_samples(wav, count, _events):
        if count > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    callback = _CALLBACK(on_samples)
    lib.espeak_SetSynthCallback(callback)
    _state.update(lib=lib, chunks=chunks, callback=callback)


def _synth_library(voice, wpm, pitch, prange, text):
    lib, chunks = _state["lib"], _state["chunks"]
    chunks.clear()
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise RuntimeError(f"[synth] unknown espeak voice {voice}")
    lib.espeak_SetParameter(ESPEAK_RATE_PARAM, wpm, 0)
    lib.espeak_SetParameter(ESPEAK_PITCH_PARAM, pitch, 0)
    lib.espeak_SetParameter(ESPEAK_RANGE_PARAM, prange, 0)
    data = text.encode("utf-8") + b"\0"
    lib.espeak_Synth(data, len(data), 0, POS_CHARACTER, 0, ESPEAK_CHARS_UTF8, None, None)
    lib.espeak_Synchronize()
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int16)


def _synth_program(voice, wpm, pitch, prange, text):
    cmd = [os.environ.get("ESPEAK_BIN", "espeak-ng"), "-v", voice, "-s", str(wpm), "-p", str(pitch), "--stdout", text]
    if os.environ.get("ESPEAK_DATA"):
        cmd[1:1] = [f"--path={os.environ['ESPEAK_DATA']}"]
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    # espeak-ng --stdout writes a WAV header with unknown (0x7fffffff) sizes: parse by hand.
    if raw[:4] == b"RIFF":
        raw = raw[44:]
    return np.frombuffer(raw[: len(raw) // 2 * 2], dtype=np.int16)


def _resample(x):
    try:
        from scipy.signal import resample_poly
        return resample_poly(x, 320, 441)
    except ImportError:  # development machine without scipy: linear interpolation
        t = np.arange(int(len(x) * TARGET_RATE / ESPEAK_RATE)) * (ESPEAK_RATE / TARGET_RATE)
        return np.interp(t, np.arange(len(x)), x)


def trim_and_resample(samples):
    x = samples.astype(np.float32) / 32768.0
    peak = float(np.abs(x).max()) if len(x) else 0.0
    if peak < 1e-4:
        return np.zeros(0, np.int16)
    loud = np.nonzero(np.abs(x) > 0.02 * peak)[0]
    margin = int(TRIM_MARGIN_S * ESPEAK_RATE)
    x = x[max(0, loud[0] - margin): loud[-1] + margin]
    y = _resample(x)
    y *= 0.5 / max(1e-6, float(np.abs(y).max()))  # stored at peak 0.5; gains vary per use
    return np.clip(np.round(y * 32767.0), -32768, 32767).astype(np.int16)


def synth_job(job):
    """job: list of (index, voice, wpm, pitch, range, text) -> list of (index, int16 clip)."""
    if "lib" not in _state and "failed" not in _state:
        try:
            _init_library()
        except Exception as e:  # fall back to the program, once per worker
            _state["failed"] = repr(e)
    out = []
    for index, voice, wpm, pitch, prange, text in job:
        if "lib" in _state:
            raw = _synth_library(voice, wpm, pitch, prange, text)
        else:
            raw = _synth_program(voice, wpm, pitch, prange, text)
        out.append((index, trim_and_resample(raw)))
    return out


def plan_jobs(texts_by_lang, seed, held_out, job_size=64):
    """Spreads (lang, text) over jobs that interleave languages, so every language
    arrives early when results are consumed as they come."""
    rng = random.Random(f"voices-{seed}-{held_out}")
    items, index = [], 0
    per_lang = {lang: list(texts) for lang, texts in texts_by_lang.items()}
    meta = []
    longest = max(len(v) for v in per_lang.values())
    for i in range(longest):
        for lang, texts in per_lang.items():
            if i < len(texts):
                voice, wpm, pitch, prange = voice_settings(rng, lang, held_out)
                items.append((index, voice, wpm, pitch, prange, texts[i]))
                meta.append({"lang": lang, "text": texts[i], "voice": voice, "wpm": wpm, "pitch": pitch, "range": prange})
                index += 1
    jobs = [items[i:i + job_size] for i in range(0, len(items), job_size)]
    return jobs, meta


if __name__ == "__main__":
    import time
    jobs, meta = plan_jobs({"en": ["Good morning, my name is Amy."], "de": ["Es sind heute 21 Grad draußen."]}, 0, True)
    t = time.time()
    clips = synth_job(jobs[0])
    for (i, clip), m in zip(clips, meta):
        print(m, f"{len(clip) / TARGET_RATE:.2f} s", "library" if "lib" in _state else _state.get("failed"))
    print(f"{(time.time() - t) / len(clips) * 1000:.0f} ms per clip")
