"""A hark_eval.py run's short-window errors per held-out voice: per variant (the ten
`synth.EVAL_VARIANTS`, never trained on), per accent (espeak-ng's base voice) and per
pair, from the run's hypotheses.json (each short window's utterances and their voices,
written by hark_eval.py since 2026-12-06). An error is counted to the utterance (clip) of
the reference word at or before it: a window is several utterances, often in different
voices.

  /usr/bin/python3 scripts/toy-model/by_voice.py --out /tmp/hark-eval-run18 \\
      [--lang en,de,fr,es] [--json FILE]
"""
import argparse
import collections
import json
import os
import random
import sys

import wer as W

SHORT_KINDS = ("single", "multi")  # hark_eval.py's short windows (long-form recordings list utterances too)


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


def tally(records, lang):
    """({"variant"|"accent"|"pair": {name: [errors, words]}}, [(errors, words) per window])
    over the language's speech windows of hypotheses.json's records."""
    out = {key: collections.defaultdict(lambda: [0, 0]) for key in ("variant", "accent", "pair")}
    windows = []
    for record in records.values():
        if record.get("lang") != lang or record.get("kind") not in SHORT_KINDS:
            continue
        utts = record["utterances"]
        pairs = utterance_errors([u["text"] for u in utts], record["hark"])
        windows.append((sum(e for e, _ in pairs), sum(n for _, n in pairs)))
        for u, (e, n) in zip(utts, pairs):
            accent, _, variant = (u["voice"] or "?").partition("+")
            for key, name in (("variant", variant or "(plain)"), ("accent", accent), ("pair", u["voice"])):
                out[key][name][0] += e
                out[key][name][1] += n
    return out, windows


DRAWS, SHARE = 2000, 0.95  # the window bootstrap's draws and the central share it reports


def window_interval(windows, draws=DRAWS, seed=1, share=SHARE):
    """The central `share` of the WERs (percent) of `draws` samples of the windows drawn
    again with replacement ([(errors, words) per window], tally's second result). Errors
    cluster by window (one voice, one sentence gone wrong), so resampling words would
    understate how far another draw of as many windows could land. (low, high)."""
    rng = random.Random(seed)
    rates = []
    for _ in range(draws):
        sample = rng.choices(windows, k=len(windows))
        rates.append(100 * sum(e for e, _ in sample) / max(1, sum(n for _, n in sample)))
    rates.sort()
    cut = int(draws * (1 - share) / 2)
    return rates[cut], rates[draws - 1 - cut]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the hark_eval.py --out folder (hypotheses.json)")
    ap.add_argument("--lang", default="en", help="a language or several, e.g. en,de,fr,es")
    ap.add_argument("--json", default=None, help="also write the table here")
    args = ap.parse_args(argv)
    with open(os.path.join(args.out, "hypotheses.json"), encoding="utf-8") as f:
        records = json.load(f)
    report = {}
    for lang in args.lang.split(","):
        table, windows = tally(records, lang)
        counted = len(windows)
        if not counted:
            sys.exit(f"[by_voice] no {lang} short window with its utterances in {args.out}/hypotheses.json "
                     "(written by hark_eval.py since 2026-12-06)")
        errors = sum(e for e, _ in table["accent"].values())
        words = sum(n for _, n in table["accent"].values())
        print(f"# {lang} short windows of {args.out}: {counted} windows, {errors}/{words} = "
              f"{100 * errors / max(1, words):.1f} %; errors counted to the utterance of the reference word before them")
        low, high = window_interval(windows)
        print(f"# {SHARE * 100:.0f} % interval over windows drawn again (bootstrap, {DRAWS} draws): {low:.1f}-{high:.1f} %")
        for key in ("variant", "accent"):
            print(f"## per {key}")
            for name, (e, n) in sorted(table[key].items(), key=lambda kv: -kv[1][0] / max(1, kv[1][1])):
                print(f"{name:28s} {e:5d}/{n:5d} = {100 * e / max(1, n):5.1f} %")
        report[lang] = {"windows": counted, "errors": errors, "words": words, "interval_95": [low, high]} \
            | {k: dict(v) for k, v in table.items()}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
