"""Decoding goldens for the synthetic tiny checkpoint (scripts/oracle/synthetic.py).

Input: the reference feature extractor's log-mel of a >= 60 s clip made of jfk.wav
repeated with silent gaps (saved as longform_mel.npy, content frames only, so the C++
tests feed the very same mel). Its first 3000 frames are the single-window input.

Two references are recorded:
  * `hf_*`: transformers' generate() (an independent implementation);
  * `openai_*`: a direct port of OpenAI whisper's algorithm (decoding.py / timing.py)
    driven by the same transformers model for the forward passes.
The C++ tests follow OpenAI's algorithm; where transformers differs they say so.

  python3 scripts/oracle/decoding.py --out DIR
"""
import argparse
import json
import os
import sys
import time
import traceback
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SIZE = "tiny"
N_FRAMES = 3000
SAMPLE_LEN = 224
GAP_SECONDS = 1.5
REPEATS = 5
OUT_DIR = ["."]
MAX_WINDOWS = 40  # a cap in case random weights seek in tiny steps


# ---------------------------------------------------------------- numpy-only parts
def median_filter(x, width):
    """OpenAI's median filter over the last axis with reflect padding."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.sort(windows, axis=-1)[..., pad]


def dtw(x):
    """OpenAI's dtw_cpu + backtrace on a cost matrix x [N, M] (float32 costs)."""
    n, m = x.shape
    cost = np.full((n + 1, m + 1), np.inf, dtype=np.float32)
    trace = -np.ones((n + 1, m + 1), dtype=np.float32)
    cost[0, 0] = 0
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
            if c0 < c1 and c0 < c2:
                c, t = c0, 0
            elif c1 < c0 and c1 < c2:
                c, t = c1, 1
            else:
                c, t = c2, 2
            cost[i, j] = x[i - 1, j - 1] + c
            trace[i, j] = t
    i, j = n, m
    trace[0, :] = 2
    trace[:, 0] = 1
    path = []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        if trace[i, j] == 0:
            i, j = i - 1, j - 1
        elif trace[i, j] == 1:
            i -= 1
        else:
            j -= 1
    path = np.array(path)[::-1, :].T
    return path[0], path[1]


def merge_punctuations(alignment, prepended, appended):
    i, j = len(alignment) - 2, len(alignment) - 1
    while i >= 0:
        prev, foll = alignment[i], alignment[j]
        if prev["word"].startswith(" ") and prev["word"].strip() in prepended:
            foll["word"] = prev["word"] + foll["word"]
            foll["tokens"] = prev["tokens"] + foll["tokens"]
            prev["word"], prev["tokens"] = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(alignment):
        prev, foll = alignment[i], alignment[j]
        if not prev["word"].endswith(" ") and foll["word"] in appended:
            prev["word"] = prev["word"] + foll["word"]
            prev["tokens"] = prev["tokens"] + foll["tokens"]
            foll["word"], foll["tokens"] = "", []
        else:
            i = j
        j += 1


def compression_ratio(text):
    b = text.encode("utf-8")
    return len(b) / len(zlib.compress(b)) if b else 0.0


def long_audio():
    from scipy.io import wavfile
    rate, data = wavfile.read(os.path.join("tests", "data", "audio", "jfk.wav"))
    assert rate == 16000 and data.dtype == np.int16
    x = data.astype(np.float32) / 32768.0
    gap = np.zeros(int(GAP_SECONDS * 16000), dtype=np.float32)
    return np.concatenate([np.concatenate([x, gap]) for _ in range(REPEATS)])


# ---------------------------------------------------------------- reference setup
class Ref:
    """The synthetic model, the tokenizer and the special ids, as OpenAI names them."""

    def __init__(self, device, model=None, alignment_heads=None):
        import torch
        import synthetic
        import tokenizer as tok
        self.torch = torch
        self.device = device
        if model is None:
            model = synthetic.build_hf_model(SIZE, device=device)
        self.model = model
        cfg = model.config
        n_dec, heads, n_vocab = cfg.decoder_layers, cfg.decoder_attention_heads, cfg.vocab_size
        self.n_dec, self.heads, self.n_vocab = n_dec, heads, n_vocab
        self.num_languages = 100 if n_vocab >= 51866 else 99
        self.enc = tok.make_encoding("multilingual.tiktoken", self.num_languages)
        self.non_speech = tok.non_speech_tokens(self.enc)
        self.eot = 50257
        self.sot = 50258
        self.language_tokens = list(range(50259, 50259 + self.num_languages))
        self.language_codes = [code for code, _ in tok.LANGUAGES[: self.num_languages]]
        self.translate = 50259 + self.num_languages
        self.transcribe = self.translate + 1
        self.sot_lm = self.transcribe + 1
        self.sot_prev = self.sot_lm + 1
        self.no_speech = self.sot_prev + 1
        self.no_timestamps = self.no_speech + 1
        self.timestamp_begin = self.no_timestamps + 1
        self.en = 50259
        self.sot_sequence = [self.sot, self.en, self.transcribe]
        self.suppress = sorted(set(self.non_speech + [self.sot, self.sot_prev, self.sot_lm, self.no_speech]))
        # OpenAI's default alignment heads for an unofficial model: the last half of the
        # decoder layers, every head.
        self.alignment_heads = alignment_heads or [[l, h] for l in range(n_dec // 2, n_dec) for h in range(heads)]

    def decode_text(self, tokens):
        return self.enc.decode([t for t in tokens if t < self.eot])

    def encoder(self, mel):
        t = self.torch
        with t.no_grad():
            x = t.from_numpy(np.ascontiguousarray(mel, dtype=np.float32))[None].to(self.device)
            return self.model.model.encoder(x).last_hidden_state

    def logits(self, enc, rows, attentions=False):
        """Full-sequence logits [B, T, V] (no cache: simple and exact)."""
        t = self.torch
        from transformers.modeling_outputs import BaseModelOutput
        with t.no_grad():
            ids = t.tensor(rows, device=self.device)
            e = enc.expand(len(rows), -1, -1)
            out = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=e), decoder_input_ids=ids,
                             output_attentions=attentions)
        return out

    def generation_config(self):
        from transformers import GenerationConfig
        return GenerationConfig(
            decoder_start_token_id=self.sot, eos_token_id=self.eot, pad_token_id=self.eot, bos_token_id=self.eot,
            is_multilingual=True, max_length=448, no_timestamps_token_id=self.no_timestamps,
            prev_sot_token_id=self.sot_prev, max_initial_timestamp_index=50, suppress_tokens=self.suppress,
            begin_suppress_tokens=[220, self.eot], alignment_heads=self.alignment_heads,
            lang_to_id={f"<|{c}|>": tid for c, tid in zip(self.language_codes, self.language_tokens)},
            task_to_id={"transcribe": self.transcribe, "translate": self.translate},
            forced_decoder_ids=None)


# ---------------------------------------------------------------- OpenAI's algorithm
def apply_filters(ref, logits, rows, sample_begin, without_timestamps=False, max_initial_index=50):
    """SuppressBlank, SuppressTokens, ApplyTimestampRules on logits [B, V] (in place)."""
    t = ref.torch
    inf = float("inf")
    if len(rows[0]) == sample_begin:
        logits[:, ref.enc.encode(" ") + [ref.eot]] = -inf
    logits[:, ref.suppress] = -inf
    if without_timestamps:
        return
    tb = ref.timestamp_begin
    logits[:, ref.no_timestamps] = -inf
    for k, row in enumerate(rows):
        seq = row[sample_begin:]
        last_ts = len(seq) >= 1 and seq[-1] >= tb
        penult_ts = len(seq) < 2 or seq[-2] >= tb
        if last_ts:
            if penult_ts:
                logits[k, tb:] = -inf
            else:
                logits[k, : ref.eot] = -inf
        stamps = [x for x in seq if x >= tb]
        if stamps:
            last = stamps[-1] if (last_ts and not penult_ts) else stamps[-1] + 1
            logits[k, tb:last] = -inf
    if len(rows[0]) == sample_begin:
        logits[:, :tb] = -inf
        logits[:, tb + max_initial_index + 1:] = -inf
    logprobs = t.log_softmax(logits.float(), dim=-1)
    for k in range(len(rows)):
        if logprobs[k, tb:].logsumexp(dim=-1) > logprobs[k, :tb].max():
            logits[k, :tb] = -inf


def initial_tokens(ref, prompt=None, without_timestamps=False):
    tokens = list(ref.sot_sequence) + ([ref.no_timestamps] if without_timestamps else [])
    if prompt:
        tokens = [ref.sot_prev] + prompt[-223:] + tokens
    return tokens


def openai_greedy(ref, enc, prompt=None, without_timestamps=False):
    t = ref.torch
    from transformers.modeling_outputs import BaseModelOutput
    init = initial_tokens(ref, prompt, without_timestamps)
    begin = len(init)
    rows = [list(init)]
    total = 0.0
    sot_index = init.index(ref.sot)
    no_speech = None
    margins = []
    past, feed = None, list(init)
    for i in range(SAMPLE_LEN):
        with t.no_grad():
            out = ref.model(encoder_outputs=BaseModelOutput(last_hidden_state=enc),
                            decoder_input_ids=t.tensor([feed], device=ref.device), past_key_values=past,
                            use_cache=True)
        past = out.past_key_values
        if i == 0:
            no_speech = float(out.logits[0, sot_index].float().softmax(-1)[ref.no_speech])
        logits = out.logits[:, -1].float().clone()
        apply_filters(ref, logits, rows, begin, without_timestamps)
        nxt = int(logits[0].argmax())
        lp = t.log_softmax(logits[0], dim=-1)
        total = float(np.float32(total) + np.float32(lp[nxt].item()))
        top2 = t.topk(logits[0], 2).values
        margins.append(float(top2[0] - top2[1]))
        rows[0].append(nxt)
        feed = [nxt]
        if nxt == ref.eot or len(rows[0]) > 448:
            break
    sampled = rows[0][begin:]
    if ref.eot in sampled:
        sampled = sampled[: sampled.index(ref.eot)]
    text = ref.decode_text(sampled).strip()
    return {"tokens": sampled, "sum_logprob": total, "avg_logprob": total / (len(sampled) + 1),
            "no_speech_prob": no_speech, "text": text, "compression_ratio": compression_ratio(text),
            "min_margin": min(margins) if margins else None, "initial_tokens": init}


def openai_beam(ref, enc, beam_size=5, patience=1.0, length_penalty=None):
    t = ref.torch
    init = initial_tokens(ref)
    begin = len(init)
    rows = [list(init) for _ in range(beam_size)]
    sums = [0.0] * beam_size
    finished = {}
    max_candidates = round(beam_size * patience)
    # How close the search came to another outcome: at each step the gap between the last
    # candidate kept and the first one dropped (a logit moved by less than that cannot
    # change which sequences go on), and at the end the gap between the best two ranked
    # candidates.
    margins = []
    for _ in range(SAMPLE_LEN):
        logits = ref.logits(enc, rows).logits[:, -1].float().clone()
        apply_filters(ref, logits, rows, begin)
        logprobs = t.log_softmax(logits, dim=-1)
        scores, sources = {}, {}
        for j in range(beam_size):
            vals, idx = logprobs[j].topk(beam_size + 1)
            for lp, tok in zip(vals.tolist(), idx.tolist()):
                seq = tuple(rows[j] + [tok])
                scores[seq] = float(np.float32(sums[j]) + np.float32(lp))
                sources[seq] = j
        nxt, nsums, newly = [], [], {}
        ranked = sorted(scores, key=scores.get, reverse=True)
        for n, seq in enumerate(ranked):
            if seq[-1] == ref.eot:
                newly[seq] = scores[seq]
            else:
                nxt.append(list(seq))
                nsums.append(scores[seq])
                if len(nxt) == beam_size:
                    dropped = [scores[q] for q in ranked[n + 1:] if q[-1] != ref.eot]
                    if dropped:
                        margins.append(scores[seq] - dropped[0])
                    break
        rows, sums = nxt, nsums
        for seq in sorted(newly, key=newly.get, reverse=True):
            if len(finished) >= max_candidates:
                break
            finished[seq] = newly[seq]
        if len(finished) >= max_candidates or len(rows[0]) > 448:
            break
    if len(finished) < beam_size:
        for j in list(np.argsort(sums))[::-1]:
            finished[tuple(rows[j] + [ref.eot])] = sums[j]
            if len(finished) >= beam_size:
                break
    cands = [list(s[begin:]) for s in finished]
    cands = [c[: c.index(ref.eot)] for c in cands]
    lps = list(finished.values())
    def score(lp, n):
        pen = n if length_penalty is None else ((5 + n) / 6) ** length_penalty
        return lp / pen
    ranks = [score(lp, len(c)) for lp, c in zip(lps, cands)]
    best = int(np.argmax(ranks))
    if len(ranks) > 1:
        top = sorted(ranks, reverse=True)
        margins.append(top[0] - top[1])
    text = ref.decode_text(cands[best]).strip()
    return {"tokens": cands[best], "sum_logprob": lps[best], "avg_logprob": lps[best] / (len(cands[best]) + 1),
            "text": text, "candidates": [{"tokens": c, "sum_logprob": lp} for c, lp in zip(cands, lps)],
            "min_margin": min(margins) if margins else None}


def language_probs(ref, enc):
    full = ref.logits(enc, [[ref.sot]]).logits[0, 0].float()
    probs = full[ref.language_tokens].softmax(-1).tolist()
    return dict(zip(ref.language_codes, probs))


def split_words(ref, tokens):
    import tokenizer as tok
    return tok.split_on_spaces(ref.enc, tokens, ref.eot)


def find_alignment(ref, enc, text_tokens, num_frames):
    """OpenAI's find_alignment; transformers' cross-attention weights are softmaxed over
    all 1500 frames, so they are renormalised over the kept frames (= OpenAI's softmax)."""
    t = ref.torch
    if not text_tokens:
        return [], np.zeros((0, num_frames // 2), dtype=np.float32)
    tokens = ref.sot_sequence + [ref.no_timestamps] + text_tokens + [ref.eot]
    out = ref.logits(enc, [tokens], attentions=True)
    sampled = out.logits[0, len(ref.sot_sequence):, : ref.eot].float()
    probs = sampled.softmax(-1).cpu().numpy()
    text_probs = [float(probs[i, tok_]) for i, tok_ in enumerate(text_tokens)]
    w = t.stack([out.cross_attentions[l][0, h] for l, h in ref.alignment_heads]).float()
    w = w[:, :, : num_frames // 2]
    w = w / w.sum(-1, keepdim=True)
    std, mean = t.std_mean(w, dim=-2, keepdim=True, correction=0)
    w = ((w - mean) / std).cpu().numpy()
    w = median_filter(w, 7)
    matrix = w.mean(axis=0)[len(ref.sot_sequence): -1]
    text_idx, time_idx = dtw(-matrix.astype(np.float64))
    words, word_tokens = split_words(ref, text_tokens + [ref.eot])
    if len(word_tokens) <= 1:
        return [], matrix
    bounds = np.pad(np.cumsum([len(x) for x in word_tokens[:-1]]), (1, 0))
    jumps = np.pad(np.diff(text_idx), (1, 0), constant_values=1).astype(bool)
    jump_times = time_idx[jumps] / 50.0
    starts, ends = jump_times[bounds[:-1]], jump_times[bounds[1:]]
    probs = [float(np.mean(text_probs[i:j])) for i, j in zip(bounds[:-1], bounds[1:])]
    return [{"word": w_, "tokens": list(tk), "start": float(s), "end": float(e), "probability": p}
            for w_, tk, s, e, p in zip(words, word_tokens, starts, ends, probs)], matrix


def window_segments(ref, tokens, time_offset, segment_size):
    """The seek loop's segment split of one window (OpenAI transcribe.py)."""
    tb = ref.timestamp_begin
    is_ts = [x >= tb for x in tokens]
    single_end = is_ts[-2:] == [False, True]
    consecutive = [i + 1 for i in range(len(tokens) - 1) if is_ts[i] and is_ts[i + 1]]
    segs = []
    if consecutive:
        slices = consecutive + ([len(tokens)] if single_end else [])
        last = 0
        for cur in slices:
            part = tokens[last:cur]
            segs.append({"start": time_offset + (part[0] - tb) * 0.02, "end": time_offset + (part[-1] - tb) * 0.02,
                         "tokens": part})
            last = cur
        advance = segment_size if single_end else (tokens[last - 1] - tb) * 2
    else:
        duration = segment_size * 0.01
        stamps = [x for x in tokens if x >= tb]
        if stamps and stamps[-1] != tb:
            duration = (stamps[-1] - tb) * 0.02
        segs.append({"start": time_offset, "end": time_offset + duration, "tokens": list(tokens)})
        advance = segment_size
    for s in segs:
        s["text"] = ref.decode_text(s["tokens"])
    return segs, advance, single_end


def add_word_timestamps(ref, enc, segments, num_frames, seek, last_speech):
    prepend, append = "\"'\u201c\u00bf([{-", "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001"
    per_seg = [[x for x in s["tokens"] if x < ref.eot] for s in segments]
    text_tokens = [x for p in per_seg for x in p]
    alignment, _ = find_alignment(ref, enc, text_tokens, num_frames)
    durations = np.array([a["end"] - a["start"] for a in alignment])
    durations = durations[durations.nonzero()]
    median = min(0.7, float(np.median(durations))) if len(durations) > 0 else 0.0
    max_d = median * 2
    if len(durations) > 0:
        marks = ".\u3002!\uff01?\uff1f"
        for i in range(1, len(alignment)):
            if alignment[i]["end"] - alignment[i]["start"] > max_d:
                if alignment[i]["word"] in marks:
                    alignment[i]["end"] = alignment[i]["start"] + max_d
                elif alignment[i - 1]["word"] in marks:
                    alignment[i]["start"] = alignment[i]["end"] - max_d
    merge_punctuations(alignment, prepend, append)
    offset = seek * 160 / 16000
    wi = 0
    for seg, toks in zip(segments, per_seg):
        saved, words = 0, []
        while wi < len(alignment) and saved < len(toks):
            a = alignment[wi]
            if a["word"]:
                words.append({"word": a["word"], "start": round(offset + a["start"], 2),
                              "end": round(offset + a["end"], 2), "probability": a["probability"]})
            saved += len(a["tokens"])
            wi += 1
        if words:
            if words[0]["end"] - last_speech > median * 4 and (
                    words[0]["end"] - words[0]["start"] > max_d
                    or (len(words) > 1 and words[1]["end"] - words[0]["start"] > max_d * 2)):
                if len(words) > 1 and words[1]["end"] - words[1]["start"] > max_d:
                    b = max(words[1]["end"] / 2, words[1]["end"] - max_d)
                    words[0]["end"] = words[1]["start"] = b
                words[0]["start"] = max(0, words[0]["end"] - max_d)
            if seg["start"] < words[0]["end"] and seg["start"] - 0.5 > words[0]["start"]:
                words[0]["start"] = max(0, min(words[0]["end"] - median, seg["start"]))
            else:
                seg["start"] = words[0]["start"]
            if seg["end"] > words[-1]["start"] and seg["end"] + 0.5 < words[-1]["end"]:
                words[-1]["end"] = max(words[-1]["start"] + median, seg["end"])
            else:
                seg["end"] = words[-1]["end"]
            last_speech = seg["end"]
        seg["words"] = words
    return alignment, last_speech


def pad_window(mel, seek, size):
    seg = np.zeros((mel.shape[0], N_FRAMES), dtype=np.float32)
    seg[:, :size] = mel[:, seek: seek + size]
    return seg


def openai_transcribe(ref, mel, word_timestamps=False):
    """OpenAI's seek loop at temperature 0 (no sampling: deterministic), default thresholds."""
    content = mel.shape[1]
    seek, all_tokens, all_segments, reset_since, last_speech = 0, [], [], 0, 0.0
    windows = []
    while seek < content and len(windows) < MAX_WINDOWS:
        size = min(N_FRAMES, content - seek)
        offset = seek * 0.01
        enc = ref.encoder(pad_window(mel, seek, size))
        r = openai_greedy(ref, enc, prompt=all_tokens[reset_since:] or None)
        windows.append({"seek": seek, "tokens": r["tokens"], "avg_logprob": r["avg_logprob"],
                        "no_speech_prob": r["no_speech_prob"], "compression_ratio": r["compression_ratio"],
                        "min_margin": r["min_margin"], "prompt_len": len(all_tokens[reset_since:][-223:])})
        if r["no_speech_prob"] > 0.6 and not r["avg_logprob"] > -1.0:
            seek += size
            continue
        previous_seek = seek
        segs, advance, single_end = window_segments(ref, r["tokens"], offset, size)
        seek += advance
        if word_timestamps:
            add_word_timestamps(ref, enc, segs, size, previous_seek, last_speech)
            ends = [w["end"] for s_ in segs for w in s_["words"]]
            last_end = ends[-1] if ends else (segs[-1]["end"] if segs else None)
            if not single_end and last_end is not None and last_end > offset:
                seek = round(last_end * 100)
            if last_end is not None:
                last_speech = last_end
        for s in segs:
            s.update(seek=previous_seek, avg_logprob=r["avg_logprob"], no_speech_prob=r["no_speech_prob"],
                     compression_ratio=r["compression_ratio"], temperature=0.0)
            if s["start"] == s["end"] or s["text"].strip() == "":
                s["text"], s["tokens"], s["words"] = "", [], []
            all_segments.append(s)
            all_tokens.extend(s["tokens"])
    return {"segments": all_segments, "windows": windows, "content_frames": content, "final_seek": seek,
            "truncated": seek < content,
            "text": ref.decode_text(all_tokens)}


def hf_tokens(ref, seq):
    seq = [int(x) for x in seq]
    while seq and seq[0] in (ref.sot, ref.en, ref.transcribe, ref.translate, ref.no_timestamps):
        seq = seq[1:]
    if ref.eot in seq:
        seq = seq[: seq.index(ref.eot)]
    return seq


def hf_generate(ref, mel, **kw):
    t = ref.torch
    x = t.from_numpy(np.ascontiguousarray(mel))[None].to(ref.device)
    with t.no_grad():
        out = ref.model.generate(input_features=x, generation_config=ref.generation_config(), language="en",
                                 task="transcribe", **kw)
    return out


def run_part(results, name, fn):
    t0 = time.time()
    results.setdefault("_order", []).append(name)
    try:
        results[name] = fn()
        print(f"{name}: ok in {time.time() - t0:.1f}s", flush=True)
    except Exception as e:  # keep the other parts
        results[name] = {"error": f"{type(e).__name__}: {e}"}
        traceback.print_exc()
        print(f"{name}: FAILED in {time.time() - t0:.1f}s", flush=True)
    results.setdefault("_seconds", {})[name] = time.time() - t0
    with open(os.path.join(OUT_DIR[0], "decoding.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)


TOY_DIR = os.path.join("models", "hark-toy-speech")


def toy_parts(results, device, mel, window, out):
    """The same checks on the project's trained toy checkpoint (real end of text,
    timestamps and no-speech paths), with its measured alignment heads."""
    if not os.path.isdir(TOY_DIR):
        results["toy"] = {"error": "no models/hark-toy-speech"}
        return
    import torch
    from transformers import WhisperForConditionalGeneration
    with open(os.path.join(TOY_DIR, "generation_config.json")) as f:
        heads = json.load(f).get("alignment_heads")
    model = WhisperForConditionalGeneration.from_pretrained(TOY_DIR, attn_implementation="eager",
                                                            dtype=torch.float32).to(device).eval()
    ref = Ref(device, model=model, alignment_heads=heads)
    results["toy_alignment_heads"] = ref.alignment_heads
    enc = ref.encoder(window)
    run_part(results, "toy_language_probs", lambda: language_probs(ref, enc))
    run_part(results, "toy_greedy", lambda: openai_greedy(ref, enc))
    run_part(results, "toy_beam5", lambda: openai_beam(ref, enc, 5))

    def words():
        g = results["toy_greedy"]
        segs, _, _ = window_segments(ref, g["tokens"], 0.0, N_FRAMES)
        alignment, matrix = find_alignment(ref, enc, [x for x in g["tokens"] if x < ref.eot], N_FRAMES)
        np.save(os.path.join(out, "toy_alignment_matrix.npy"), matrix.astype(np.float32))
        add_word_timestamps(ref, enc, segs, N_FRAMES, 0, 0.0)
        return {"raw_alignment": alignment, "segments": segs}
    run_part(results, "toy_words", words)
    run_part(results, "toy_longform", lambda: openai_transcribe(ref, mel))
    run_part(results, "toy_longform_words", lambda: openai_transcribe(ref, mel, word_timestamps=True))

    def hf_greedy():
        out_ = hf_generate(ref, window, return_timestamps=True, max_new_tokens=SAMPLE_LEN, num_beams=1,
                           do_sample=False)
        seq = out_[0] if not hasattr(out_, "sequences") else out_.sequences[0]
        return {"tokens": hf_tokens(ref, seq.tolist())}
    run_part(results, "toy_hf_greedy", hf_greedy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    OUT_DIR[0] = args.out
    import torch
    from transformers import WhisperFeatureExtractor
    import synthetic
    device = synthetic.exact_torch()
    ref = Ref(device)

    audio = long_audio()
    fe = WhisperFeatureExtractor(feature_size=80)
    # OpenAI pads 30 s of zeros before the STFT; keep only the content frames.
    padded = np.concatenate([audio, np.zeros(480000, dtype=np.float32)])
    mel = fe(padded, sampling_rate=16000, return_tensors="np", padding="longest",
             truncation=False).input_features[0].astype(np.float32)
    content = len(audio) // 160
    mel = np.ascontiguousarray(mel[:, :content])
    np.save(os.path.join(args.out, "longform_mel.npy"), mel)
    window = pad_window(mel, 0, N_FRAMES)
    enc = ref.encoder(window)

    results = {"size": SIZE, "content_frames": content, "audio_seconds": len(audio) / 16000,
               "suppress_tokens": ref.suppress, "alignment_heads": ref.alignment_heads,
               "torch": torch.__version__, "device": device}
    run_part(results, "language_probs", lambda: language_probs(ref, enc))
    run_part(results, "openai_greedy", lambda: openai_greedy(ref, enc))
    run_part(results, "openai_greedy_notimestamps", lambda: openai_greedy(ref, enc, without_timestamps=True))
    prompt = ref.enc.encode(" Ask not what your country can do for you.")
    run_part(results, "openai_greedy_prompt", lambda: dict(openai_greedy(ref, enc, prompt=prompt), prompt=prompt))
    run_part(results, "openai_beam5", lambda: openai_beam(ref, enc, 5))
    run_part(results, "openai_beam5_patience2", lambda: openai_beam(ref, enc, 5, patience=2.0))

    def fallback():
        g = results["openai_greedy"]
        cr, lp, ns = g["compression_ratio"], g["avg_logprob"], g["no_speech_prob"]
        needs = cr > 2.4 or lp < -1.0
        if ns > 0.6 and lp < -1.0:
            needs = False
        return {"compression_ratio": cr, "avg_logprob": lp, "no_speech_prob": ns, "t0_needs_fallback": needs,
                "temperature_used": 0.0 if not needs else "sampled (> 0, not reproducible across RNGs)"}
    run_part(results, "fallback", fallback)

    def words():
        g = results["openai_greedy"]
        segs, _, _ = window_segments(ref, g["tokens"], 0.0, N_FRAMES)
        alignment, matrix = find_alignment(ref, enc, [x for x in g["tokens"] if x < ref.eot], N_FRAMES)
        np.save(os.path.join(args.out, "alignment_matrix.npy"), matrix.astype(np.float32))
        add_word_timestamps(ref, enc, segs, N_FRAMES, 0, 0.0)
        return {"raw_alignment": alignment, "segments": segs}
    run_part(results, "openai_words", words)
    run_part(results, "openai_longform", lambda: openai_transcribe(ref, mel))

    def hf_greedy():
        out = hf_generate(ref, window, return_timestamps=True, max_new_tokens=SAMPLE_LEN, num_beams=1,
                          do_sample=False)
        seq = out[0] if not hasattr(out, "sequences") else out.sequences[0]
        return {"tokens": hf_tokens(ref, seq.tolist())}
    run_part(results, "hf_greedy", hf_greedy)

    def hf_beam():
        out = hf_generate(ref, window, return_timestamps=True, max_new_tokens=SAMPLE_LEN, num_beams=5,
                          do_sample=False)
        seq = out[0] if not hasattr(out, "sequences") else out.sequences[0]
        return {"tokens": hf_tokens(ref, seq.tolist())}
    run_part(results, "hf_beam5", hf_beam)

    def hf_long():
        x = mel
        t = ref.torch
        out = ref.model.generate(
            input_features=t.from_numpy(x)[None].to(device),
            attention_mask=t.ones((1, x.shape[1]), dtype=t.long, device=device),
            generation_config=ref.generation_config(), language="en", task="transcribe", return_timestamps=True,
            condition_on_prev_tokens=True, temperature=0.0, logprob_threshold=-1.0, no_speech_threshold=0.6,
            return_segments=True)
        segs = out["segments"][0] if isinstance(out, dict) else out.segments[0]
        return {"segments": [{"start": float(s["start"]), "end": float(s["end"]),
                              "tokens": [int(v) for v in s["tokens"].tolist()]} for s in segs]}
    run_part(results, "hf_longform", hf_long)
    run_part(results, "openai_longform_words", lambda: openai_transcribe(ref, mel, word_timestamps=True))
    try:
        toy_parts(results, device, mel, window, args.out)
    except Exception as e:  # the synthetic goldens above stay valid
        results["toy"] = {"error": f"{type(e).__name__}: {e}"}
        traceback.print_exc()

    with open(os.path.join(args.out, "decoding.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)
    print("wrote", os.listdir(args.out), flush=True)


if __name__ == "__main__":
    main()
