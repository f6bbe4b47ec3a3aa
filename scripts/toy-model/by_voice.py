"""A hark_eval.py run's short-window errors per held-out voice: per variant (the ten
`synth.EVAL_VARIANTS`, never trained on), per accent (espeak-ng's base voice) and per
pair. The held-out clips and windows are made again exactly as hark_eval.py made them
(same --corpus, --clips, --windows, --seed: a few seconds to a minute of synthesis, no
transcription); the hypotheses come from that run's hypotheses.json. An error is counted
to the utterance (clip) of the reference word at or before it: a window is several
utterances, often in different voices.

  . scripts/toy-model/espeak-env.sh   # the carried espeak-ng, as hark_eval.sh uses
  /usr/bin/python3 scripts/toy-model/by_voice.py --out /tmp/hark-eval-run17 \\
      --clips 1000 --windows 40,80,48 [--lang en,de,fr,es] [--json FILE]

Only windows whose reference text matches the run's are counted; it stops if none do
(other --clips/--windows/--seed than the run's).
"""
import argparse
import collections
import json
import os
import sys

import evalsets
import hark_eval
import wer as W


def utterance_errors(utterances, hypothesis):
    """[(errors, words)] per utterance (a list of reference texts in window order) against
    one hypothesis text; the errors sum to the window's edit distance."""
    owner, ref = [], []
    for k, text in enumerate(utterances):
        words = W.normalize(text)
        owner += [k] * len(words)
        ref += words
    errors, last = [0] * len(utterances), 0
    for op, i, _ in W.align(ref, W.normalize(hypothesis)):
        if i is not None:
            last = owner[i]
        if op != "ok" and utterances:
            errors[last] += 1
    return [(e, len(W.normalize(t))) for e, t in zip(errors, utterances)]


def tally(items, hyps, voices_of, lang):
    """{"variant"|"accent"|"pair": {name: [errors, words]}} over the language's speech windows."""
    out = {"variant": collections.defaultdict(lambda: [0, 0]), "accent": collections.defaultdict(lambda: [0, 0]),
           "pair": collections.defaultdict(lambda: [0, 0])}
    counted = 0
    for it in items:
        if it["lang"] != lang or it["kind"] == "silence" or it["name"] not in hyps:
            continue
        if hyps[it["name"]]["reference"] != it["text"]:
            continue
        counted += 1
        clips = [c for c, _ in it["plan"]["placements"]]
        per = utterance_errors([voices_of.table.text[c] for c in clips], hyps[it["name"]]["hark"])
        for c, (e, n) in zip(clips, per):
            voice = voices_of.voices[c] or "?"
            accent, _, variant = voice.partition("+")
            for key, name in (("variant", variant or "(plain)"), ("accent", accent), ("pair", voice)):
                out[key][name][0] += e
                out[key][name][1] += n
    return out, counted


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the hark_eval.py --out folder (hypotheses.json)")
    ap.add_argument("--corpus", default=os.path.join(".device-carry", "corpus"))
    ap.add_argument("--clips", type=int, default=150)
    ap.add_argument("--windows", default="10,20,24")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lang", default="en", help="a language or several, e.g. en,de,fr,es")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--json", default=None, help="also write the table here")
    args = ap.parse_args(argv)
    if not os.environ.get("ESPEAK_DATA") or os.environ.get("PYTHONHASHSEED") != "0":
        sys.exit("[by_voice] the held-out clips must be made as hark_eval.sh makes them: "
                 "run `. scripts/toy-model/espeak-env.sh` first")
    with open(os.path.join(args.out, "hypotheses.json"), encoding="utf-8") as f:
        hyps = json.load(f)
    held = hark_eval.held_out_clips(args, lambda m: print(f"[by_voice] {m}", file=sys.stderr))
    items = evalsets.windows(held, counts=tuple(int(x) for x in args.windows.split(",")))
    report = {}
    for lang in args.lang.split(","):
        table, counted = tally(items, hyps, held, lang)
        if not counted:
            sys.exit(f"[by_voice] no {lang} window of {args.out} matches the windows made here: give the run's "
                     "--clips, --windows, --seed and --corpus")
        errors = sum(e for e, _ in table["accent"].values())
        words = sum(n for _, n in table["accent"].values())
        print(f"# {lang} short windows of {args.out}: {counted} windows, {errors}/{words} = "
              f"{100 * errors / max(1, words):.1f} %; errors counted to the utterance of the reference word before them")
        for key in ("variant", "accent"):
            print(f"## per {key}")
            for name, (e, n) in sorted(table[key].items(), key=lambda kv: -kv[1][0] / max(1, kv[1][1])):
                print(f"{name:28s} {e:5d}/{n:5d} = {100 * e / max(1, n):5.1f} %")
        report[lang] = {"windows": counted, "errors": errors, "words": words} | {k: dict(v) for k, v in table.items()}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)

if __name__ == "__main__":
    main()
