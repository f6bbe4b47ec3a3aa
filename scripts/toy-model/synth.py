"""espeak-ng synthesis of many short clips on all CPU cores, with word timings and
optional acoustic effects (augment.py).

Each worker process loads libespeak-ng once through ctypes (synchronous mode, samples and
events delivered to a callback), which is ~20 ms per clip instead of ~100 ms for a process
per clip; if the library cannot be loaded it falls back to the espeak-ng program (then
without word timings). Clips are trimmed to the first and last audible sample (so
utterance boundaries are the speech boundaries), resampled 22 050 -> 16 000 Hz, degraded
by the planned effects and returned as int16 with the start and end (seconds) of every
whitespace-separated word of the text, from espeak-ng's word events.

Environment (set by remake.sh on the GPU machine, unset here):
  ESPEAK_LIB   path of libespeak-ng.so.1      (default: the system's)
  ESPEAK_DATA  folder holding espeak-ng-data/ (default: the library's built-in path)
  ESPEAK_BIN   the espeak-ng program for the fallback (default: espeak-ng on PATH)
"""
import ctypes
import math
import os
import random
import subprocess

import numpy as np

import augment

ESPEAK_RATE = 22050
TARGET_RATE = 16000
TRIM_MARGIN_S = 0.01

# Every espeak-ng 1.51 voice of the four languages and every variant of espeak-ng-data/
# voices/!v ("Mr serious" left out: its name has a space). EVAL_VARIANTS are never used in
# training, so held-out clips have new voices; they are ordinary-sounding variants (the
# robotic and whispering ones are only trained on).
VOICES = {
    "en": ["en", "en-us", "en-029", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-gb-x-rp",
           "en-us-nyc"],
    "de": ["de"],
    "fr": ["fr", "fr-be", "fr-ch"],
    "es": ["es", "es-419"],
}
ALL_VARIANTS = """
Alex Alicia Andrea Andy Annie AnxiousAndy Demonic Denis Diogo Gene Gene2 Henrique Hugo Jacky Lee Marco Mario
Michael Mike Nguyen RicishayMax RicishayMax2 RicishayMax3 Storm Tweaky UniRobot adam anika anikaRobot announcer
antonio aunty belinda benjamin boris caleb croak david ed edward edward2 f1 f2 f3 f4 f5 fast grandma grandpa
gustave iven iven2 iven3 iven4 john kaukovalta klatt klatt2 klatt3 klatt4 klatt5 klatt6 linda m1 m2 m3 m4 m5 m6
m7 m8 marcelo max michel miguel norbert pablo paul pedro quincy rob robert robosoft robosoft2 robosoft3 robosoft4
robosoft5 robosoft6 robosoft7 robosoft8 sandro shelby steph steph2 steph3 travis victor whisper whisperf zac
""".split()
EVAL_VARIANTS = ["m4", "f3", "klatt4", "iven2", "steph2", "Andrea", "benjamin", "grandma", "norbert", "linda"]
TRAIN_VARIANTS = [""] * 12 + [v for v in ALL_VARIANTS if v not in EVAL_VARIANTS]  # "" = the plain voice
# Voice shapes made here as espeak-ng variant files (`shaped_variant_text`), so that espeak's
# own formant synthesizer renders them: F1, F2 and F3 moved and weighted each on its own,
# and a tone curve. A share of the training clips (SHAPED_SHARE, train.py
# --shaped-voice-share) takes one of them instead of the variant drawn for it. Why: on run
# 17b the held-out `norbert` made 24-39 % of every language's errors through hark; its
# English errors are vowels heard further back (club -> clob, match -> march, west ->
# worst), and its F2 at vowel midpoints is 0.64-0.76 of the plain voice's with F1 kept
# (`formant 2 75 50` in its file); by their files the trained variants lower F2 only with F1. An
# envelope warp of finished clips (augment.vtlp) cannot do it: espeak's valleys between
# F1 and F2 lie ~60 dB down (heed, 1.5-1.85 kHz), and a cut-and-boost of the LPC envelope
# lifted them by ~10 dB where `norbert` has 32 more. Never on held-out clips.
# 24: espeak-ng 1.51 lists at most 349 voices and variants (N_VOICES_LIST), its own data has
# 322, and past the limit it warns on every start ("maximum number 349 ... reached").
SHAPED_VARIANTS = [f"hark-shape-{i:02d}" for i in range(24)]
ESPEAK_MAX_VOICES = 349
SHAPED_SHARE = 0.25
SHAPED_FORMANT_PCT = {1: (85, 115), 2: (65, 125), 3: (85, 115)}  # frequency, percent of the voice's own
SHAPED_STRENGTH_PCT = {1: (70, 130), 2: (35, 130), 3: (50, 130)}
SHAPED_TONE = (60, 255)  # espeak's `tone` amplitudes at 600, 1200 and 4000 Hz


def shaped_variant_text(name):
    """The espeak-ng variant file of one of SHAPED_VARIANTS: formants 1-3 at a random share
    of the voice's own frequency and strength (each drawn on its own) and a tone curve; the
    same text for the same name on every machine."""
    r = random.Random(f"voice-shape-{name}")
    lines = ["language variant", f"name {name}"]
    for k in (1, 2, 3):
        lines.append(f"formant {k} {r.randint(*SHAPED_FORMANT_PCT[k])} {r.randint(*SHAPED_STRENGTH_PCT[k])} 100")
    lines.append(f"tone 600 {r.randint(*SHAPED_TONE)} 1200 {r.randint(*SHAPED_TONE)} 4000 {r.randint(*SHAPED_TONE)}")
    return "\n".join(lines) + "\n"


def install_shaped_variants(data=None):
    """Writes SHAPED_VARIANTS into espeak-ng's variant folder under `data` (ESPEAK_DATA,
    the folder holding espeak-ng-data/), where both the library and the program find them;
    returns that folder. Call before the synthesis workers start."""
    data = data or os.environ.get("ESPEAK_DATA")
    if not data:
        raise RuntimeError("[synth] ESPEAK_DATA is not set: source scripts/toy-model/espeak-env.sh first")
    folder = os.path.join(data, "espeak-ng-data", "voices", "!v")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"[synth] no espeak-ng variant folder at {folder}")
    for name in SHAPED_VARIANTS:
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(shaped_variant_text(name))
    listed = sum(len(files) for sub in ("voices", "lang")
                 for _, _, files in os.walk(os.path.join(data, "espeak-ng-data", sub)))
    if listed > ESPEAK_MAX_VOICES:
        raise RuntimeError(f"[synth] espeak-ng data under {data} now has {listed} voices and variants, over the "
                           f"{ESPEAK_MAX_VOICES} it lists; remove stray variant files or fewer SHAPED_VARIANTS")
    return folder


def shaped_voice(voice, clip_seed, share=SHAPED_SHARE):
    """The voice with its variant replaced by one of SHAPED_VARIANTS for a share of the
    clip seeds (a draw of its own: the clip's other draws do not change), else as it is."""
    r = random.Random(f"voice-shape-pick-{clip_seed}")
    if share <= 0 or r.random() >= share:
        return voice
    return voice.split("+")[0] + "+" + r.choice(SHAPED_VARIANTS)


def voice_settings(rng, lang, held_out):
    """(voice name, words per minute, pitch 0-99, pitch range 0-99)."""
    variant = rng.choice(EVAL_VARIANTS if held_out else TRAIN_VARIANTS)
    base = rng.choice(VOICES[lang])
    name = f"{base}+{variant}" if variant else base
    if held_out:
        return name, rng.randint(120, 210), rng.randint(25, 75), rng.randint(25, 75)
    wpm = int(round(math.exp(rng.uniform(math.log(90), math.log(270)))))  # log-uniform speed
    return name, wpm, rng.randint(5, 95), rng.randint(5, 95)


class _Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))
_state = {}

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_RATE_PARAM, ESPEAK_PITCH_PARAM, ESPEAK_RANGE_PARAM = 1, 3, 4
POS_CHARACTER, ESPEAK_CHARS_UTF8 = 1, 1
EVENT_LIST_TERMINATED, EVENT_WORD = 0, 1


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
    chunks, words = [], []

    def on_samples(wav, count, events):
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:  # word events: character position, ms
            if events[i].type == EVENT_WORD:
                words.append((events[i].text_position, events[i].length, events[i].audio_position))
            i += 1
        if count > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    callback = _CALLBACK(on_samples)
    lib.espeak_SetSynthCallback(callback)
    _state.update(lib=lib, chunks=chunks, words=words, callback=callback)


def _synth_library(voice, wpm, pitch, prange, text):
    lib, chunks, words = _state["lib"], _state["chunks"], _state["words"]
    chunks.clear()
    words.clear()
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise RuntimeError(f"[synth] unknown espeak voice {voice}")
    lib.espeak_SetParameter(ESPEAK_RATE_PARAM, wpm, 0)
    lib.espeak_SetParameter(ESPEAK_PITCH_PARAM, pitch, 0)
    lib.espeak_SetParameter(ESPEAK_RANGE_PARAM, prange, 0)
    data = text.encode("utf-8") + b"\0"
    lib.espeak_Synth(data, len(data), 0, POS_CHARACTER, 0, ESPEAK_CHARS_UTF8, None, None)
    lib.espeak_Synchronize()
    audio = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return audio, list(words)


def _synth_program(voice, wpm, pitch, prange, text):
    cmd = [os.environ.get("ESPEAK_BIN", "espeak-ng"), "-v", voice, "-s", str(wpm), "-p", str(pitch), "--stdout", text]
    if os.environ.get("ESPEAK_DATA"):
        cmd[1:1] = [f"--path={os.environ['ESPEAK_DATA']}"]
    env = dict(os.environ)
    if os.environ.get("ESPEAK_LD_PATH"):  # the carried Debian libraries, wherever this runs
        env["LD_LIBRARY_PATH"] = os.environ["ESPEAK_LD_PATH"] + ":" + env.get("LD_LIBRARY_PATH", "")
    raw = subprocess.run(cmd, check=True, capture_output=True, env=env).stdout
    # espeak-ng --stdout writes a WAV header with unknown (0x7fffffff) sizes: parse by hand.
    if raw[:4] == b"RIFF":
        raw = raw[44:]
    return np.frombuffer(raw[: len(raw) // 2 * 2], dtype=np.int16), None


def _resample(x):
    try:
        from scipy.signal import resample_poly
        return resample_poly(x, 320, 441)
    except ImportError:  # development machine without scipy: linear interpolation
        t = np.arange(int(len(x) * TARGET_RATE / ESPEAK_RATE)) * (ESPEAK_RATE / TARGET_RATE)
        return np.interp(t, np.arange(len(x)), x)


def trim(samples):
    """(float32 audio at 22 050 Hz cut to the audible part, first kept sample) or (empty, 0)."""
    x = samples.astype(np.float32) / 32768.0
    peak = float(np.abs(x).max()) if len(x) else 0.0
    if peak < 1e-4:
        return np.zeros(0, np.float32), 0
    loud = np.nonzero(np.abs(x) > 0.02 * peak)[0]
    margin = int(TRIM_MARGIN_S * ESPEAK_RATE)
    first = max(0, loud[0] - margin)
    return x[first: loud[-1] + margin], first


def to_int16(y):
    y = y * (0.5 / max(1e-6, float(np.abs(y).max())))  # stored at peak 0.5; gains vary per use
    return np.clip(np.round(y * 32767.0), -32768, 32767).astype(np.int16)


def trim_and_resample(samples):
    x, _ = trim(samples)
    return to_int16(_resample(x)) if len(x) else np.zeros(0, np.int16)


def word_times(text, events, first, audio):
    """[start, end, exact] (seconds in the trimmed 16 kHz clip) of each whitespace-separated
    word of `text`, from espeak word events (1-based character position, length, ms). A
    word's end is its last audible sample before the next word starts. espeak-ng gives no
    event to some words (it joins "the" to its neighbour, punctuation standing alone):
    those get a start interpolated by characters between their neighbours and exact = 0,
    and the evaluation leaves them out. None without events (the program fallback)."""
    if not events:
        return None
    spans, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        spans.append((start, start + len(word)))
        pos = start + len(word)
    starts = [None] * len(spans)
    for char_pos, _, ms in sorted(events, key=lambda e: e[2]):
        c = char_pos - 1
        for i, (a, b) in enumerate(spans):
            if a <= c < b:
                t = ms / 1000.0 - first / ESPEAK_RATE
                starts[i] = t if starts[i] is None else min(starts[i], t)
                break
    duration = len(audio) / TARGET_RATE
    exact = [s is not None for s in starts]
    if not any(exact):
        return None
    _interpolate(starts, spans, duration)
    loud = np.abs(audio) > 0.02 * max(1e-9, float(np.abs(audio).max()))
    out = []
    for i, s in enumerate(starts):
        s = min(max(0.0, s), duration)
        nxt = starts[i + 1] if i + 1 < len(starts) else duration
        a, b = int(s * TARGET_RATE), int(max(s, min(nxt, duration)) * TARGET_RATE)
        audible = np.nonzero(loud[a:b])[0]
        end = (a + audible[-1] + 1) / TARGET_RATE if len(audible) else b / TARGET_RATE
        out.append([round(s, 3), round(max(s, end), 3), int(exact[i])])
    return out


def _interpolate(starts, spans, duration):
    """Fills missing starts: a run of words without events shares the time between the
    last word that has one and the next, in proportion to characters."""
    i = 0
    while i < len(starts):
        if starts[i] is not None:
            i += 1
            continue
        j = i
        while j < len(starts) and starts[j] is None:
            j += 1
        lo = i - 1 if i > 0 else None
        t0 = starts[lo] if lo is not None else 0.0
        t1 = starts[j] if j < len(starts) else duration
        group = range(lo if lo is not None else i, j)
        chars = [spans[k][1] - spans[k][0] for k in group]
        total, acc = max(1, sum(chars)), 0
        for k, n in zip(group, chars):
            if starts[k] is None:
                starts[k] = t0 + (t1 - t0) * acc / total
            acc += n
        i = j


def synth_one(voice, wpm, pitch, prange, text, effects=(), seed=0):
    """(int16 clip at 16 kHz, word timings or None, effects applied)."""
    if "lib" not in _state and "failed" not in _state:
        try:
            _init_library()
        except Exception as e:  # fall back to the program, once per worker
            _state["failed"] = repr(e)
            print(f"[synth] worker {os.getpid()}: libespeak-ng unavailable ({e!r}); using the program", flush=True)
    if "lib" in _state:
        raw, events = _synth_library(voice, wpm, pitch, prange, text)
    else:
        raw, events = _synth_program(voice, wpm, pitch, prange, text)
    x, first = trim(raw)
    if not len(x):
        return np.zeros(0, np.int16), None, []
    y = _resample(x).astype(np.float32)
    words = word_times(text, events, first, y)
    y, used = augment.apply(y, effects, seed) if effects else (y, [])
    return to_int16(y), words, used


def synth_job(job):
    """job: list of (index, voice, wpm, pitch, range, text, effects, seed)
    -> list of (index, int16 clip, word timings or None)."""
    out = []
    for index, voice, wpm, pitch, prange, text, effects, seed in job:
        try:
            clip, words, _ = synth_one(voice, wpm, pitch, prange, text, effects, seed)
        except Exception as e:  # one clip that cannot be made must not end a training run
            print(f"[synth] skipped a clip ({voice}): {e!r}"[:300], flush=True)
            clip, words = np.zeros(0, np.int16), None
        out.append((index, clip, words))
    return out


def plan_jobs(texts_by_lang, seed, held_out, job_size=64, effect_shares=None, label="", vtlp_share=None,
              shaped_share=None):
    """Spreads (lang, text) over jobs that interleave languages, so every language
    arrives early when results are consumed as they come. effect_shares: None for the
    training defaults (augment.CHAIN_SHARES), {} for clean clips. label: varies the voice
    draws between parts of a resumed training (the data position). vtlp_share: share of
    clips whose voice shape is perturbed (augment.vtlp; None: augment.VTLP_SHARE), chosen
    from each clip's seed, so the voices and other effects drawn do not depend on it;
    always 0 for held-out clips and with effect_shares={}. shaped_share: share of clips
    whose variant is one of SHAPED_VARIANTS (None: SHAPED_SHARE; install_shaped_variants
    must have run where they are synthesized), likewise 0 for held-out and clean clips."""
    if held_out or effect_shares == {}:
        vtlp_share = shaped_share = 0.0
    else:
        vtlp_share = augment.VTLP_SHARE if vtlp_share is None else vtlp_share
        shaped_share = SHAPED_SHARE if shaped_share is None else shaped_share
    rng = random.Random(f"voices-{seed}-{held_out}{label}")
    items, index = [], 0
    per_lang = {lang: list(texts) for lang, texts in texts_by_lang.items()}
    meta = []
    longest = max(len(v) for v in per_lang.values())
    for i in range(longest):
        for lang, texts in per_lang.items():
            if i < len(texts):
                voice, wpm, pitch, prange = voice_settings(rng, lang, held_out)
                effects = augment.draw_effects(rng, effect_shares)
                clip_seed = rng.randrange(1 << 30)
                if augment.vtlp_chosen(clip_seed, vtlp_share):
                    effects = ["vtlp"] + effects  # first: the speaker, then room and channel
                voice = shaped_voice(voice, clip_seed, shaped_share)
                items.append((index, voice, wpm, pitch, prange, texts[i], effects, clip_seed))
                meta.append({"lang": lang, "text": texts[i], "voice": voice, "wpm": wpm, "pitch": pitch,
                             "range": prange, "effects": effects})
                index += 1
    jobs = [items[i:i + job_size] for i in range(0, len(items), job_size)]
    return jobs, meta


if __name__ == "__main__":
    import time
    jobs, meta = plan_jobs({"en": ["Good morning, my name is Amy."], "de": ["Es sind heute 21 Grad draußen."]}, 0, True,
                           effect_shares={})
    t = time.time()
    clips = synth_job(jobs[0])
    for (i, clip, words), m in zip(clips, meta):
        print(m, f"{len(clip) / TARGET_RATE:.2f} s", words, "library" if "lib" in _state else _state.get("failed"))
    print(f"{(time.time() - t) / len(clips) * 1000:.0f} ms per clip")
