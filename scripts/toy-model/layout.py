"""30-second windows made of synthesized clips, and their Whisper training targets.

A window plan lists (clip, start second) placements of one language. Targets follow
Whisper's training format:
  speech, timestamps:    SOT lang TRANSCRIBE <|t0|> text <|t1|> <|t2|> text <|t3|> ... EOT
  speech, no timestamps: SOT lang TRANSCRIBE NOTIMESTAMPS text text ... EOT
  cut last utterance:    ... <|t_end|> <|t_cut_start|> EOT   (the segment continues past 30 s)
  silence / noise only:  SOT NOSPEECH EOT  (no-speech probability is read at the SOT step)
  with a prompt:         STARTOFPREV prompt... SOT ...  (the prompt's own tokens are not taught)
Prompts are what a long-form transcription gives each window after the first (the text
decoded so far, timestamps included, up to 223 tokens) or a user's initial prompt: a model
never shown one answers a prompted window with an empty transcript (found on the first
open-vocabulary checkpoint, 2026-12-01).
Most first utterances start before 1 s because decoders forbid a first timestamp past
max_initial_timestamp_index (50 = 1.00 s). A long-form transcription, though, starts each
window where the last segment ended, often in a pause of several seconds, and pauses
inside a window run longer than 2 s in real speech: the run-8 checkpoint, trained on
neither, answered such a window with an empty segment and the seek loop skipped 30 s of
speech (2026-12-01, `hark_eval.sh`). So training windows may also start late
(`late_start`: the first timestamp is then <|1.00|>, what the decoder allows) and hold
long pauses (`long_gap`).
"""
import random

import tokens as T

WINDOW_S = 30.0
RATE = 16000
MAX_TEXT_TOKENS = 200
MAX_PROMPT_TOKENS = 223  # n_text_ctx // 2 - 1: what Whisper's decoding keeps of a prompt
FIRST_START_MAX_S = 0.9
LATE_START_S = (1.0, 8.0)  # a late first utterance, as a seek loop's window after a pause meets it
LONG_GAP_S = (2.0, 8.0)


class ClipTable:
    """Per-clip metadata the planner needs: language, duration, text and its tokens."""

    def __init__(self):
        self.lang, self.duration, self.text, self.tokens = [], [], [], []
        self.by_lang = {}

    def add(self, lang, duration, text, token_ids):
        self.by_lang.setdefault(lang, []).append(len(self.lang))
        self.lang.append(lang)
        self.duration.append(duration)
        self.text.append(text)
        self.tokens.append(token_ids)


def plan_window(rng, table, lang, kind, max_utts=12, gap=(0.2, 2.0), allow_cut=True, late_start=0.0,
                long_gap=0.0):
    """kind: 'silence', 'single' or 'multi'. Returns a plan dict (times in seconds).
    late_start: the share of windows whose first utterance starts in LATE_START_S;
    long_gap: the share of pauses drawn from LONG_GAP_S instead of `gap`."""
    plan = {"lang": lang, "kind": kind, "placements": [], "cut": None}
    if kind == "silence":
        plan["audio_end"] = rng.uniform(3.0, WINDOW_S)
        return plan
    pool = table.by_lang[lang]
    t = rng.uniform(*LATE_START_S) if late_start and rng.random() < late_start else rng.uniform(0.0, FIRST_START_MAX_S)
    n_tokens, wanted = 0, 1 if kind == "single" else rng.randint(2, max_utts)
    for _ in range(wanted * 3):
        if len(plan["placements"]) >= wanted:
            break
        clip = rng.choice(pool)
        dur = table.duration[clip]
        if t + dur > WINDOW_S - 0.05 or n_tokens + len(table.tokens[clip]) + 2 > MAX_TEXT_TOKENS:
            continue
        plan["placements"].append((clip, t))
        n_tokens += len(table.tokens[clip]) + 2
        t += dur + rng.uniform(*(LONG_GAP_S if long_gap and rng.random() < long_gap else gap))
    if not plan["placements"]:  # every draw was too long: take the shortest clip
        clip = min(pool[:50], key=lambda c: table.duration[c])
        plan["placements"].append((clip, 0.0))
    last_clip, last_start = plan["placements"][-1]
    end = last_start + table.duration[last_clip]
    if kind == "multi" and allow_cut and rng.random() < 0.15:
        clip = rng.choice(pool)  # placed so that its audio runs past the window end
        start = max(t, WINDOW_S - 0.6 * table.duration[clip])
        if start < WINDOW_S - 0.4:
            plan["cut"] = (clip, start)
            end = WINDOW_S
    plan["audio_end"] = min(WINDOW_S, end + rng.uniform(0.2, 1.5))
    return plan


def draw_prompt(rng, table, lang, p_prompt=0.5, p_full=0.4):
    """A previous-text prompt for a window (or [] for none): the texts of other clips of
    the window's language, with timestamps the way a long-form loop's segments carry them
    half of the time, cut to its last n tokens (the longest prompt 40 % of the time: a
    long-form run's prompts are full after a few windows)."""
    if rng.random() >= p_prompt:
        return []
    want = MAX_PROMPT_TOKENS if rng.random() < p_full else rng.randint(1, MAX_PROMPT_TOKENS)
    pool = table.by_lang[lang]
    with_times = rng.random() < 0.5
    out, t = [], rng.uniform(0.0, 1.0)
    while len(out) < want:
        clip = rng.choice(pool)
        if with_times:
            end = min(WINDOW_S, t + table.duration[clip])
            out += [T.timestamp_token(t)] + list(table.tokens[clip]) + [T.timestamp_token(end)]
            t = end + rng.uniform(0.2, 1.5)
            if t > WINDOW_S - 1.0:
                t = rng.uniform(0.0, 1.0)
        else:
            out += list(table.tokens[clip])
    return out[-want:]


def targets(plan, table, timestamps, prompt=()):
    """Token ids from SOT (or STARTOFPREV and the prompt) to EOT, and how many of the first
    labels are not taught (the prompt's, and SOT's in a forced-language silence window)."""
    head = [T.STARTOFPREV] + list(prompt) if prompt else []
    ids, mask_sot = _targets(plan, table, timestamps)
    return head + ids, len(head) + int(mask_sot)


def _targets(plan, table, timestamps):
    if plan["kind"] == "silence":
        if timestamps:
            return [T.SOT, T.NOSPEECH, T.EOT], False
        # Also show forced prompts on silence an empty transcript; SOT's label stays masked
        # so this does not teach "speech" at the no-speech step.
        return [T.SOT, T.lang_token(plan["lang"]), T.TRANSCRIBE, T.NOTIMESTAMPS, T.EOT], True
    timestamps = timestamps or plan["cut"] is not None  # a cut segment needs its lone timestamp
    out = [T.SOT, T.lang_token(plan["lang"]), T.TRANSCRIBE]
    if not timestamps:
        out.append(T.NOTIMESTAMPS)
    for k, (clip, start) in enumerate(plan["placements"]):
        if timestamps:  # a late first utterance: the latest first timestamp decoders allow
            out.append(T.timestamp_token(min(start, 1.0) if k == 0 else start))
        out.extend(table.tokens[clip])
        if timestamps:
            out.append(T.timestamp_token(start + table.duration[clip]))
    if timestamps and plan["cut"] is not None:
        out.append(T.timestamp_token(plan["cut"][1]))
    out.append(T.EOT)
    return out, False


def reference_segments(plan, table):
    return [{"start": round(s, 3), "end": round(s + table.duration[c], 3), "text": table.text[c]}
            for c, s in plan["placements"]]


def draw_kind(rng, p_silence=0.08, p_single=0.22):
    r = rng.random()
    return "silence" if r < p_silence else "single" if r < p_silence + p_single else "multi"


if __name__ == "__main__":
    table = ClipTable()
    rng = random.Random(0)
    for i in range(40):
        table.add("en", rng.uniform(1.5, 6.0), f"Sentence {i}.", list(range(i % 7 + 3)))
    for kind in ("silence", "single", "multi", "multi"):
        p = plan_window(rng, table, "en", kind)
        ids, masked = targets(p, table, timestamps=True)
        print(kind, p["placements"][:3], p["cut"], round(p["audio_end"], 2), ids[:12], len(ids), masked)
