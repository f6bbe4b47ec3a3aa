"""The bundled model's held-out figures through hark itself, on the development machine
(no GPU, no torch): held-out sentences in held-out espeak-ng voices, made the way the
training run's evaluation makes them (evalsets.windows and evalsets.longform), written as
WAV files and transcribed by `hark transcribe` with its defaults (the language given; the
seek loop with the previous text as prompt and the temperature fallback, as a user runs
it). Prints and writes WER per language for short windows and for 1-3 minute recordings,
and the share of silence/noise windows that give no text.

  bash scripts/toy-model/hark_eval.sh [--hark build/bin/hark] [--model models/hark-toy-speech]
       [--clips 150] [--out /tmp/hark-toy-eval] [--hark-args "--vad trim"]

The training run's figures (results/open-run*-results.json) come from transformers'
generate() on the GPU; these are hark's, on the CPU, and the long-form ones are the
issue's "long-form English WER within 2 points of the short-clip figure".
"""
import argparse
import json
import os
import subprocess
import sys
import time

import evalsets
import synth
import tokens as T
import train
import wer as W

LONGFORM_PLAN = {"en": (60, 120, 180, 90), "de": (60, 150), "fr": (60, 150), "es": (60, 150)}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hark", default="build/bin/hark")
    ap.add_argument("--model", default="models/hark-toy-speech")
    ap.add_argument("--corpus", default=os.path.join(".device-carry", "corpus"),
                    help="folder with eval-{lang}.txt (runstate.py slice writes them)")
    ap.add_argument("--clips", type=int, default=150, help="held-out sentences per language")
    ap.add_argument("--windows", default="10,20,24", help="single, multi per language; silence windows")
    ap.add_argument("--out", default="/tmp/hark-toy-eval")
    ap.add_argument("--hark-args", default="", help="more `hark transcribe` options, e.g. \"--vad trim\"")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    return ap.parse_args()


def held_out_clips(args, log):
    texts = {}
    for lang in train.LANGS:
        with open(os.path.join(args.corpus, f"eval-{lang}.txt"), encoding="utf-8") as f:
            texts[lang] = [line.strip() for line in f if line.strip()][: args.clips]
    jobs, meta = synth.plan_jobs(texts, args.seed, held_out=True, job_size=16, effect_shares={})
    t = time.time()
    pool = train.start_pool(args.workers)
    try:
        clips = [c for part in pool.map(synth.synth_job, jobs) for c in part]
    finally:
        pool.terminate()
    log(f"{len(clips)} held-out clips synthesized in {time.time() - t:.0f} s")
    return evalsets.HeldOut(clips, meta, T.Tokenizer())


def transcribe(args, items, folder):
    """hark's text for each item (one process per language, all its files at once)."""
    evalsets.write_wavs(items, folder)
    out = {}
    by_lang = {}
    for it in items:
        by_lang.setdefault(it["lang"] or "en", []).append(it)
    for lang, group in by_lang.items():
        txt = os.path.join(folder, f"txt-{lang}")
        files = [os.path.join(folder, it["name"] + ".wav") for it in group]
        subprocess.run([args.hark, "transcribe", *files, "--model", args.model, "--language", lang, "--format", "txt",
                        "--output-dir", txt, *args.hark_args.split()], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for it in group:
            with open(os.path.join(txt, it["name"] + ".txt"), encoding="utf-8") as f:
                out[it["name"]] = f.read().strip()
    return out


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


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(f"[hark_eval] {msg}", flush=True)

    held = held_out_clips(args, log)
    counts = tuple(int(x) for x in args.windows.split(","))
    short = evalsets.windows(held, counts=counts)
    long = [evalsets.longform(held, lang, seconds, 5, f"{lang}-long-{k}")
            for lang, lengths in LONGFORM_PLAN.items() if lang in held.table.by_lang
            for k, seconds in enumerate(lengths)]
    t = time.time()
    hyps = transcribe(args, short, os.path.join(args.out, "short"))
    hyps.update(transcribe(args, long, os.path.join(args.out, "long")))
    log(f"transcribed {len(short) + len(long)} items in {time.time() - t:.0f} s")
    silence = [it for it in short if it["kind"] == "silence"]
    report = {
        "model": args.model, "hark": args.hark, "hark_args": args.hark_args, "clips_per_language": args.clips,
        "windows": counts,
        "short": score(short, hyps),
        "long_form": score(long, hyps) | {"seconds": {it["name"]: round(len(it["pcm"]) / evalsets.RATE, 1)
                                                      for it in long}},
        "silence_empty": {"windows": len(silence), "empty": sum(1 for it in silence if not hyps[it["name"]])},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    with open(os.path.join(args.out, "hark-eval.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    with open(os.path.join(args.out, "hypotheses.json"), "w", encoding="utf-8") as f:
        json.dump({it["name"]: {"reference": it["text"], "hark": hyps[it["name"]]} for it in short + long}, f,
                  indent=1, ensure_ascii=False)
    for lang in sorted(report["short"]):
        s, lf = report["short"][lang], report["long_form"].get(lang, {})
        log(f"{lang}: short windows {s['wer'] * 100:.1f} % ({s['errors']}/{s['words']}), "
            f"long-form {lf.get('wer', 0) * 100:.1f} % ({lf.get('errors')}/{lf.get('words')})")
    log(f"silence/noise: {report['silence_empty']['empty']} of {report['silence_empty']['windows']} empty")
    log(f"wrote {os.path.join(args.out, 'hark-eval.json')}")


if __name__ == "__main__":
    sys.exit(main())
