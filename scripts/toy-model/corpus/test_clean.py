"""Unit tests of the corpus cleaning rules (clean.py R1-R10), the extractors, the .deb
reader and the train/held-out separation of the sources. Standard library only:

  python3 -m unittest discover -s scripts/toy-model/corpus -p 'test_*.py'
"""
import io
import lzma
import os
import random
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import build  # noqa: E402
import clean  # noqa: E402
import debfile  # noqa: E402
import extract  # noqa: E402
import sources  # noqa: E402


def one(text, lang):
    """The cleaned sentence of `text`, or the reason it was dropped (as 'drop:REASON')."""
    s, reason = clean.clean_sentence(text, lang)
    return s if s is not None else f"drop:{reason}"


class CharacterRules(unittest.TestCase):
    def test_r1_spaces_and_nfc(self):
        self.assertEqual(clean.normalize_chars("Caf\u0065\u0301\u00a0au\u202flait\t est  bon."), "Café au lait est bon.")

    def test_r2_quotes_dropped_apostrophes_kept(self):
        self.assertEqual(clean.normalize_chars("He said “don’t go” to me."), "He said don't go to me.")
        self.assertEqual(clean.normalize_chars("Sie sagte „Hallo“ und «ciao»."), "Sie sagte Hallo und ciao.")
        self.assertEqual(clean.normalize_chars("L’homme dit 'oui' à l’été."), "L'homme dit oui à l'été.")

    def test_r3_dashes_and_ellipsis(self):
        self.assertEqual(clean.normalize_chars("Wait… no — it was me."), "Wait... no, it was me.")
        self.assertEqual(clean.normalize_chars("Tengo dos perros – y un gato."), "Tengo dos perros, y un gato.")
        self.assertEqual(clean.normalize_chars("An e-mail arrived."), "An e-mail arrived.")
        self.assertEqual(clean.normalize_chars("- Who is there?"), "Who is there?")
        self.assertEqual(clean.normalize_chars("Copy A (read-only) to B (hidden)."), "Copy A to B.")


class Splitting(unittest.TestCase):
    def test_r5_splits_at_sentence_ends(self):
        self.assertEqual(clean.split_sentences("It rains. We stay home! Do you mind? Yes.", "en"),
                         ["It rains.", "We stay home!", "Do you mind?", "Yes."])

    def test_r5_titles_and_initials_do_not_end_sentences(self):
        self.assertEqual(clean.split_sentences("Mr. Smith met J. R. Tolkien. They talked.", "en"),
                         ["Mr. Smith met J. R. Tolkien.", "They talked."])
        self.assertEqual(clean.split_sentences("M. Dupont est là. Il attend.", "fr"), ["M. Dupont est là.", "Il attend."])

    def test_r5_german_ordinals(self):
        self.assertEqual(clean.split_sentences("Er kam am 3. Mai. Dann ging er.", "de"),
                         ["Er kam am 3. Mai.", "Dann ging er."])

    def test_r5_spanish_opening_marks(self):
        self.assertEqual(clean.split_sentences("Hola. ¿Cómo estás? ¡Muy bien!", "es"),
                         ["Hola.", "¿Cómo estás?", "¡Muy bien!"])

    def test_r4_expansions_before_splitting(self):
        self.assertEqual(clean.split_sentences("Nimm z. B. das Rad. Es geht.", "de"),
                         ["Nimm zum Beispiel das Rad.", "Es geht."])
        self.assertEqual(clean.split_sentences("Use a pen, e.g. a red one.", "en"), ["Use a pen, for example a red one."])
        self.assertEqual(clean.split_sentences("Prenez un fruit, p. ex. une pomme.", "fr"),
                         ["Prenez un fruit, par exemple une pomme."])
        self.assertEqual(clean.split_sentences("Trae algo, p. ej. pan.", "es"), ["Trae algo, por ejemplo pan."])
        self.assertEqual(clean.split_sentences("Das kostet usw. und bzw. mehr.", "de"),
                         ["Das kostet und so weiter und beziehungsweise mehr."])


class SentenceRules(unittest.TestCase):
    def test_r6_drops_what_cannot_be_said(self):
        cases = [("See http://example.org for more.", "url-or-file"), ("Edit /etc/fstab as root.", "forbidden-char"),
                 ("Write to me at a@b.de today.", "url-or-file"), ("Call foo_bar now please.", "forbidden-char"),
                 ("The result [see above] is wrong.", "forbidden-char"), ("Open the file config.txt now.", "url-or-file"),
                 ("Use getValue to read it.", "camel-case"), ("THIS IS VERY LOUD TEXT.", "shouting"),
                 ("Install the package from Debian today.", None), ("Это не английский язык.", "charset"),
                 ("LibreOffice is a free office suite.", None),
                 ("He uses ext4 on his disk.", "number-format"), ("Version 2.6.32 is old now.", "number-format"),
                 ("It costs 3.50 in the shop.", "number-format"), ("Meet me at 10:30 tomorrow.", "number-format"),
                 ("The ca. two hundred people came.", "abbreviation")]
        for text, reason in cases:
            with self.subTest(text=text):
                got = one(text, "en")
                if reason is None:
                    self.assertFalse(got.startswith("drop:"), got)
                else:
                    self.assertEqual(got, f"drop:{reason}")

    def test_r7_numbers(self):
        self.assertEqual(one("He was 3 years old in 1990.", "en"), "He was three years old in 1990.")
        self.assertEqual(one("I have 1 dog and 12 cats.", "en"), "I have one dog and 12 cats.")
        self.assertEqual(one("Ich habe 1 Hund und 2 Katzen.", "de"), "Ich habe 1 Hund und zwei Katzen.")
        self.assertEqual(one("Il a 10 ans et 0 euro.", "fr"), "Il a dix ans et zéro euro.")
        self.assertEqual(one("Son 5 de los 20 que hay.", "es"), "Son cinco de los 20 que hay.")
        self.assertEqual(one("Das sind 5 % mehr als im Jahr 2019.", "de"), "Das sind 5% mehr als im Jahr 2019.")
        self.assertEqual(one("She came 2nd in the race.", "en"), "She came 2nd in the race.")
        self.assertEqual(one("It cost $5 at the shop.", "en"), "It cost $5 at the shop.")
        self.assertEqual(one("Er kam am 3. Mai an.", "de"), "Er kam am 3. Mai an.")
        self.assertEqual(one("The population was 123456 people.", "en"), "drop:number-format")
        self.assertEqual(one("Bond was agent 007 for years.", "en"), "drop:number-format")

    def test_r8_capital_and_final_mark(self):
        self.assertEqual(one("this starts low.", "en"), "drop:no-capital")
        self.assertEqual(one("A heading without an end", "en"), "drop:no-final-punctuation")
        self.assertEqual(one("The list follows:", "en"), "drop:no-final-punctuation")
        self.assertEqual(one("Well...", "en"), "drop:length")
        self.assertEqual(one("Well, maybe...", "en"), "Well, maybe...")
        self.assertEqual(one(" ".join(["word"] * 40) + ".", "en"), "drop:length")
        self.assertEqual(one("¿Dónde está el baño?", "es"), "¿Dónde está el baño?")

    def test_r9_french_spacing(self):
        self.assertEqual(one("Tu viens? Oui!", "fr"), "Tu viens ? Oui !")
        self.assertEqual(one("Il dit : viens ; on part !", "fr"), "Il dit : viens ; on part !")
        self.assertEqual(one("Kommst du ? Ja !", "de"), "Kommst du? Ja!")

    def test_r10_language(self):
        self.assertEqual(one("Choose the file and click on it.", "es"), "drop:language")
        self.assertEqual(one("Cbe dhé unpra snygn zvyybarf?", "es"), "drop:language")
        self.assertEqual(one("Elija el archivo y pulse sobre él.", "es"), "Elija el archivo y pulse sobre él.")
        self.assertEqual(one("Der Hund ist nicht im Haus.", "de"), "Der Hund ist nicht im Haus.")

    def test_sentences_counts_reasons(self):
        stats = {}
        out = clean.sentences("It rains today. See http://x.org now. The cat sleeps.", "en", stats)
        self.assertEqual(out, ["It rains today.", "The cat sleeps."])
        self.assertEqual(stats, {"kept": 2, "url-or-file": 1})

    def test_key_ignores_case_and_punctuation(self):
        self.assertEqual(clean.key("It's fine, Bob!"), clean.key("it's fine bob."))


class Extractors(unittest.TestCase):
    def test_fortunes_split_and_drop_attribution(self):
        text = "Life is short.\nEat dessert first.\n\t\t-- Anon\n%\nQ: Why?\nA: Because.\n%\nSecond one.\n"
        self.assertEqual(list(extract.fortunes(text)), ["Life is short. Eat dessert first.", "Second one."])

    def test_groff(self):
        text = ('.\\" comment\n.TH X 1\n.SH NAME\nx \\- does things\n.SH DESCRIPTION\n.PP\n\\fBx\\fP reads the '
                'file\\&.\nIt is fast\\&.\n.TP\n\\fB\\-v\\fR\nPrints more\\&.\n.nf\ncode here\n.fi\n.PP\nThe end\\&.\n')
        self.assertEqual(list(extract.groff(text)),
                         ["x - does things", "x reads the file. It is fast.", "Prints more.", "The end."])

    def test_markup_marks_code(self):
        text = ('<html><p class="x">Choose <b>File</b>\n - Open.</p><p>Type <code>ls</code> now. It lists files.</p>'
                '<page><p>Klicken Sie &amp; warten Sie.</p></page></html>')
        paragraphs = list(extract.markup(text))
        self.assertEqual(paragraphs, ["Choose File - Open.", "Type §ls now. It lists files.", "Klicken Sie & warten Sie."])
        self.assertEqual(clean.sentences(paragraphs[1], "en"), ["It lists files."])
        book = '<div class="section"><div class="para">One <div class="x">two</div> three.</div><p>No.</p></div>'
        self.assertEqual(list(extract.markup(book, tags=("div.para",))), ["One two three."])

    def test_plain_drops_tables_and_headings(self):
        text = "1.2. Heading\n\n    This is a\n    paragraph.\n\n    +---+\n    |a|b|\n\nTable 1.8. List\n"
        self.assertEqual(list(extract.plain(text)), ["This is a paragraph."])

    def test_descriptions(self):
        text = ("Package: x\nDescription-md5: 0\nDescription-de: kurz\n Ein Werkzeug, das\n hilft.\n .\n"
                " Es ist schnell.\n  verbatim line\n * item\n\nPackage: y\nDescription-en: other\n Not this.\n")
        self.assertEqual(list(extract.descriptions(text, "de")), ["Ein Werkzeug, das hilft.", "Es ist schnell."])

    def test_wordnet_examples(self):
        line = '00002724 29 v 01 choke 0 002 @ 0 | breathe hard; "She choked with emotion"; "we laughed"  \n'
        self.assertEqual(list(extract.wordnet_examples(line)), ["She choked with emotion.", "We laughed."])

    def test_gettext_catalog(self):
        import struct
        entries = [(b"", b"Project-Id: x"), (b"Hello there.", b"Hallo du."), (b"One file\0%d files", b"Eine Datei\0Dateien")]
        n = len(entries)
        ids_at, strs_at, data_at = 28, 28 + 8 * n, 28 + 16 * n
        data, ids, strs = b"", b"", b""
        for msgid, msgstr in entries:
            ids += struct.pack("<2I", len(msgid), data_at + len(data))
            data += msgid + b"\0"
            strs += struct.pack("<2I", len(msgstr), data_at + len(data))
            data += msgstr + b"\0"
        blob = struct.pack("<7I", 0x950412DE, 0, n, ids_at, strs_at, 0, 0) + ids + strs + data
        self.assertEqual(list(extract.gettext_catalog(blob, "msgstr")), ["Hallo du.", "Eine Datei"])
        self.assertEqual(list(extract.gettext_catalog(blob, "msgid")), ["Hello there.", "One file"])
        with self.assertRaisesRegex(ValueError, "not a gettext"):
            list(extract.gettext_catalog(b"x" * 40, "msgstr"))

    def test_gcide_definitions_examples_and_quotes(self):
        text = (
            "Sneeze \\Sneeze\\, v. i. [imp. & p. p. {Sneezed}; p. pr. & vb. n.\n"
            "   {Sneezing}.] [OE. snesen; cf. AS. fne['o]san.]\n"
            "   To emit air, chiefly through the nose, audibly and\n"
            "   violently. [Colloq.] --Boyle.\n"
            "   [1913 Webster]\n\n"
            "   {Not to be sneezed at}, not to be despised.\n"
            "   [1913 Webster]\n\n"
            "Coagulate \\Co*ag\"u*late\\, v. t.\n"
            "   1. To cause (a liquid) to curdle; as, rennet coagulates\n"
            "      milk; heat coagulates the white of an egg.\n"
            "   2. See {Curdle}.\n\n"
            "         This proffer is absurd and reasonless.   --Shak.\n\n"
            "   Syn: To thicken; concrete; curdle.\n"
            "        [1913 Webster]\n")
        self.assertEqual(list(extract.gcide(text)), [
            "To emit air, chiefly through the nose, audibly and violently.",
            "To cause (a liquid) to curdle.", "Rennet coagulates milk.", "Heat coagulates the white of an egg.",
            "This proffer is absurd and reasonless."])
        toot = 'Toot \\Toot\\, v. i.\n   To blow a horn. "A tooting horn." --Howell.\n'
        self.assertEqual(clean.sentences(next(extract.gcide(toot)), "en"), ["To blow a horn.", "A tooting horn."])
        mope = 'Mope \\Mope\\, v. i.\n   To be dull; as, to mope around. "Moping melancholy." --Milton.\n'
        self.assertEqual([s for p in extract.gcide(mope) for s in clean.sentences(p, "en")],
                         ["To be dull.", "To mope around.", "Moping melancholy."])
        # A word written with an accent code ("caf['e]") cannot be said: the sentence is dropped.
        accented = "Cafe \\Ca*fe\"\\, n.\n   A caf['e] or coffee house.\n"
        self.assertEqual(clean.sentences(next(extract.gcide(accented)), "en"), [])

    def test_ding_sides(self):
        line = "Ich bin müde.; Er ist da. {adj} :: I am tired.; He is here. | to go {vi}\n"
        self.assertEqual(list(extract.ding(line, 0)), ["Ich bin müde."])
        self.assertEqual(list(extract.ding(line, 1)), ["I am tired.", "He is here."])


def _fake_deb(path, files):
    """A minimal .deb (ar archive with data.tar.xz) holding `files` {name: bytes}."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, blob in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    members = {"debian-binary": b"2.0\n", "control.tar.xz": lzma.compress(b""), "data.tar.xz": lzma.compress(raw.getvalue())}
    with open(path, "wb") as f:
        f.write(debfile.AR_MAGIC)
        for name, blob in members.items():
            f.write(f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(blob):<10}`\n".encode())
            f.write(blob + (b"\n" if len(blob) % 2 else b""))


class DebReading(unittest.TestCase):
    def test_reads_matching_files(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "fortunes-xx_1.0-1_all.deb")
            _fake_deb(path, {"usr/share/games/fortunes/a": b"One.\n%\nTwo.\n", "usr/share/doc/x/copyright": b"c"})
            got = dict(debfile.read_files(path, ["usr/share/games/fortunes/*"]))
            self.assertEqual(got, {"usr/share/games/fortunes/a": b"One.\n%\nTwo.\n"})
            self.assertEqual(debfile.find_deb(d, "fortunes-xx"), path)
            self.assertEqual(debfile.version_of(path), "1.0-1")

    def test_bad_input_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x_1_all.deb")
            with open(path, "wb") as f:
                f.write(b"not an archive")
            with self.assertRaisesRegex(ValueError, r"\[corpus\].*not a \.deb"):
                list(debfile.read_files(path, ["*"]))
            with self.assertRaisesRegex(FileNotFoundError, "fetch.sh"):
                debfile.find_deb(d, "missing")


class Separation(unittest.TestCase):
    def test_no_package_feeds_both_training_and_evaluation(self):
        def names(role):
            out = set()
            for s in sources.SOURCES:
                if s.role == role:
                    out.update((s.package,) if isinstance(s.package, str) else s.package)
            return out
        train, held = names("train"), names("eval")
        self.assertFalse(train & held)
        for lang in clean.LANGS:
            roles = {s.role for s in sources.SOURCES if s.lang == lang}
            self.assertEqual(roles, {"train", "eval"}, lang)

    def test_interleave_is_deterministic_and_keeps_everything(self):
        per_source = {"a": (["a%d" % i for i in range(30)], None), "b": (["b%d" % i for i in range(10)], 5)}
        first = build.interleave(per_source, "seed")
        self.assertEqual(first, build.interleave(per_source, "seed"))
        self.assertEqual(len(first), 35)
        self.assertEqual(sum(x.startswith("b") for x in first), 5)
        self.assertLess(first.index(next(x for x in first if x.startswith("b"))), 20)  # spread, not appended

    def test_eval_only_writes_the_same_held_out_files(self):
        fake = [sources.Source("t-en", "en", "train", "fortunes-xx", ["usr/share/games/fortunes/*"], "fortunes", {},
                               None, "x"),
                sources.Source("e-en", "en", "eval", "fortunes-yy", ["usr/share/games/fortunes/*"], "fortunes", {},
                               None, "x")]
        said = ["The cat sat on the mat.", "We went home early.", "It rained all day long.", "Open the door now."]
        with tempfile.TemporaryDirectory() as d:
            debs = os.path.join(d, "debs")
            os.makedirs(debs)
            _fake_deb(os.path.join(debs, "fortunes-yy_1.0-1_all.deb"),
                      {"usr/share/games/fortunes/a": "\n%\n".join(said).encode() + b"\n"})
            _fake_deb(os.path.join(debs, "fortunes-xx_1.0-1_all.deb"),
                      {"usr/share/games/fortunes/a": b"A training line here.\n%\nThe cat sat on the mat.\n"})
            build.build(debs, d, os.path.join(d, "full"), sources=fake)
            os.remove(os.path.join(debs, "fortunes-xx_1.0-1_all.deb"))  # --eval-only never reads it
            report = build.build(debs, d, os.path.join(d, "eval"), eval_only=True, sources=fake)
            with open(os.path.join(d, "full", "eval-en.txt"), encoding="utf-8") as f:
                full = f.read()
            with open(os.path.join(d, "eval", "eval-en.txt"), encoding="utf-8") as f:
                self.assertEqual(f.read(), full)
            self.assertEqual(sorted(full.split("\n")[:-1]), sorted(said))
            self.assertEqual(sorted(os.listdir(os.path.join(d, "eval"))), ["eval-en.txt", "stats.json"])
            self.assertEqual(report["languages"]["en"], {"eval_sentences": 4})
            self.assertEqual(list(report["sources"]), ["e-en"])

    def test_random_text_never_crashes(self):
        rng = random.Random(5)
        alphabet = "aZé ß.,;:!?¿¡'\"-—…()/\\$%0123456789\u00a0\n"
        for _ in range(300):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
            for lang in clean.LANGS:
                for s in clean.sentences(text, lang):
                    self.assertEqual(s, s.strip())


if __name__ == "__main__":
    unittest.main()
