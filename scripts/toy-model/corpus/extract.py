"""Paragraph extractors, one per source format. Each takes the text of one file and yields
paragraphs of running text (lines joined); clean.py then cuts them into sentences and
drops what a person would not say. Extractors drop what is plainly not prose (code,
tables, headings, attributions) so the cleaner sees less noise.
"""
import html
import html.parser
import re
import struct
import zlib


def _join(lines):
    """Joins wrapped lines; a line ending in '-' before a lower-case word keeps the hyphen
    without a space ('E-\\nMail' -> 'E-Mail')."""
    out = ""
    for line in (l.strip() for l in lines):
        if not line:
            continue
        if out.endswith("-") and line[:1].islower():
            out += line
        else:
            out = f"{out} {line}" if out else line
    return out


def fortunes(text):
    """fortune(6) data files: entries separated by lines holding only '%'. Attribution
    lines ('-- Author') and indented verse/code blocks of an entry are dropped."""
    for entry in re.split(r"^%\s*$", text, flags=re.M):
        lines = []
        for line in entry.splitlines():
            if re.match(r"^\s*(--|—|~~)", line) or re.match(r"^\s{8,}\S", line) or re.match(r"^\s*[A-Z]:\s", line):
                continue
            lines.append(line)
        para = _join(lines)
        if para:
            yield para


_GROFF_SKIP_BLOCK = {".nf": ".fi", ".EX": ".EE", ".TS": ".TE", ".EQ": ".EN", ".de": "..", ".ig": ".."}
_GROFF_BREAK = re.compile(r"^[.'](PP|P|LP|TP|IP|HP|SH|SS|sp|br|RS|RE|TH|in|ti|ne|bp|SY|YS|UR|UE|MT|ME|nh|ad|hy|ft)\b")


def _groff_inline(line):
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)           # font changes
    line = re.sub(r"\\\*(\[[^\]]*\]|\(..|.)", "", line)           # strings
    line = re.sub(r"\\\((aq|cq|oq)", "'", line)
    line = re.sub(r"\\\((em|en)", " - ", line)
    line = re.sub(r"\\\(..|\\\[[^\]]*\]", "", line)               # other special characters
    line = line.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\").replace("\\ ", " ")
    line = re.sub(r"\\[|^%c]", "", line)
    return line


def groff(text):
    """man pages: text lines between paragraph macros; .B/.I lines keep their text;
    no-fill blocks (.nf/.EX/.TS ...) and comments are dropped."""
    para, skip_until, drop_tag = [], None, False
    for line in text.splitlines():
        if skip_until:
            if line.startswith(skip_until):
                skip_until = None
            continue
        head = line.split(" ")[0]
        if head in _GROFF_SKIP_BLOCK:
            skip_until = _GROFF_SKIP_BLOCK[head]
            continue
        if line.startswith(('.\\"', "'\\\"", '\\"')):
            continue
        if _GROFF_BREAK.match(line) or not line.strip():
            if para:
                yield _join(para)
            para = []
            drop_tag = line.startswith((".TP", ".TQ"))  # the next line is the item's tag
            continue
        if drop_tag and (not line.startswith((".", "'")) or re.match(r"^\.(B|I|BR|IR|RB|RI|BI|IB)\b", line)):
            drop_tag = False
            continue
        m = re.match(r"^\.(B|I|BR|IR|RB|RI|BI|IB|SM|SB)\s+(.*)", line)
        if m:
            line = m.group(2).replace('"', "")
        elif line.startswith((".", "'")):
            continue
        para.append(_groff_inline(line))
    if para:
        yield _join(para)


class _Paragraphs(html.parser.HTMLParser):
    """Text of the paragraph elements named in `tags` ("p", or "div.para" for a div of
    class "para"). Code-like inline elements (commands, file names) get a "§" mark, which
    clean.py rejects, so only the sentence holding one is dropped, not its paragraph."""
    CODE = {"code", "pre", "cmd", "sys", "file", "input", "output", "var", "kbd", "samp", "screen", "tt"}

    def __init__(self, tags):
        super().__init__(convert_charrefs=True)
        self.tags, self.open_tag, self.inner, self.buf, self.out = tags, None, 0, [], []

    def _matches(self, tag, attrs):
        if tag in self.tags:
            return True
        classes = (dict(attrs).get("class") or "").split()
        return any(f"{tag}.{c}" in self.tags for c in classes)

    def handle_starttag(self, tag, attrs):
        tag = tag.split(":")[-1]
        if self.open_tag is None:
            if self._matches(tag, attrs):
                self.open_tag, self.inner, self.buf = tag, 0, []
            return
        if tag == self.open_tag:
            self.inner += 1
        elif tag in self.CODE:
            self.buf.append("§")
        elif tag == "br":
            self.buf.append(" ")

    def handle_endtag(self, tag):
        tag = tag.split(":")[-1]
        if tag != self.open_tag:
            return
        if self.inner:
            self.inner -= 1
            return
        self.out.append(_join("".join(self.buf).splitlines()))
        self.open_tag = None

    def handle_data(self, data):
        if self.open_tag:
            self.buf.append(data)


def markup(text, tags=("p",)):
    """HTML or XML (help pages, Mallard .page files, DocBook HTML): the text of the
    paragraph elements."""
    parser = _Paragraphs(set(tags))
    parser.feed(text)
    parser.close()
    yield from (p for p in parser.out if p)


def plain(text):
    """Plain-text books (debian-reference *.txt): blank-line separated paragraphs; table
    rows, numbered headings, bullets and deeply indented (code) lines are dropped."""
    para = []
    for line in text.splitlines() + [""]:
        s = line.strip()
        junk = (re.match(r"^[+|]", s) or re.match(r"^(\d+\.)+\d*\s", s) or re.match(r"^[*o•]\s", s)
                or re.match(r"^\s{8,}", line) or re.match(r"^(Tabelle|Table|Tableau|Tabla|Abbildung|Figure)\b", s))
        if not s or junk:
            if para:
                yield _join(para)
            para = []
            continue
        para.append(s)


def descriptions(text, lang):
    """apt's Translation-LL files: the long description paragraphs of every package
    (' .' separates paragraphs; lines indented twice are verbatim, list items dropped)."""
    field = f"Description-{lang}:"
    inside, para = False, []
    for line in text.splitlines() + [""]:
        if line.startswith(field):
            inside, para = True, []
            continue
        if not inside:
            continue
        if not line.startswith(" "):
            if para:
                yield _join(para)
            inside, para = False, []
            continue
        body = line[1:]
        if body.strip() == "." or body.startswith(" ") or re.match(r"^\s*[*+\-o]\s", body):
            if para:
                yield _join(para)
            para = []
            continue
        para.append(body)


def wordnet_examples(text):
    """WordNet data.* files: the quoted usage examples of each gloss, as sentences
    (first letter capitalised, a period added when the example has no end mark)."""
    for line in text.splitlines():
        if line.startswith("  ") or "|" not in line:
            continue  # licence header
        for example in re.findall(r'"([^"]{8,})"', line.split("|", 1)[1]):
            example = example.strip()
            if not re.search(r"[.!?]$", example):
                example += "."
            yield example[0].upper() + example[1:]


def ding(text, side):
    """trans-de-en (Ding dictionary, 'german :: english' lines): the entries of one side
    that are whole sentences (capitalised, ending in . ! ?). side 0 = German, 1 = English."""
    for line in text.splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        for part in line.split(" :: ")[side].split(" | "):
            for item in part.split("; "):
                item = item.strip()
                if re.match(r"^[A-ZÄÖÜ][^{}\[\]]*[.!?]$", item) and len(item.split()) >= 3:
                    yield item



def sword(files):
    """SWORD zText Bible modules (CompressType=ZIP, BlockType=BOOK): files is
    {name: bytes} holding ot/nt .bzs (block index: offset, size, unpacked size), .bzz
    (zlib blocks) and .bzv (verse index: block, offset, size); yields each verse's text
    with its OSIS markup removed."""
    for testament in ("ot", "nt"):
        names = {ext: next((n for n in files if n.endswith(f"/{testament}.{ext}")), None) for ext in ("bzs", "bzz", "bzv")}
        if None in names.values():
            continue
        bzs, bzz, bzv = (files[names[e]] for e in ("bzs", "bzz", "bzv"))
        blocks = {}
        for i in range(len(bzv) // 10):
            block, start, size = struct.unpack_from("<IIH", bzv, i * 10)
            if size == 0 or block * 12 + 12 > len(bzs):
                continue
            if block not in blocks:
                offset, packed, _ = struct.unpack_from("<III", bzs, block * 12)
                blocks[block] = zlib.decompress(bzz[offset: offset + packed])
            text = blocks[block][start: start + size].decode("utf-8", errors="replace")
            text = re.sub(r"<note\b.*?</note>", " ", text, flags=re.S)
            text = html.unescape(re.sub(r"<[^>]*>", " ", text))
            if text.strip():
                yield _join([text])


def gettext_catalog(blob, side):
    """Compiled gettext catalogs (.mo): side "msgstr" yields the translations, "msgid" the
    original (English) strings; plural forms give their first form. The header entry
    (empty msgid) is skipped."""
    if len(blob) < 28:
        return
    magic = struct.unpack_from("<I", blob)[0]
    order = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if order is None:
        raise ValueError("[corpus] not a gettext .mo file (bad magic number)")
    _, count, originals, translations = struct.unpack_from(order + "4I", blob, 4)
    for i in range(count):
        id_len, id_off = struct.unpack_from(order + "2I", blob, originals + 8 * i)
        str_len, str_off = struct.unpack_from(order + "2I", blob, translations + 8 * i)
        if id_len == 0:
            continue
        raw = blob[id_off: id_off + id_len] if side == "msgid" else blob[str_off: str_off + str_len]
        text = raw.split(b"\0")[0].decode("utf-8", errors="replace")
        if text.strip():
            yield _join(text.splitlines())


# GCIDE (dictd text): an entry starts at column 0 with "Word \Pro*nun"ci*a`tion\, pos.";
# its senses, sub-entries and quotations are indented below it.
_GCIDE_HEAD = re.compile(r"^\S[^\\\n]*\\[^\\\n]*\\")
_GCIDE_SENSE = re.compile(r"^\s{3}(\d+\.|\([a-z]\))\s")
_GCIDE_QUOTE = re.compile(r"^\s{6,}\S")
# A citation ("--Shak.", "-- Wordsworth.") runs to the end of its line. Some remarks begin
# the same way ("-- So called from the keel ..."): their line's rest is lost and the sentence
# joins the next line's words; ~0.1 % of the source's sentences, left as they are (telling
# the two apart changes the English corpus, and so every state's data position).
_GCIDE_CITATION = re.compile(r"\s*--\s?[A-Z(].*$")
_GCIDE_POS = re.compile(r"^[,\s]*((v|n|a|adv|prep|conj|interj|pron|p|pr|imp|pl|sing|i|t|vb|superl|compar|"
                        r"obs|fem|masc|pers|poss|pres|inf|perh|obj|prop|dim|sc|e|f|&)\.[,;\s]*)+")
_GCIDE_AS = re.compile(r"[;,:]\s*as,\s+", re.I)


def _gcide_strip(text):
    """One sense's text without the dictionary's apparatus: bracketed etymologies and
    labels (nested, as "[OE. fne['o]san.]"), braces kept as their words, citations."""
    text = re.sub(r"\w\[[^\]\s]{1,5}\]|\[[^\]\s]{1,5}\]\w", "§", text)  # accents written "caf['e]": unsayable
    prev = None
    while prev != text:
        prev, text = text, re.sub(r"\[[^\[\]]*\]", " ", text)
    text = text.replace("{", "").replace("}", "")
    text = re.sub(r"[;,]?\s*--\s*", ", ", text)  # "bounded; -- opposed to infinite"
    text = re.sub(r"^(Hence|Also|Specifically|Formerly)[;,:]\s*(?=[A-Z])", "", text.strip())
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"(?<!\.)\.\.$", ".", text)  # "linen.." where a citation followed


def _gcide_sense(text):
    """A sense's definition, then each of its usage examples ("...; as, rennet
    coagulates milk; heat coagulates the white of an egg.") as a sentence of its own."""
    text = _gcide_strip(_GCIDE_POS.sub("", text))
    if not text:
        return
    head, *examples = _GCIDE_AS.split(text, maxsplit=1)
    head = head.rstrip(" ;,:")
    if head and head[0].isupper() and not head.startswith("See "):  # "See Sergeanty.": a cross-reference
        yield head if re.search(r"[.!?]\"?$", head) else head + "."  # may end in a quotation
    for example in (examples[0].split(";") if examples else []):
        example = example.strip().rstrip('."').strip()  # 'as, to mope. "Moping melancholy."'
        if len(example.split()) >= 3:
            yield example[0].upper() + example[1:] + "."


def _gcide_flush(sense, quote):
    """The paragraphs of the sense and quotation lines gathered so far; empties both."""
    out = list(_gcide_sense(" ".join(sense))) if sense else []
    said = _gcide_strip(" ".join(quote))
    if said:  # not a lone "[1913 Webster]"
        out.append(said)
    sense.clear()
    quote.clear()
    return out


def gcide(text):
    """GCIDE (dict-gcide, the 1913 Webster revised): definitions, their usage examples and
    the quotations that illustrate them. Headwords, pronunciations, etymologies, labels
    ("[Obs.]", "[1913 Webster]"), synonym lists and citations ("--Shak.") are dropped;
    definitions that do not begin as a sentence (lower-case glosses) are left out."""
    entries, current = [], None
    for line in text.splitlines():
        head = _GCIDE_HEAD.match(line)
        if head:
            current = [line[head.end():]]
            entries.append(current)
        elif current is not None:
            current.append(line)
    for lines in entries:
        sense, quote, skip = [], [], False
        for line in lines:
            stripped = line.strip()
            # Synonym lists, usage notes, and phrase sub-entries ("{Not to be sneezed at}, ...",
            # after a blank line; a brace inside a sense is a cross-reference) define other words.
            sub_entry = stripped.startswith("{") and not sense and not quote
            ends = not stripped or sub_entry or stripped.startswith(("Syn:", "Note:", "Usage:"))
            if ends:
                yield from _gcide_flush(sense, quote)
                skip = bool(stripped)  # a blank line ends the skipped block
                continue
            if skip:
                continue
            said = _GCIDE_CITATION.sub("", stripped)
            if quote or (not sense and _GCIDE_QUOTE.match(line)):  # a quotation follows a blank line
                quote.append(said)
                if said != stripped:  # its citation ends it
                    yield from _gcide_flush(sense, quote)
                continue
            if _GCIDE_SENSE.match(line):
                yield from _gcide_flush(sense, quote)
                said = _GCIDE_CITATION.sub("", _GCIDE_SENSE.sub("", line).strip())
            sense.append(said)
        yield from _gcide_flush(sense, quote)
