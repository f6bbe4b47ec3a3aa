"""Held-out evaluation audio, without torch (so train.py --dry-run can make and inspect
it on the development machine): short windows (< 30 s, one or several utterances),
silence and noise-only windows, degraded copies (telephone, Opus, MP3, reverberation,
noise at 5-30 dB SNR) and long-form recordings of 1-3 minutes with pauses. Every speech
item carries its reference text, utterance segments and, where espeak-ng reported them,
word boundaries (seconds from the item's start).
"""
import io
import os
import random
import wave

import numpy as np

import augment
import layout

RATE = layout.RATE
NOISE_TILTS = {"white": 0, "pink": 1, "brown": 2}


class HeldOut:
    """Held-out clips: a ClipTable plus audio and word timings per clip."""

    def __init__(self, eval_clips, eval_meta, tok):
        self.table, self.audio, self.words, self.voices = layout.ClipTable(), [], [], []
        for index, clip, words in sorted(eval_clips, key=lambda c: c[0]):
            if len(clip) >= RATE // 5:
                m = eval_meta[index]
                self.table.add(m["lang"], len(clip) / RATE, m["text"], tok.encode(" " + m["text"]))
                self.audio.append(clip)
                self.words.append(words)
                self.voices.append(m.get("voice"))  # "en-029+norbert"; hark_eval.py records it for by_voice.py


def _word_refs(held, placements):
    """Reference words with absolute times ("exact": from an espeak event, not
    interpolated), or None when a clip has no word timings."""
    out = []
    for clip, start in placements:
        timings = held.words[clip]
        words = held.table.text[clip].split()
        if timings is None or len(timings) != len(words):
            return None
        out += [{"word": w, "start": round(start + t[0], 3), "end": round(start + t[1], 3), "exact": bool(t[2])}
                for w, t in zip(words, timings)]
    return out


def render(rng, plan, held, name, noise=None, tilt="white", length_s=None):
    """One item: the plan's clips at random gains over noise (std `noise`, None = random
    1e-4..6e-3) of the given colour."""
    n = int((length_s or min(layout.WINDOW_S, plan["audio_end"])) * RATE)
    x = np.zeros(n, np.float32)
    for clip, start in plan["placements"]:
        s = int(round(start * RATE))
        piece = held.audio[clip][: max(0, n - s)].astype(np.float32) / 32768.0 * rng.uniform(0.5, 1.4)
        x[s: s + len(piece)] += piece
    if noise is None:
        noise = float(np.exp(rng.uniform(np.log(1e-4), np.log(6e-3))))
    if noise > 0:
        x += augment.colored_noise(n, np.random.default_rng(rng.randrange(1 << 30)), NOISE_TILTS[tilt]) * noise
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)
    return {"name": name, "lang": plan["lang"], "kind": plan["kind"], "pcm": pcm, "condition": "clean",
            "segments": layout.reference_segments(plan, held.table),
            "text": " ".join(held.table.text[c] for c, _ in plan["placements"]), "plan": plan,
            "words": _word_refs(held, plan["placements"]) if plan["placements"] else [], "noise": [tilt, noise]}


def windows(held, seed=7, counts=(10, 20, 24)):
    """(single per language, multi per language, silence/noise) deterministic windows; the
    first 4 silence windows are digital silence, the others white/pink/brown noise."""
    rng = random.Random(seed)
    items = []
    for lang in sorted(held.table.by_lang):
        for kind, count in (("single", counts[0]), ("multi", counts[1])):
            for i in range(count):
                plan = layout.plan_window(rng, held.table, lang, kind, max_utts=5, gap=(0.4, 1.5), allow_cut=False)
                items.append(render(rng, plan, held, f"{lang}-{kind}-{i:02d}"))
    for i in range(counts[2]):
        plan = {"lang": None, "kind": "silence", "placements": [], "cut": None, "audio_end": rng.uniform(4.0, 30.0)}
        tilt = ("white", "pink", "brown")[i % 3]
        noise = 0.0 if i < 4 else float(np.exp(rng.uniform(np.log(1e-4), np.log(2e-2))))
        items.append(render(rng, plan, held, f"silence-{i:02d}", noise=noise, tilt=tilt))
    return items


CONDITIONS = ("telephone", "opus", "mp3", "reverb", "noise")


def degraded(items, seed=11):
    """A copy of each speech item through one channel (cycling over CONDITIONS): the
    same references, a harder signal. Noise is pink or white at 5-30 dB SNR."""
    rng = random.Random(seed)
    out = []
    for i, it in enumerate(x for x in items if x["kind"] != "silence"):
        cond = CONDITIONS[i % len(CONDITIONS)]
        x = it["pcm"].astype(np.float32) / 32768.0
        nrng = np.random.default_rng(rng.randrange(1 << 30))
        if cond == "noise":
            y = augment.add_noise(x, nrng, rng.uniform(5.0, 30.0), alpha=rng.choice((0, 1)))
        else:
            y, used = augment.apply(x, [cond], rng.randrange(1 << 30))
            if cond not in used:
                continue  # codec library missing here
        pcm = np.clip(np.round(y * 32767.0), -32768, 32767).astype(np.int16)
        out.append(dict(it, name=f"{it['name']}-{cond}", pcm=pcm, condition=cond))
    return out


def longform(held, lang, seconds, seed, name):
    """One recording of about `seconds` (60-180 s): held-out utterances of one language in
    a row, pauses of 0.3-2.5 s (a few of 3-6 s), mild noise throughout."""
    rng = random.Random(f"{seed}-{lang}-{name}")
    pool = held.table.by_lang[lang]
    t, placements = rng.uniform(0.2, 1.0), []
    order = list(pool)
    rng.shuffle(order)
    for clip in order * 4:
        dur = held.table.duration[clip]
        if t + dur > seconds:
            break
        placements.append((clip, t))
        t += dur + (rng.uniform(3.0, 6.0) if rng.random() < 0.1 else rng.uniform(0.3, 2.5))
    end = (placements[-1][1] + held.table.duration[placements[-1][0]] + 0.5) if placements else seconds
    plan = {"lang": lang, "kind": "long", "placements": placements, "cut": None, "audio_end": end}
    return render(rng, plan, held, name, noise=float(np.exp(rng.uniform(np.log(1e-4), np.log(3e-3)))),
                  tilt=rng.choice(("white", "pink")), length_s=end)


def wav_bytes(pcm):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def write_wavs(items, folder):
    os.makedirs(folder, exist_ok=True)
    for it in items:
        with open(os.path.join(folder, it["name"] + ".wav"), "wb") as f:
            f.write(wav_bytes(it["pcm"]))
