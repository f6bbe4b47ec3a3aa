"""A larger held-out set for the bundled toy model (models/hark-toy-speech), made the way
its own held-out set was: sentences from scripts/toy-model/textgen.py's held-out stream
(seed 1 + 1000, none of them in the 10 000 training utterances of seed 1), spoken by
espeak-ng with the held-out voice settings of the run that trained the checkpoint
(scripts/toy-model/synth.py as of commit f6c0af3: the base voices of that run, variants
m4 and f3 only, 140-180 words/min, pitch 35-65, range 40-70), random gain 0.5-1.4 and
white noise of std 1e-4..6e-3, 16 kHz mono PCM16 WAV.

Per language: SINGLE clips of one utterance and MULTI clips of 2-3 utterances with
0.4-1.5 s pauses; the first utterance starts within 0.1-0.9 s. The WAV files are written
to OUT_DIR (they are not committed: ~15 MB); references.json (the truth, voice settings
and each WAV's sha256, so a regenerated set can be checked) is written there too and is
committed as scripts/quant/heldout-references.json. Used by scripts/quant/heldout_wer.sh.

Needs espeak-ng (Debian: apt-get install espeak-ng; the library libespeak-ng1 is used
through ctypes) and numpy (Debian python3-numpy). Without scipy the resampling to 16 kHz
is linear interpolation (the training run used scipy's polyphase filter).

  /usr/bin/python3 scripts/quant/heldout_set.py OUT_DIR [--single 22] [--multi 8]
"""
import argparse
import hashlib
import json
import os
import random
import sys
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "toy-model"))
import synth  # noqa: E402  (espeak-ng through ctypes, trimming, resampling)
import textgen  # noqa: E402  (unchanged since the checkpoint's run)

RATE = 16000
TRAIN_SEED, TRAIN_CLIPS, HELDOUT_CLIPS = 1, 10000, 140  # train.py's defaults in that run
# The voices of the checkpoint's run (synth.py at f6c0af3); synth.VOICES has grown since.
RUN3_VOICES = {
    "en": ["en-us", "en", "en-gb-x-rp", "en-029", "en-gb-scotland"],
    "de": ["de"],
    "fr": ["fr", "fr-be"],
    "es": ["es", "es-419"],
}
HELDOUT_VARIANTS = ["m4", "f3"]


def heldout_texts(lang):
    """The run's 140 held-out utterances of one language, in the run's order."""
    train = set(textgen.sentences(lang, TRAIN_SEED, TRAIN_CLIPS))
    return textgen.sentences(lang, TRAIN_SEED + 1000, HELDOUT_CLIPS, exclude=train)


def voice(rng, lang):
    name = f"{rng.choice(RUN3_VOICES[lang])}+{rng.choice(HELDOUT_VARIANTS)}"
    return name, rng.randint(140, 180), rng.randint(35, 65), rng.randint(40, 70)


def render(rng, utterances):
    """Places (clip, text, voice) utterances in one clip: float audio and segments."""
    start = rng.uniform(0.1, 0.9)
    pieces, segments = [], []
    for clip, text, _ in utterances:
        pieces.append((int(round(start * RATE)), clip.astype(np.float32) / 32768.0 * rng.uniform(0.5, 1.4)))
        end = start + len(clip) / RATE
        segments.append({"start": round(start, 3), "end": round(end, 3), "text": text})
        start = end + rng.uniform(0.4, 1.5)
    n = int((segments[-1]["end"] + rng.uniform(0.3, 0.8)) * RATE)
    x = np.zeros(n, np.float32)
    for s, piece in pieces:
        x[s:s + len(piece)] += piece[: n - s]
    noise = float(np.exp(rng.uniform(np.log(1e-4), np.log(6e-3))))
    x += np.random.default_rng(rng.randrange(1 << 30)).standard_normal(n).astype(np.float32) * noise
    return np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16), segments, noise


def write_wav(path, pcm):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def make_language(lang, out_dir, single, multi, rng):
    texts = heldout_texts(lang)
    needed = single + 3 * multi
    if needed > len(texts):
        raise SystemExit(f"[heldout] {lang}: {needed} utterances asked for, the run held out {len(texts)}")
    pool = []
    for text in texts[:needed]:
        v = voice(rng, lang)
        clip, _, _ = synth.synth_one(*v, text)
        if len(clip) < RATE // 5:
            raise SystemExit(f"[heldout] espeak-ng gave no audio for {v[0]}: check the espeak-ng install")
        pool.append((clip, text, v))
    entries, used = [], 0
    for kind, count in (("single", single), ("multi", multi)):
        for i in range(count):
            take = 1 if kind == "single" else rng.randint(2, 3)
            utts = pool[used:used + take]
            used += take
            pcm, segments, noise = render(rng, utts)
            name = f"{lang}-{kind}-{i:02d}.wav"
            write_wav(os.path.join(out_dir, name), pcm)
            entries.append({"file": name, "lang": lang, "kind": kind,
                            "reference": " ".join(s["text"] for s in segments), "segments": segments,
                            "voices": [list(u[2]) for u in utts], "noise_std": round(noise, 6),
                            "seconds": round(len(pcm) / RATE, 3),
                            "sha256": hashlib.sha256(pcm.tobytes()).hexdigest()})
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--single", type=int, default=22, help="one-utterance clips per language")
    ap.add_argument("--multi", type=int, default=8, help="clips of 2-3 utterances per language")
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = random.Random(f"quant-heldout-{args.seed}")
    entries = []
    for lang in textgen.LANGS:
        entries += make_language(lang, args.out_dir, args.single, args.multi, rng)
    with open(os.path.join(args.out_dir, "references.json"), "w", encoding="utf-8") as f:
        json.dump(entries, f, ensure_ascii=False, indent=1)
    total = sum(e["seconds"] for e in entries)
    print(f"{len(entries)} clips, {total:.0f} s of audio, in {args.out_dir}"
          f" ({'libespeak-ng' if 'lib' in synth._state else synth._state.get('failed')})")


if __name__ == "__main__":
    main()
