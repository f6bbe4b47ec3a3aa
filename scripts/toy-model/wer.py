"""Word error rate for the toy model's evaluation.

Text is normalised before scoring: lower case, punctuation removed (apostrophes inside
words kept, so "o'clock" stays one word), whitespace collapsed. WER = (substitutions +
deletions + insertions) / reference words, from a word-level Levenshtein alignment.

  python3 scripts/toy-model/wer.py REFERENCE.txt HYPOTHESIS.txt   (one utterance a line)
"""
import difflib
import re
import sys
import unicodedata


def normalize(text):
    text = unicodedata.normalize("NFC", text).lower()
    text = re.sub(r"[^\w\s']", " ", text)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    return text.split()


def edit_distance(ref, hyp):
    """Levenshtein distance between two word lists."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def align(ref, hyp):
    """A minimal edit script between two word lists: (op, ref index, hyp index) with op
    "ok", "sub", "del" (ref word missing; hyp index None) or "ins" (hyp word added; ref
    index None), in order. Its error count equals edit_distance(ref, hyp)."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    ops, i, j = [], n, m
    while i or j:
        if i and j and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            ops.append(("ok" if ref[i - 1] == hyp[j - 1] else "sub", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i and d[i][j] == d[i - 1][j] + 1:
            ops.append(("del", i - 1, None))
            i -= 1
        else:
            ops.append(("ins", None, j - 1))
            j -= 1
    return ops[::-1]


def word_time_errors(reference, hypothesis):
    """[(|start error|, |end error|)] in seconds for the words of `hypothesis` ({word, start,
    end}) that match `reference` words ({word, start, end, exact}) in order (difflib's
    matching blocks over the normalised words). Words that normalise to nothing
    (punctuation standing alone) take no part, and reference words whose times were
    interpolated ("exact": False) are no reference. evaluate_full.py (transformers) and
    hark_eval.py (hark) both score word timestamps with it."""
    ref = [(" ".join(normalize(r["word"])), r) for r in reference]
    ref = [(w, r) for w, r in ref if w]
    hyp = [(" ".join(normalize(h["word"])), h) for h in hypothesis]
    hyp = [(w, h) for w, h in hyp if w]
    matcher = difflib.SequenceMatcher(a=[w for w, _ in ref], b=[w for w, _ in hyp], autojunk=False)
    out = []
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            r, h = ref[block.a + k][1], hyp[block.b + k][1]
            if r.get("exact", True):
                out.append((abs(h["start"] - r["start"]), abs(h["end"] - r["end"])))
    return out


def word_time_summary(errors, windows):
    """The figures both scorers report from word_time_errors' pairs: words matched, mean
    |start| and |end| error, and the share of starts within 0.2 s."""
    if not errors:
        return {"matched_words": 0, "windows": windows}
    starts, ends = [a for a, _ in errors], [b for _, b in errors]
    return {"matched_words": len(errors), "windows": windows,
            "mean_start_error_s": round(sum(starts) / len(starts), 4),
            "mean_end_error_s": round(sum(ends) / len(ends), 4),
            "share_start_within_0.2s": round(sum(1 for a in starts if a <= 0.2) / len(starts), 4)}


def corpus_wer(refs, hyps):
    """(WER over all pairs, errors, reference words)."""
    if len(refs) != len(hyps):
        raise ValueError(f"[wer] {len(refs)} references but {len(hyps)} hypotheses")
    errors = words = 0
    for r, h in zip(refs, hyps):
        rw, hw = normalize(r), normalize(h)
        errors += edit_distance(rw, hw)
        words += len(rw)
    return (errors / words if words else 0.0), errors, words


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        refs = f.read().splitlines()
    with open(argv[2], encoding="utf-8") as f:
        hyps = f.read().splitlines()
    wer, errors, words = corpus_wer(refs, hyps)
    print(f"WER {wer * 100:.2f} % ({errors} errors / {words} words)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
