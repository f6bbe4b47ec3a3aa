"""Builds the open-vocabulary text corpus of the toy speech model from Debian packages.

  python3 scripts/toy-model/corpus/build.py [--debs .device-carry/corpus-debs]
      [--indexes .device-carry/corpus-indexes] [--out .device-carry/corpus-full] [--sample DIR]

Standard library only (runs on the development machine or on the GPU machine). Output:
  train-LL.txt.xz   training sentences of language LL, one a line, in training order
                    (sources interleaved by a seeded shuffle; train.py reads them in
                    order from a saved position, so a resumed run sees new sentences)
  eval-LL.txt       held-out sentences (sources listed in sources.py with role "eval"),
                    shuffled, at most 5000; never in any training file, not even from
                    another source
  stats.json        per source: package version, paragraphs, sentences kept, reasons for
                    drops; per language: counts and sha256 of the training file
  --sample DIR      also writes the first 40 training and 40 held-out sentences per
                    language (the sample committed in the repository)
  --eval-only       reads only the held-out sources and writes only eval-LL.txt and
                    stats.json: the same eval files as a full build (the held-out list
                    never depends on training text), from two packages (trans-de-en,
                    gnome-user-docs) in about 10 s, for scripts/toy-model/hark_eval.sh
The output is deterministic for given package versions.
"""
import argparse
import hashlib
import json
import lzma
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import clean  # noqa: E402
import debfile  # noqa: E402
import extract  # noqa: E402
from sources import APT_INDEXES, SOURCES  # noqa: E402

SEED = "hark-toy-corpus-1"
BINARY_EXTRACTORS = {"sword", "gettext_catalog"}  # get bytes, not text
MAX_EVAL = 5000  # held-out sentences kept per language (an evaluation uses a few hundred)


def source_texts(source, debs, indexes):
    """(file name, text or bytes) of every file a source reads, and the version it came from."""
    if source.package in APT_INDEXES:
        path = os.path.join(indexes, APT_INDEXES[source.package])
        if not os.path.exists(path):
            raise FileNotFoundError(f"[corpus] {path} missing; run scripts/toy-model/corpus/fetch.sh")
        version = "unknown"
        if os.path.exists(path + ".version"):
            with open(path + ".version", encoding="utf-8") as f:
                version = f.read().strip()
        with lzma.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return [(os.path.basename(path), f.read())], version
    files, versions = [], []
    for package in (source.package,) if isinstance(source.package, str) else source.package:
        deb = debfile.find_deb(debs, package)
        files += list(debfile.read_files(deb, source.patterns))
        versions.append(debfile.version_of(deb))
    if source.extractor not in BINARY_EXTRACTORS:
        files = [(name, blob.decode("utf-8", errors="replace")) for name, blob in files]
    if not files:
        raise ValueError(f"[corpus] {source.name}: no file of {source.package} matches {source.patterns}")
    return sorted(files), versions[0] if len(set(versions)) == 1 else " ".join(versions)


def paragraphs(source, files):
    """Paragraphs of all files of a source (multi-file formats get them together)."""
    fn = getattr(extract, source.extractor)
    if source.extractor == "sword":
        yield from fn(dict(files), **source.args)
        return
    for _, content in files:
        yield from fn(content, **source.args)


def collect(source, debs, indexes):
    """Distinct cleaned sentences of one source, in file order, and its statistics."""
    files, version = source_texts(source, debs, indexes)
    stats = {"package": source.package, "version": version, "files": len(files), "paragraphs": 0,
             "license": source.license, "drops": {}}
    seen, out = set(), []
    for para in paragraphs(source, files):
        stats["paragraphs"] += 1
        for s in clean.sentences(para, source.lang, stats["drops"]):
            k = clean.key(s)
            if k not in seen:
                seen.add(k)
                out.append(s)
    stats["distinct"] = len(out)
    return out, stats


def interleave(per_source, seed):
    """One training order from several sources: each source shuffled, capped, then
    merged by a seeded random draw proportional to what each source has left, so every
    stretch of the order has all sources in proportion."""
    rng = random.Random(seed)
    queues = []
    for name in sorted(per_source):
        items, cap = per_source[name]
        items = list(items)
        rng.shuffle(items)
        queues.append(items[:cap] if cap else items)
    out = []
    while any(queues):
        sizes = [len(q) for q in queues]
        pick = rng.choices(range(len(queues)), weights=sizes)[0]
        out.append(queues[pick].pop())
    return out


def build(debs, indexes, out_dir, only_langs=None, eval_only=False, sources=SOURCES):
    os.makedirs(out_dir, exist_ok=True)
    report = {"sources": {}, "languages": {}, "seed": SEED, "eval_only": eval_only}
    by_lang = {}
    for source in sources:
        if only_langs and source.lang not in only_langs:
            continue
        if eval_only and source.role != "eval":
            continue
        t = time.time()
        sentences, stats = collect(source, debs, indexes)
        stats["seconds"] = round(time.time() - t, 1)
        report["sources"][source.name] = stats
        print(f"{source.name:16s} {stats['distinct']:7d} sentences from {stats['paragraphs']} paragraphs "
              f"({stats['seconds']} s)", flush=True)
        by_lang.setdefault(source.lang, {"train": {}, "eval": {}})[source.role][source.name] = (sentences, source.cap)
    for lang, roles in sorted(by_lang.items()):
        held_out = {}
        for name, (items, _) in sorted(roles["eval"].items()):
            for s in items:
                held_out.setdefault(clean.key(s), s)
        train_keys, train = set(), {}
        for name, (items, cap) in roles["train"].items():
            kept = []
            for s in items:
                k = clean.key(s)
                if k not in held_out and k not in train_keys:  # across sources too
                    train_keys.add(k)
                    kept.append(s)
            train[name] = (kept, cap)
        order = interleave(train, f"{SEED}-{lang}")
        eval_list = list(held_out.values())
        random.Random(f"{SEED}-{lang}-eval").shuffle(eval_list)
        eval_list = eval_list[:MAX_EVAL]
        with open(os.path.join(out_dir, f"eval-{lang}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(eval_list) + "\n")
        if eval_only:
            report["languages"][lang] = {"eval_sentences": len(eval_list)}
            print(f"{lang}: {len(eval_list)} held out (no training file: --eval-only)", flush=True)
            continue
        path = os.path.join(out_dir, f"train-{lang}.txt.xz")
        data = ("\n".join(order) + "\n").encode("utf-8")
        with lzma.open(path, "wb", preset=6) as f:
            f.write(data)
        report["languages"][lang] = {
            "train_sentences": len(order), "eval_sentences": len(eval_list),
            "train_per_source": {n: len(v[0][: v[1]] if v[1] else v[0]) for n, v in train.items()},
            "train_sha256": hashlib.sha256(data).hexdigest(), "train_xz_bytes": os.path.getsize(path)}
        print(f"{lang}: {len(order)} training sentences ({os.path.getsize(path) / 1e6:.1f} MB xz), "
              f"{len(eval_list)} held out", flush=True)
    with open(os.path.join(out_dir, "stats.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False, sort_keys=True)
    return report


def write_sample(out_dir, sample_dir, n=40):
    os.makedirs(sample_dir, exist_ok=True)
    for name in sorted(os.listdir(out_dir)):
        if name.startswith("train-") and name.endswith(".txt.xz"):
            with lzma.open(os.path.join(out_dir, name), "rt", encoding="utf-8") as f:
                lines = [next(f) for _ in range(n)]
            target = name[: -len(".xz")]
        elif name.startswith("eval-"):
            with open(os.path.join(out_dir, name), encoding="utf-8") as f:
                lines = f.readlines()[:n]
            target = name
        else:
            continue
        with open(os.path.join(sample_dir, target), "w", encoding="utf-8") as f:
            f.writelines(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debs", default=".device-carry/corpus-debs")
    ap.add_argument("--indexes", default=".device-carry/corpus-indexes")
    ap.add_argument("--out", default=".device-carry/corpus-full")
    ap.add_argument("--langs", default=None, help="comma-separated subset, e.g. en,de")
    ap.add_argument("--sample", default=None, help="also write a small sample here")
    ap.add_argument("--eval-only", action="store_true",
                    help="only the held-out sources: eval-LL.txt and stats.json, no training files")
    args = ap.parse_args(argv)
    build(args.debs, args.indexes, args.out, args.langs.split(",") if args.langs else None, args.eval_only)
    if args.sample:
        write_sample(args.out, args.sample)


if __name__ == "__main__":
    main()
