"""The bundled model's held-out figures through hark itself, on the development machine
(no GPU, no torch): held-out sentences in held-out espeak-ng voices, made the way the
training run's evaluation makes them (evalsets.windows and evalsets.longform), written as
WAV files and transcribed by `hark transcribe` with its defaults (the language given; the
seek loop with the previous text as prompt and the temperature fallback, as a user runs
it). Prints and writes WER per language for short windows and for 1-3 minute recordings,
and the share of silence/noise windows that give no text.

  bash scripts/toy-model/hark_eval.sh [--hark build/bin/hark] [--model models/hark-toy-speech]
       [--clips 150] [--windows 10,20,24] [--longform-repeat 1] [--longform-cut] [--langs en]
       [--out /tmp/hark-toy-eval] [--hark-args "--vad trim"]

--longform-repeat N makes N times LONGFORM_PLAN's recordings (the first round is the
default set; later rounds draw other sentences, pauses and noise). --longform-cut also
transcribes every long-form recording cut in the middle of its pauses into pieces of at
most 30 s (the same audio and words, each piece a short clip): the difference between the
two is what the seek loop adds. For every long-form recording, "long_form_errors" places
each error (wer.align) against the seek loop's window starts (verbose_json's `seek`):
errors on words within EDGE_S of a window start, after a pause of PAUSE_S or more, in the
first window (no prompt) or in later ones.

Synthesis is deterministic: every job of 16 clips runs in a fresh worker process
(espeak-ng 1.51 keeps state from one utterance to the next, so the same text and voice
sound slightly different after other utterances: before 2026-12-01 the audio, and the
figures by ~1 point, depended on which worker took which job).

--word-timing N transcribes the first N speech windows of each language again with
`--word-timestamps` and compares the word times hark gives (cross-attention DTW over the
checkpoint's alignment heads) with espeak-ng's word boundaries, as evaluate_full.py's
word_timing_error does with transformers (both through wer.word_time_errors): mean |start|
and |end| error and the share of starts within 0.2 s over the words matched in order.

--language-id N transcribes the first N speech windows of each language with no language
given, and counts how often hark's detection (the first window's language token) names
the language spoken.

The training run's figures (results/open-run*-results.json) come from transformers'
generate() on the GPU; these are hark's, on the CPU, and the long-form ones are the
issue's "long-form English WER within 2 points of the short-clip figure".
"""
import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

import evalsets
import synth
import textgen
import tokens as T
import train
import wer as W

LONGFORM_PLAN = {"en": (60, 120, 180, 90), "de": (60, 150), "fr": (60, 150), "es": (60, 150)}
EDGE_S = 1.0  # a word this close to a window start (either side) is at a window edge
PAUSE_S = 3.0  # an utterance after a pause this long is "after a long pause"
CUT_MAX_S = 30.0
SYNTH_TIMEOUT_S = 600  # plus 2 s a job of 16 clips: ~10x what 2 cores need
# textgen.py's held-out stream for --numbers: training draws its template sentences with seed
# 1 + the run's step (< 10**6), so this seed's sentences are not the ones a run read (the
# templates are a closed grammar: a few may still coincide by chance).
NUMBERS_SEED = 1_000_000


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hark", default="build/bin/hark")
    ap.add_argument("--model", default="models/hark-toy-speech")
    ap.add_argument("--corpus", default=os.path.join(".device-carry", "corpus"),
                    help="folder with eval-{lang}.txt (runstate.py slice writes them)")
    ap.add_argument("--clips", type=int, default=150, help="held-out sentences per language")
    ap.add_argument("--windows", default="10,20,24", help="single, multi per language; silence windows")
    ap.add_argument("--longform-repeat", type=int, default=1,
                    help="how many times LONGFORM_PLAN's recordings are made (each round new ones)")
    ap.add_argument("--langs", default=None,
                    help="transcribe only these languages' items, e.g. en (all four are still synthesized, "
                         "so the audio is the same as in a full run)")
    ap.add_argument("--longform-cut", action="store_true",
                    help="also transcribe each long-form recording cut at its pauses into <= 30 s pieces")
    ap.add_argument("--out", default="/tmp/hark-toy-eval")
    ap.add_argument("--hark-args", default="", help="more `hark transcribe` options, e.g. \"--vad trim\"")
    ap.add_argument("--numbers", type=int, default=0,
                    help="also N windows a language of one textgen.py template sentence each (numbers, dates, "
                         "prices, phone numbers, times: what the held-out prose rarely has); scored apart as "
                         "'numbers'")
    ap.add_argument("--word-timing", type=int, default=0, metavar="N",
                    help="also word-timestamp errors against espeak-ng's word boundaries on the first N speech "
                         "windows of each language")
    ap.add_argument("--language-id", type=int, default=0, metavar="N",
                    help="also language identification on the first N speech windows of each language "
                         "(no --language given)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    return ap.parse_args()


def held_out_clips(args, log, texts=None):
    """The held-out sentences (the corpus's eval-LL.txt, or `texts` by language) spoken by
    the held-out voices."""
    if texts is None:
        texts = {}
        for lang in train.LANGS:
            with open(os.path.join(args.corpus, f"eval-{lang}.txt"), encoding="utf-8") as f:
                texts[lang] = [line.strip() for line in f if line.strip()][: args.clips]
    jobs, meta = synth.plan_jobs(texts, args.seed, held_out=True, job_size=16, effect_shares={})
    t = time.time()
    pool = train.start_pool(args.workers, fresh_workers=True)
    limit = SYNTH_TIMEOUT_S + 2 * len(jobs)
    try:
        # A bounded wait: once (2026-12-07) a pool of fresh workers stalled at its start with
        # every process idle, and map() would have waited for ever.
        parts = pool.map_async(synth.synth_job, jobs, chunksize=1).get(timeout=limit)
    except mp.TimeoutError:
        sys.exit(f"hark_eval: synthesizing {len(jobs)} jobs took over {limit} s (a stalled worker pool?); run it again")
    finally:
        pool.terminate()
    clips = [c for part in parts for c in part]
    log(f"{len(clips)} held-out clips synthesized in {time.time() - t:.0f} s")
    return evalsets.HeldOut(clips, meta, T.Tokenizer())


def numbers_items(args, log, langs):
    """--numbers: per language, args.numbers windows of one template sentence each, named
    num-LL-K and of kind "numbers" (by_voice.py's short-window figures leave them out)."""
    texts = {lang: textgen.sentences(lang, NUMBERS_SEED + args.seed, args.numbers) for lang in langs}
    held = held_out_clips(args, log, texts)
    items = evalsets.windows(held, seed=13 + args.seed, counts=(args.numbers, 0, 0))
    for it in items:
        it["name"] = "num-" + it["name"].replace("-single", "")
        it["kind"] = "numbers"
    return items, held


def longform_items(held, repeat=1, plan=None):
    """LONGFORM_PLAN's recordings, `repeat` rounds of them; names lang-long-K, K counting on
    over the rounds (the recording's random draws follow its name)."""
    plan = LONGFORM_PLAN if plan is None else plan
    items = []
    for lang, lengths in plan.items():
        if lang not in held.table.by_lang:
            continue
        for k in range(len(lengths) * repeat):
            items.append(evalsets.longform(held, lang, lengths[k % len(lengths)], 5, f"{lang}-long-{k}"))
    return items


def cut_at_pauses(item, max_s=CUT_MAX_S):
    """A long-form item cut in the middle of its pauses into pieces of at most max_s
    seconds holding whole utterances (the same samples): [{name, lang, kind "cut",
    parent, pcm, text, segments (times in the piece)}]."""
    segs, pcm, rate = item["segments"], item["pcm"], evalsets.RATE
    bounds = [0.0] + [(a["end"] + b["start"]) / 2 for a, b in zip(segs, segs[1:])] + [len(pcm) / rate]
    pieces, first = [], 0
    while first < len(segs):
        last = first
        while last + 1 < len(segs) and bounds[last + 2] - bounds[first] <= max_s:
            last += 1
        a, b = bounds[first], bounds[last + 1]
        if b - a > max_s:  # one utterance with its pauses is longer: the utterance, less pause
            margin = min(0.3, max(0.0, (max_s - (segs[first]["end"] - segs[first]["start"])) / 2))
            a, b = max(a, segs[first]["start"] - margin), min(b, segs[first]["end"] + margin)
        piece = pcm[int(round(a * rate)): int(round(b * rate))]
        pieces.append({"name": f"{item['name']}-cut-{len(pieces):02d}", "lang": item["lang"], "kind": "cut",
                       "parent": item["name"], "pcm": piece,
                       "text": " ".join(s["text"] for s in segs[first: last + 1]),
                       "segments": [dict(s, start=round(s["start"] - a, 3), end=round(s["end"] - a, 3))
                                    for s in segs[first: last + 1]]})
        first = last + 1
    return pieces


def reference_words(item):
    """[(normalised word, start, end, utterance index)] of a speech item: espeak-ng's word
    times where the item has them, else spread over each utterance by characters."""
    out = []
    words = item.get("words") or None
    raw = [w for s in item["segments"] for w in s["text"].split()]
    if words is not None and len(words) != len(raw):
        words = None
    k = 0
    for u, seg in enumerate(item["segments"]):
        parts = seg["text"].split()
        total = max(1, sum(len(p) for p in parts))
        acc = 0
        for p in parts:
            if words is not None:
                start, end = words[k]["start"], words[k]["end"]
            else:
                start = seg["start"] + (seg["end"] - seg["start"]) * acc / total
                end = seg["start"] + (seg["end"] - seg["start"]) * (acc + len(p)) / total
            acc += len(p)
            k += 1
            out += [(w, start, end, u) for w in W.normalize(p)]
    return out


def place_errors(item, hyp_text, window_starts, edge_s=EDGE_S, pause_s=PAUSE_S):
    """Where the errors of one long-form transcript are. window_starts: seconds where the
    seek loop began a window (0 included). Every reference word falls in one class of each
    pair: at a window edge (within edge_s of a window start after 0) or not; in an
    utterance after a pause >= pause_s or not; in the first window or a later one.
    Insertions count at the reference word before them (the first word if none). Returns
    {"errors", "words", "edge": [errors, words], "not_edge": ..., "after_pause": ...,
    "no_pause": ..., "first_window": ..., "later_windows": ..., "dropped_utterances": n,
    "insertion_runs": [(hyp words, seconds)] of 3+ inserted words in a row}."""
    ref = reference_words(item)
    hyp = W.normalize(hyp_text)
    segs = item["segments"]
    later = sorted(t for t in window_starts if t > 0)
    after_pause = [u > 0 and seg["start"] - segs[u - 1]["end"] >= pause_s for u, seg in enumerate(segs)]

    def classes(i):
        _, start, end, u = ref[min(max(i, 0), len(ref) - 1)]
        edge = any(start - edge_s <= w <= end + edge_s for w in later)
        window = sum(1 for w in later if w <= start)
        return ("edge" if edge else "not_edge", "after_pause" if after_pause[u] else "no_pause",
                "first_window" if window == 0 else "later_windows")

    names = ("edge", "not_edge", "after_pause", "no_pause", "first_window", "later_windows")
    out = {n: [0, 0] for n in names}
    for i in range(len(ref)):
        for c in classes(i):
            out[c][1] += 1
    ops = W.align([w for w, *_ in ref], hyp)
    errors, last_ref, run = 0, -1, []
    deleted = [0] * len(segs)
    runs = []
    for op, i, j in ops + [("end", None, None)]:
        if op == "ins":
            run.append(hyp[j])
        elif run:
            if len(run) >= 3:
                runs.append((" ".join(run), round(ref[max(last_ref, 0)][1], 2) if ref else 0.0))
            run = []
        if op == "end":
            break
        if i is not None:
            last_ref = i
        if op == "ok":
            continue
        errors += 1
        if op == "del":
            deleted[ref[i][3]] += 1
        for c in classes(last_ref):
            out[c][0] += 1
    per_utt = [0] * len(segs)
    for _, _, _, u in ref:
        per_utt[u] += 1
    out.update(errors=errors, words=len(ref), insertion_runs=runs,
               dropped_utterances=sum(1 for d, n in zip(deleted, per_utt) if n and d == n))
    return out


def run_hark(args, wavs, out_dir, *options):
    """One `hark transcribe` process over the WAV files, its outputs into out_dir."""
    subprocess.run([args.hark, "transcribe", *wavs, "--model", args.model, *options, "--output-dir", out_dir,
                    *args.hark_args.split()], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def transcribe(args, items, folder, segments=None):
    """hark's text for each item (one process per language, all its files at once, the WAV
    files left in `folder`); with `segments` (a dict), also its verbose_json segments by name."""
    evalsets.write_wavs(items, folder)
    out = {}
    by_lang = {}
    for it in items:
        by_lang.setdefault(it["lang"] or "en", []).append(it)
    for lang, group in by_lang.items():
        txt = os.path.join(folder, f"txt-{lang}")
        files = [os.path.join(folder, it["name"] + ".wav") for it in group]
        run_hark(args, files, txt, "--language", lang, "--format", "txt" if segments is None else "all")
        for it in group:
            with open(os.path.join(txt, it["name"] + ".txt"), encoding="utf-8") as f:
                out[it["name"]] = f.read().strip()
            if segments is not None:
                with open(os.path.join(txt, it["name"] + ".json"), encoding="utf-8") as f:
                    segments[it["name"]] = json.load(f)["segments"]
    return out


def first_speech_windows(short, n):
    """The first n short speech windows of each language, in order, and the count taken per
    language."""
    chosen, taken = [], {}
    for it in short:
        if it["kind"] in ("single", "multi") and taken.get(it["lang"], 0) < n:
            chosen.append(it)
            taken[it["lang"]] = taken.get(it["lang"], 0) + 1
    return chosen, taken


def language_id(args, short, wav_dir, out):
    """--language-id: hark's detected language (verbose_json's `language`) against the
    language spoken, on the first args.language_id speech windows of each language (their WAV
    files in wav_dir, where transcribe() left them), all in one `hark transcribe` call without
    --language."""
    chosen, _ = first_speech_windows(short, args.language_id)
    run_hark(args, [os.path.join(wav_dir, it["name"] + ".wav") for it in chosen], out, "--format", "verbose_json")
    result = {"windows": len(chosen), "correct": 0, "by_lang": {}, "confusions": {}}
    for it in chosen:
        with open(os.path.join(out, it["name"] + ".json"), encoding="utf-8") as f:
            said = json.load(f).get("language")
        entry = result["by_lang"].setdefault(it["lang"], {"windows": 0, "correct": 0})
        entry["windows"] += 1
        if said == it["lang"]:
            entry["correct"] += 1
            result["correct"] += 1
        else:
            key = f"{it['lang']}->{said}"
            result["confusions"][key] = result["confusions"].get(key, 0) + 1
    return result


def word_timing(args, short, wav_dir, folder):
    """--word-timing: hark's word times on the first args.word_timing speech windows of each
    language (their WAV files in wav_dir, where transcribe() left them) against espeak-ng's,
    pooled over the languages and per language."""
    chosen, taken = first_speech_windows([it for it in short if it.get("words")], args.word_timing)
    pairs = {}
    for lang in sorted(taken):
        group = [it for it in chosen if it["lang"] == lang]
        out = os.path.join(folder, f"json-{lang}")
        run_hark(args, [os.path.join(wav_dir, it["name"] + ".wav") for it in group], out,
                 "--language", lang, "--word-timestamps", "--format", "verbose_json")
        for it in group:
            with open(os.path.join(out, it["name"] + ".json"), encoding="utf-8") as f:
                words = json.load(f).get("words", [])
            pairs.setdefault(lang, []).extend(W.word_time_errors(it["words"], words))
    result = W.word_time_summary([x for p in pairs.values() for x in p], len(chosen))
    result["by_lang"] = {lang: W.word_time_summary(pairs.get(lang, []), taken[lang]) for lang in sorted(taken)}
    return result


def score(items, hyps):
    by_lang = {}
    for it in items:
        if it["kind"] != "silence":
            by_lang.setdefault(it["lang"], ([], []))
            by_lang[it["lang"]][0].append(it["text"])
            by_lang[it["lang"]][1].append(hyps[it["name"]])
    result = {}
    for lang, (refs, hyps_) in sorted(by_lang.items()):
        rate, errors, words = W.corpus_wer(refs, hyps_)
        result[lang] = {"wer": round(rate, 4), "errors": errors, "words": words, "items": len(refs)}
    return result


def hypothesis_record(item, hyp, held):
    """hypotheses.json's entry of one item; a short window's also lists its utterances in
    order with their voices ("en-029+norbert"), which by_voice.py reads."""
    record = {"reference": item["text"], "hark": hyp}
    if "plan" in item:
        record.update(lang=item["lang"], kind=item["kind"],
                      utterances=[{"text": held.table.text[c], "voice": held.voices[c]}
                                  for c, _ in item["plan"]["placements"]])
    return record


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(f"[hark_eval] {msg}", flush=True)

    held = held_out_clips(args, log)
    counts = tuple(int(x) for x in args.windows.split(","))
    short = evalsets.windows(held, counts=counts)
    long = longform_items(held, args.longform_repeat)
    if args.langs:
        keep = set(args.langs.split(","))
        short = [it for it in short if it["lang"] is None or it["lang"] in keep]
        long = [it for it in long if it["lang"] in keep]
    cut = [p for it in long for p in cut_at_pauses(it)] if args.longform_cut else []
    numbers, numbers_held = [], None
    if args.numbers:
        numbers, numbers_held = numbers_items(args, log, args.langs.split(",") if args.langs else train.LANGS)
    t = time.time()
    hyps = transcribe(args, short, os.path.join(args.out, "short"))
    long_segments = {}
    hyps.update(transcribe(args, long, os.path.join(args.out, "long"), long_segments))
    if cut:
        hyps.update(transcribe(args, cut, os.path.join(args.out, "cut")))
    if numbers:
        hyps.update(transcribe(args, numbers, os.path.join(args.out, "numbers")))
    log(f"transcribed {len(short) + len(long) + len(cut) + len(numbers)} items in {time.time() - t:.0f} s")
    placed = {it["name"]: place_errors(it, hyps[it["name"]], sorted({s["seek"] / 100 for s in long_segments[it["name"]]}
                                                                    | {0.0}))
              for it in long}
    silence = [it for it in short if it["kind"] == "silence"]
    report = {
        "model": args.model, "hark": args.hark, "hark_args": args.hark_args, "clips_per_language": args.clips,
        "windows": counts, "longform_repeat": args.longform_repeat, "langs": args.langs,
        "short": score(short, hyps),
        "long_form": score(long, hyps) | {"seconds": {it["name"]: round(len(it["pcm"]) / evalsets.RATE, 1)
                                                      for it in long}},
        "long_form_errors": placed,
        "silence_empty": {"windows": len(silence), "empty": sum(1 for it in silence if not hyps[it["name"]])},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if cut:
        report["long_form_cut"] = score(cut, hyps)
    if numbers:
        report["numbers"] = score(numbers, hyps)
    if args.word_timing:
        report["word_timing"] = word_timing(args, short, os.path.join(args.out, "short"),
                                            os.path.join(args.out, "words"))
    if args.language_id:
        report["language_id"] = language_id(args, short, os.path.join(args.out, "short"),
                                            os.path.join(args.out, "language"))
    with open(os.path.join(args.out, "hark-eval.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    with open(os.path.join(args.out, "hypotheses.json"), "w", encoding="utf-8") as f:
        records = {it["name"]: hypothesis_record(it, hyps[it["name"]], held) for it in short + long + cut}
        records.update({it["name"]: hypothesis_record(it, hyps[it["name"]], numbers_held) for it in numbers})
        json.dump(records, f, indent=1, ensure_ascii=False)
    for lang in sorted((set(report["short"]) | set(report["long_form"])) - {"seconds"}):
        s, lf = report["short"].get(lang, {"wer": 0, "errors": 0, "words": 0}), report["long_form"].get(lang, {})
        c = report.get("long_form_cut", {}).get(lang)
        log(f"{lang}: short windows {s['wer'] * 100:.1f} % ({s['errors']}/{s['words']}), "
            f"long-form {lf.get('wer', 0) * 100:.1f} % ({lf.get('errors')}/{lf.get('words')})"
            + (f", long-form cut at pauses {c['wer'] * 100:.1f} % ({c['errors']}/{c['words']})" if c else ""))
    for lang in sorted(report["long_form"]):
        if lang == "seconds":
            continue
        tot = {k: [0, 0] for k in ("edge", "not_edge", "after_pause", "no_pause", "first_window", "later_windows")}
        for name, p in placed.items():
            if name.startswith(lang + "-"):
                for k in tot:
                    tot[k] = [tot[k][0] + p[k][0], tot[k][1] + p[k][1]]
        log(f"{lang} long-form errors/words: " + ", ".join(f"{k} {e}/{n}" for k, (e, n) in tot.items()))
    for lang, n in report.get("numbers", {}).items():
        log(f"{lang}: numbers (template sentences) {n['wer'] * 100:.1f} % ({n['errors']}/{n['words']})")
    if "word_timing" in report:
        wt = report["word_timing"]
        log(f"word timing: {wt.get('matched_words')} words matched in {wt['windows']} windows, mean start error "
            f"{wt.get('mean_start_error_s')} s, end {wt.get('mean_end_error_s')} s, starts within 0.2 s "
            f"{wt.get('share_start_within_0.2s')}")
    if "language_id" in report:
        li = report["language_id"]
        log(f"language identified: {li['correct']} of {li['windows']} windows"
            + (f" (wrong: {li['confusions']})" if li["confusions"] else ""))
    log(f"silence/noise: {report['silence_empty']['empty']} of {report['silence_empty']['windows']} empty")
    log(f"wrote {os.path.join(args.out, 'hark-eval.json')}")


if __name__ == "__main__":
    sys.exit(main())
