"""Extracts the small word lists the sentence generator uses from Debian's /usr/share/dict
packages (run here once; its output is committed in wordlists/, see wordlists/SOURCES.md).

The choice is deterministic for a given package version: filter by a pattern, sort, then
draw with a fixed seed. Patterns keep short, regular words (nouns recognisable by their
ending, so the generator can give them the right article) that espeak-ng reads well.

  /usr/bin/python3 scripts/toy-model/extract_wordlists.py
"""
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DICT = "/usr/share/dict"

# (output file, source list, pattern, how many)
LISTS = [
    ("names.txt", "american-english", r"^[A-Z][a-z]{2,6}$", 120),
    ("en_nouns.txt", "american-english", r"^[a-z]{3,8}(tion|ment|ness)$", 120),
    ("de_nouns.txt", "ngerman", r"^[A-ZÄÖÜ][a-zäöüß]{3,7}(?<!s)$", 140),
    ("fr_nouns_f.txt", "french", r"^[b-df-hj-np-tv-z][a-zéèêàç]{2,6}(tion|ure|ette|ance)$", 70),
    ("fr_nouns_m.txt", "french", r"^[b-df-hj-np-tv-z][a-zéèêàç]{2,6}(age|eau|isme)$", 70),
    ("es_nouns_f.txt", "spanish", r"^[b-df-hj-np-tv-z][a-záéíóúñ]{2,6}(ción|dad|ura)$", 70),
    ("es_nouns_m.txt", "spanish", r"^[b-df-hj-np-tv-z][a-záéíóúñ]{2,6}(miento|ero|aje)$", 70),
]


def main():
    for name, source, pattern, count in LISTS:
        with open(os.path.join(DICT, source), encoding="utf-8") as f:
            words = sorted({w.strip() for w in f if re.match(pattern, w.strip())})
        picked = sorted(random.Random(f"hark-toy-{name}").sample(words, count))
        with open(os.path.join(HERE, "wordlists", name), "w", encoding="utf-8") as f:
            f.write("\n".join(picked) + "\n")
        print(f"{name}: {count} of {len(words)} matching words in {source}")


if __name__ == "__main__":
    main()
