"""Scores heldout_wer.sh's transcripts: WER per compute type (all clips and per language,
scripts/toy-model/wer.py), its difference to f32 in points, and per clip the token edit
distance to the f32 transcript: all tokens of all segments (timestamps included), and the
text tokens alone (ids below <|endoftext|>, 50257), which is what the WER sees.

  python3 scripts/quant/heldout_score.py REFERENCES.json WORK_DIR "f32 int8 ..." [RESULTS.json]
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "toy-model"))
import wer  # noqa: E402

MAX_WER_DELTA_POINTS = 0.5
EOT = 50257


def transcript(work, ct, wav):
    with open(os.path.join(work, f"out-{ct}", wav[:-4] + ".json"), encoding="utf-8") as f:
        out = json.load(f)
    return out["text"].strip(), [t for s in out["segments"] for t in s["tokens"]]


def main(argv):
    refs_path, work, types = argv[1], argv[2], argv[3].split()
    refs = json.load(open(refs_path, encoding="utf-8"))
    got = {ct: [transcript(work, ct, r["file"]) for r in refs] for ct in types}
    results = {"clips": len(refs), "types": {}}
    base_wer = None
    ok = True
    for ct in types:
        w, errors, words = wer.corpus_wer([r["reference"] for r in refs], [t for t, _ in got[ct]])
        per_lang = {}
        for lang in sorted({r["lang"] for r in refs}):
            idx = [i for i, r in enumerate(refs) if r["lang"] == lang]
            per_lang[lang] = round(100 * wer.corpus_wer([refs[i]["reference"] for i in idx],
                                                        [got[ct][i][0] for i in idx])[0], 2)
        dist = [wer.edit_distance(got["f32"][i][1], got[ct][i][1]) for i in range(len(refs))]
        worst = max(range(len(refs)), key=lambda i: dist[i])
        text_dist = [wer.edit_distance([t for t in got["f32"][i][1] if t < EOT], [t for t in got[ct][i][1] if t < EOT])
                     for i in range(len(refs))]
        base_wer = w if ct == "f32" else base_wer
        delta = 100 * (w - base_wer)
        within = abs(delta) <= MAX_WER_DELTA_POINTS
        ok = ok and within
        results["types"][ct] = {"wer_percent": round(100 * w, 2), "errors": errors, "words": words,
                                "wer_percent_by_lang": per_lang, "delta_points_vs_f32": round(delta, 2),
                                "within_half_point": within, "max_token_distance": dist[worst],
                                "worst_clip": refs[worst]["file"], "clips_identical": dist.count(0),
                                "clips_over_2_tokens": sum(d > 2 for d in dist),
                                "max_text_token_distance": max(text_dist),
                                "clips_text_identical": text_dist.count(0),
                                "clips_over_2_text_tokens": sum(d > 2 for d in text_dist),
                                "token_distance_by_clip": {r["file"]: d for r, d in zip(refs, dist) if d}}
        print(f"{ct:5s} WER {100 * w:5.2f} % ({errors}/{words}) {per_lang}  vs f32 {delta:+.2f} points"
              f"  token distance: max {dist[worst]} ({refs[worst]['file']}), identical {dist.count(0)}/{len(refs)},"
              f" over 2: {sum(d > 2 for d in dist)}; text tokens: max {max(text_dist)},"
              f" identical {text_dist.count(0)}, over 2: {sum(d > 2 for d in text_dist)}")
    if len(argv) > 4 and argv[4]:
        with open(argv[4], "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
