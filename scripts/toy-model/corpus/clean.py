"""Turns paragraphs of written text into sentences a person would say, written the way
Whisper writes transcripts, for English, German, French and Spanish.

The rules (numbered as in the tests, test_clean.py):
  R1  Unicode NFC; no-break and thin spaces become spaces; whitespace collapses.
  R2  Typographic apostrophes become ASCII "'"; double quotes and guillemets are dropped
      (nobody hears them); single quotes used as quotes are dropped.
  R3  "…" becomes "..."; a dash between words (" - ", "–", "—") becomes a comma; short
      asides in parentheses are dropped (a reader skips them; espeak would read them).
  R4  Abbreviations that are spoken as words are written out the way Whisper writes the
      spoken words ("z. B." -> "zum Beispiel", "e.g." -> "for example"); titles Whisper
      abbreviates itself stay ("Mr.", "Dr.", "M.", "Sr.").
  R5  Sentences end at . ! ? followed by a capital, except after those titles, single
      initials, and (German) numbers, which are ordinals there ("am 3. Mai").
  R6  A sentence is dropped when it has something a speaker cannot say or Whisper would
      not write: URLs, paths, e-mail, markup or code characters, brackets, digits mixed
      with letters, version or decimal numbers, unknown abbreviations, words in other
      scripts, shouting, code identifiers, or words of more than 25 letters.
  R7  Numbers: plain integers of up to 4 digits (years, counts) stay digits; 0 and 2-10
      standing alone become words in every language, 1 only in English (elsewhere its
      gender is unknown); "50 %" becomes "50%"; English ordinals "1st".."31st" stay.
  R8  A sentence starts with a capital (Spanish "¿"/"¡" may precede it) and ends with
      . ! ? or ...; 2 to 32 words, at most 200 characters.
  R9  French puts a space before ? ! : ; (as Whisper's French transcripts do); the other
      languages put none.
  R10 The sentence is in the language: it uses more of its function words than of any
      other of the four (4+ words need at least one of its own).
"""
import re
import unicodedata

LANGS = ("en", "de", "fr", "es")
MIN_WORDS, MAX_WORDS, MAX_CHARS, MAX_WORD_LETTERS = 2, 32, 200, 25

SPACES = "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000\t\r\n"
DOUBLE_QUOTES = "\"“”„‟«»‹›″"
APOSTROPHES = "’‘‛`´ʼ′"

# R4: spoken expansions. Keys are matched as whole tokens (the dots are part of them).
EXPANSIONS = {
    "en": {"e.g.": "for example", "i.e.": "that is", "approx.": "approximately", "vs.": "versus",
           "incl.": "including", "esp.": "especially", "resp.": "respectively"},
    "de": {"z. B.": "zum Beispiel", "z.B.": "zum Beispiel", "d. h.": "das heißt", "d.h.": "das heißt",
           "u. a.": "unter anderem", "u.a.": "unter anderem", "usw.": "und so weiter", "bzw.": "beziehungsweise",
           "ggf.": "gegebenenfalls", "evtl.": "eventuell", "ca.": "circa", "Nr.": "Nummer", "inkl.": "inklusive",
           "bspw.": "beispielsweise", "vgl.": "vergleiche", "u. U.": "unter Umständen", "z. T.": "zum Teil",
           "o. ä.": "oder ähnlich", "o.ä.": "oder ähnlich", "max.": "maximal", "min.": "mindestens"},
    "fr": {"p. ex.": "par exemple", "p.ex.": "par exemple", "c.-à-d.": "c'est-à-dire", "c-à-d": "c'est-à-dire",
           "c.à.d.": "c'est-à-dire", "env.": "environ", "Mme": "Madame", "Mlle": "Mademoiselle"},
    "es": {"p. ej.": "por ejemplo", "p.ej.": "por ejemplo", "Ud.": "usted", "Uds.": "ustedes",
           "aprox.": "aproximadamente", "pág.": "página", "núm.": "número", "admón.": "administración"},
}
# R4/R5: abbreviations Whisper writes as they are; a period after them ends no sentence.
KEPT = {
    "en": {"Mr.", "Mrs.", "Ms.", "Dr.", "St.", "Prof.", "Jr.", "Sr.", "etc.", "Mt."},
    "de": {"Dr.", "Prof.", "Hr.", "Fr.", "St.", "etc.", "Str."},
    "fr": {"M.", "Dr.", "St.", "etc.", "Mgr."},
    "es": {"Sr.", "Sra.", "Srta.", "Dr.", "Dra.", "etc.", "D.", "Dña."},
}
NUMBER_WORDS = {
    "en": "zero one two three four five six seven eight nine ten".split(),
    "de": "null eins zwei drei vier fünf sechs sieben acht neun zehn".split(),
    "fr": "zéro un deux trois quatre cinq six sept huit neuf dix".split(),
    "es": "cero uno dos tres cuatro cinco seis siete ocho nueve diez".split(),
}
# Letters a sentence of the language may contain (besides a-z A-Z); others reject it (R6).
LETTERS = {
    "en": "éèëïôöüçñáàâê$",
    "de": "äöüßÄÖÜéèàçáñ",
    "fr": "àâæçéèêëîïôœùûüÿÀÂÆÇÉÈÊËÎÏÔŒÙÛÜŸñ",
    "es": "áéíóúüñÁÉÍÓÚÜÑ¿¡àèç",
}
PUNCT = ".,;:!?'-%"

# R10: frequent function words per language; a sentence must use its own language's more
# than any other's (drops untranslated strings, rot13 jokes, quotations in other languages).
STOPWORDS = {
    "en": set("the a an and or of to in is are was were be it that this with for on not you i he she we they "
              "have has had do does did will would can could there what which who your my his her from at by as "
              "if but all so no".split()),
    "de": set("der die das und oder ist sind war ein eine einen nicht ich du er sie es wir ihr mit von zu im in "
              "auf für den dem des sich auch wie was wenn dass aber noch nur so man hat haben wird werden kann "
              "bei aus nach um".split()),
    "fr": set("le la les un une des et ou est sont était de du au aux en dans pour pas ne je tu il elle nous "
              "vous ils qui que quoi sur avec ce cette ces se sa son ses mais plus on par être avoir a fait "
              "très tout".split()),
    "es": set("el la los las un una unos y o es son era de del al en para por no yo tú él ella nosotros "
              "usted que qué con se su sus pero más como lo le les este esta está hay ser muy todo cuando "
              "si".split()),
}


def language_ok(sentence, lang):
    """R10."""
    words = [w.strip(".,;:!?¿¡'").lower() for w in sentence.split()]
    own = sum(w in STOPWORDS[lang] for w in words)
    other = max(sum(w in STOPWORDS[o] and w not in STOPWORDS[lang] for w in words) for o in LANGS if o != lang)
    if len(words) >= 4 and own == 0:
        return False
    return own >= other


_URLISH = re.compile(r"://|www\.|@|\.(com|org|net|de|fr|es|html?|txt|conf|so|py|sh|deb|gz|xml)\b", re.I)
_FORBIDDEN = re.compile(r"[/\\|_=<>{}\[\]()#*~^+&§°$€£]")  # § marks code (extract.py)
_INITIAL = re.compile(r"^[A-ZÄÖÜÀ-Ý]\.$")


def _protect(text, lang):
    """Expands spoken abbreviations (R4)."""
    for short, long in sorted(EXPANSIONS[lang].items(), key=lambda kv: -len(kv[0])):
        pattern = r"(?<![\w.])" + re.escape(short).replace(r"\ ", r"\s?") + r"(?![\w])"
        text = re.sub(pattern, long, text)
    return text


def normalize_chars(text):
    """R1-R3, language-independent."""
    text = unicodedata.normalize("NFC", text)
    for ch in SPACES:
        text = text.replace(ch, " ")
    text = text.replace("\u00ad", "").replace("\u200b", "")  # soft hyphen, zero-width space
    for ch in APOSTROPHES:
        text = text.replace(ch, "'")
    for ch in DOUBLE_QUOTES:
        text = text.replace(ch, " ")
    text = text.replace("…", "...")
    text = re.sub(r"\s*\([^()]{0,80}\)", "", text)  # asides in brackets are left unsaid
    text = re.sub(r"\s+[-–—]{1,2}\s+|\s*[–—]\s*", ", ", text)
    text = re.sub(r"(?<![\w])'(?=\w)|(?<=[\w.,!?])'(?![\w])", "", text)  # quotes, not apostrophes
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)  # spacing is re-done per language (R9)
    text = re.sub(r",(\s*,)+", ",", text)
    text = re.sub(r"^[,;:\s-]+", "", text)
    return text


def split_sentences(paragraph, lang):
    """R5: sentences of a paragraph (after R1-R4)."""
    text = _protect(normalize_chars(paragraph), lang)
    tokens = text.split(" ")
    out, current = [], []
    for i, tok in enumerate(tokens):
        current.append(tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if not re.search(r"[.!?]$", tok) or not nxt:
            continue
        if tok in KEPT[lang] or _INITIAL.match(tok):
            continue
        if lang == "de" and re.fullmatch(r"\d+\.", tok):
            continue  # German ordinal: "am 3. Mai"
        first = nxt.lstrip("¿¡'")
        if first and (first[0].isupper() or first[0].isdigit()):
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return [s.strip() for s in out if s.strip()]


def _numbers(sentence, lang):
    """R7: returns the sentence with small numbers as words, or None to drop it."""
    tokens = re.sub(r"(\d) %", r"\1%", sentence).split(" ")
    for i, tok in enumerate(tokens):
        if not re.search(r"\d", tok):
            continue
        core, tail = re.fullmatch(r"(.*?)([.,;:!?]*)", tok).groups()
        money = lang == "en" and core.startswith("$")
        digits = core[1:] if money else core
        if lang == "de" and re.fullmatch(r"\d{1,2}", digits) and tail.startswith(".") and i + 1 < len(tokens):
            continue  # German ordinal inside the sentence: "am 3. Mai"
        if lang == "en" and re.fullmatch(r"\d?(1st|2nd|3rd|\dth)", digits):
            continue
        if re.fullmatch(r"(0|[1-9]\d{0,3})%", digits) and not money:
            continue
        if not re.fullmatch(r"0|[1-9]\d{0,3}", digits):
            return None  # mixed with letters, decimals, versions, times, long numbers
        value = int(digits)
        if money or value > 10 or (value == 1 and lang != "en"):
            continue
        tokens[i] = NUMBER_WORDS[lang][value] + tail
    return " ".join(tokens)


def _reject_reason(s, lang):
    if _URLISH.search(s):
        return "url-or-file"
    if _FORBIDDEN.search(re.sub(r"\$(?=\d)", "", s) if lang == "en" else s):
        return "forbidden-char"
    allowed = LETTERS[lang] + PUNCT + " "
    if any(not (c.isascii() and (c.isalnum() or c in allowed)) and c not in allowed for c in s):
        return "charset"
    words = s.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or len(s) > MAX_CHARS:
        return "length"
    if any(len(re.sub(r"\W", "", w)) > MAX_WORD_LETTERS for w in words):
        return "long-word"
    caps = [w for w in words if len(re.sub(r"\W", "", w)) >= 2 and re.sub(r"\W", "", w).isupper()]
    if len(caps) > 2 or any(len(re.sub(r"\W", "", w)) > 5 for w in caps):
        return "shouting"
    if any(re.match(r"^[a-zà-ÿ]+[A-ZÀ-Ý]", w) for w in words):
        return "camel-case"  # code identifiers (getValue); brand names (LibreOffice) stay
    if re.search(r"(^|\s)-|-($|\s|[.,;:!?])|--", s):
        return "dangling-hyphen"
    abbrev = [w for w in words[:-1] if re.fullmatch(r"[^\W\d]{1,5}\.", w) and w not in KEPT[lang]]
    if abbrev:
        return "abbreviation"
    head = s.lstrip("¿¡") if lang == "es" else s
    if not head or not head[0].isupper():
        return "no-capital"
    if not re.search(r"([.!?]|\.\.\.)$", s) or re.search(r"[,;:]\.?$", s):
        return "no-final-punctuation"
    return None


def french_spacing(s, lang):
    """R9."""
    s = re.sub(r"\s+([!?:;])", r"\1", s)
    if lang == "fr":
        s = re.sub(r"(?<=\S)([!?:;])", r" \1", s)
        s = re.sub(r"([!?]) ([!?])", r"\1\2", s)
    return s


def clean_sentence(s, lang):
    """(sentence written as Whisper would write it, None) or (None, why it was dropped)."""
    s = s.strip()
    if lang == "es" and s and s[0] in "¿¡" and len(s) > 1:
        s = s[0] + s[1:].lstrip()
    reason = _reject_reason(s, lang)
    if reason:
        return None, reason
    if not language_ok(s, lang):
        return None, "language"
    s = _numbers(s, lang)
    if s is None:
        return None, "number-format"
    return french_spacing(s, lang), None


def sentences(paragraph, lang, stats=None):
    """Cleaned sentences of one paragraph; `stats` (a dict) counts the reasons for drops."""
    out = []
    for raw in split_sentences(paragraph, lang):
        s, reason = clean_sentence(raw, lang)
        if stats is not None:
            key = reason or "kept"
            stats[key] = stats.get(key, 0) + 1
        if s:
            out.append(s)
    return out


def key(sentence):
    """Duplicate key: the words without case and punctuation."""
    return " ".join(re.sub(r"[^\w\s']", " ", sentence.lower()).split())
