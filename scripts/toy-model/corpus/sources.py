"""The text sources of the open-vocabulary corpus: Debian 12 packages (fetched as .debs by
fetch.sh) and apt's translated package descriptions. Each source is either training text
or held-out evaluation text, never both, and no package gives text to both sides: the
held-out sentences come from a source the model never reads (test_clean checks this).

Fields: name, language, role ("train" or "eval"), Debian package (or apt index, or a
tuple of packages read together),
file patterns inside the package, extractor (extract.py) and its arguments, training
weight (share cap relative to the others, see build.py), licence of the text.
"""
from collections import namedtuple

Source = namedtuple("Source", "name lang role package patterns extractor args cap license")

# cap: at most this many sentences of the source enter the training order (None: all);
# keeps package descriptions and manuals from drowning the conversational sources.
SOURCES = [
    # ---- English, training
    Source("fortunes-en", "en", "train", "fortunes", ["usr/share/games/fortunes/[a-z]*"], "fortunes", {}, None,
           "BSD (fortune-mod data files, collected quotations; Debian main)"),
    Source("wordnet-en", "en", "train", "wordnet-base", ["usr/share/wordnet/data.*"], "wordnet_examples", {}, None,
           "WordNet 3.0 licence (permissive, Princeton University)"),
    Source("lo-help-en", "en", "train", "libreoffice-help-en-us", ["usr/share/libreoffice/help/en-US/*.html"],
           "markup", {}, 120000, "MPL-2.0 (LibreOffice help)"),
    Source("manpages-en", "en", "train", "manpages", ["usr/share/man/man*/*"], "groff", {}, 40000,
           "GPL-2+ / BSD / Linux man-pages licence (see the package's copyright)"),
    Source("debref-en", "en", "train", "debian-reference-en", ["usr/share/debian-reference/*.en.txt.gz"],
           "plain", {}, None, "GPL-2+ (Debian Reference, Osamu Aoki)"),
    Source("ddtp-en", "en", "train", "Translation-en", [], "descriptions", {"lang": "en"}, 150000,
           "licence of each described package (Debian main: DFSG-free)"),
    Source("handbook-en", "en", "train", "debian-handbook", ["usr/share/doc/debian-handbook/html/en-US/*.html"],
           "markup", {"tags": ("div.para", "p")}, None, "GPL-2+ or CC-BY-SA-3.0 (The Debian Administrator's Handbook)"),
    Source("install-en", "en", "train", "installation-guide-amd64",
           ["usr/share/doc/installation-guide-amd64/en/*.html"], "markup", {}, None, "GPL-2 (Debian installation guide)"),
    Source("gimp-help-en", "en", "train", "gimp-help-en", ["usr/share/gimp/2.0/help/en/*.html"], "markup", {}, None,
           "GFDL-1.2+ (GIMP help, no invariant sections)"),
    # Webster's 1913 definitions, usage examples and quotations: the one Debian source that
    # names most everyday words (sneeze, sigh, proffered) often enough to be learnt
    # (NEXT.md, "Run 18").
    Source("gcide-en", "en", "train", "dict-gcide", ["usr/share/dictd/gcide.dict.dz"], "gcide", {}, None,
           "GPL-2+ (GCIDE, the GNU Collaborative International Dictionary of English)"),
    Source("bible-web-en", "en", "train", "sword-text-web", ["usr/share/sword/modules/texts/ztext/*"], "sword", {},
           None, "public domain (World English Bible)"),
    # ---- German, training
    Source("fortunes-de", "de", "train", "fortunes-de", ["usr/share/games/fortunes/de/*"], "fortunes", {}, None,
           "GPL-2+ (fortunes-de)"),
    Source("lo-help-de", "de", "train", "libreoffice-help-de", ["usr/share/libreoffice/help/de/*.html"],
           "markup", {}, None, "MPL-2.0 (LibreOffice help)"),
    Source("manpages-de", "de", "train", "manpages-de", ["usr/share/man/de/man*/*"], "groff", {}, None,
           "GPL-3+ (manpages-de translations)"),
    Source("debref-de", "de", "train", "debian-reference-de", ["usr/share/debian-reference/*.de.txt.gz"],
           "plain", {}, None, "GPL-2+ (Debian Reference)"),
    Source("ddtp-de", "de", "train", "Translation-de", [], "descriptions", {"lang": "de"}, None,
           "licence of each described package; translations by the DDTP (Debian main)"),
    Source("handbook-de", "de", "train", "debian-handbook", ["usr/share/doc/debian-handbook/html/de-DE/*.html"],
           "markup", {"tags": ("div.para", "p")}, None, "GPL-2+ or CC-BY-SA-3.0 (The Debian Administrator's Handbook)"),
    Source("install-de", "de", "train", "installation-guide-amd64",
           ["usr/share/doc/installation-guide-amd64/de/*.html"], "markup", {}, None,
           "GPL-2 (Debian installation guide)"),
    Source("gimp-help-de", "de", "train", "gimp-help-de", ["usr/share/gimp/2.0/help/de/*.html"], "markup",
           {}, None, "GFDL-1.2+ (GIMP help, no invariant sections)"),
    # ---- French, training
    Source("lo-help-fr", "fr", "train", "libreoffice-help-fr", ["usr/share/libreoffice/help/fr/*.html"],
           "markup", {}, None, "MPL-2.0 (LibreOffice help)"),
    Source("manpages-fr", "fr", "train", "manpages-fr", ["usr/share/man/fr/man*/*"], "groff", {}, None,
           "GPL-3+ (manpages-fr translations)"),
    Source("debref-fr", "fr", "train", "debian-reference-fr", ["usr/share/debian-reference/*.fr.txt.gz"],
           "plain", {}, None, "GPL-2+ (Debian Reference)"),
    Source("ddtp-fr", "fr", "train", "Translation-fr", [], "descriptions", {"lang": "fr"}, None,
           "licence of each described package; translations by the DDTP (Debian main)"),
    Source("handbook-fr", "fr", "train", "debian-handbook", ["usr/share/doc/debian-handbook/html/fr-FR/*.html"],
           "markup", {"tags": ("div.para", "p")}, None, "GPL-2+ or CC-BY-SA-3.0 (The Debian Administrator's Handbook)"),
    Source("install-fr", "fr", "train", "installation-guide-amd64",
           ["usr/share/doc/installation-guide-amd64/fr/*.html"], "markup", {}, None,
           "GPL-2 (Debian installation guide)"),
    Source("gimp-help-fr", "fr", "train", "gimp-help-fr", ["usr/share/gimp/2.0/help/fr/*.html"], "markup",
           {}, None, "GFDL-1.2+ (GIMP help, no invariant sections)"),
    # ---- Spanish, training
    Source("fortunes-es", "es", "train", "fortunes-es", ["usr/share/games/fortunes/es/*.fortunes"], "fortunes", {},
           None, "GPL-2+ (fortunes-es)"),
    Source("lo-help-es", "es", "train", "libreoffice-help-es", ["usr/share/libreoffice/help/es/*.html"],
           "markup", {}, None, "MPL-2.0 (LibreOffice help)"),
    Source("manpages-es", "es", "train", "manpages-es", ["usr/share/man/es/man*/*"], "groff", {}, None,
           "GPL-3+ (manpages-es translations)"),
    Source("debref-es", "es", "train", "debian-reference-es", ["usr/share/debian-reference/*.es.txt.gz"],
           "plain", {}, None, "GPL-2+ (Debian Reference)"),
    Source("ddtp-es", "es", "train", "Translation-es", [], "descriptions", {"lang": "es"}, None,
           "licence of each described package; translations by the DDTP (Debian main)"),
    Source("handbook-es", "es", "train", "debian-handbook", ["usr/share/doc/debian-handbook/html/es-ES/*.html"],
           "markup", {"tags": ("div.para", "p")}, None, "GPL-2+ or CC-BY-SA-3.0 (The Debian Administrator's Handbook)"),
    Source("install-es", "es", "train", "installation-guide-amd64",
           ["usr/share/doc/installation-guide-amd64/es/*.html"], "markup", {}, None,
           "GPL-2 (Debian installation guide)"),
    Source("gimp-help-es", "es", "train", "gimp-help-es", ["usr/share/gimp/2.0/help/es/*.html"], "markup",
           {}, None, "GFDL-1.2+ (GIMP help, no invariant sections)"),
    Source("bible-rv-es", "es", "train", "sword-text-sparv", ["usr/share/sword/modules/texts/ztext/*"], "sword", {},
           None, "public domain (Reina-Valera 1909)"),
    # ---- held out: packages no training source comes from
    Source("ding-en", "en", "eval", "trans-de-en", ["usr/share/trans/de-en"], "ding", {"side": 1}, None,
           "GPL-2+ (Ding dictionary, Frank Richter, TU Chemnitz)"),
    Source("ding-de", "de", "eval", "trans-de-en", ["usr/share/trans/de-en"], "ding", {"side": 0}, None,
           "GPL-2+ (Ding dictionary, Frank Richter, TU Chemnitz)"),
    Source("gnome-help-en", "en", "eval", "gnome-user-docs", ["usr/share/help/C/gnome-help/*.page"], "markup", {},
           None, "CC-BY-SA-3.0 (GNOME Help)"),
    Source("gnome-help-de", "de", "eval", "gnome-user-docs", ["usr/share/help/de/gnome-help/*.page"], "markup", {},
           None, "CC-BY-SA-3.0 (GNOME Help)"),
    Source("gnome-help-fr", "fr", "eval", "gnome-user-docs", ["usr/share/help/fr/gnome-help/*.page"], "markup", {},
           None, "CC-BY-SA-3.0 (GNOME Help)"),
    Source("gnome-help-es", "es", "eval", "gnome-user-docs", ["usr/share/help/es/gnome-help/*.page"], "markup", {},
           None, "CC-BY-SA-3.0 (GNOME Help)"),
]

WESNOTH = tuple(["wesnoth-1.16-data"] + [f"wesnoth-1.16-{c}" for c in
                                         "did dm dw ei httt l low nr sof sota sotbe thot trow tsg ttb utbs".split()])
_WESNOTH_LICENSE = "GPL-2+ (The Battle for Wesnoth: unit descriptions, help and campaign dialogue)"
SOURCES += [Source(f"wesnoth-{lang}", lang, "train", WESNOTH,
                   [f"usr/share/games/wesnoth/1.16/locale/{'de' if lang == 'en' else lang}/LC_MESSAGES/*.mo"],
                   "gettext_catalog", {"side": "msgid" if lang == "en" else "msgstr"}, None, _WESNOTH_LICENSE)
            for lang in ("en", "de", "fr", "es")]
SOURCES += [Source(f"freeciv-{lang}", lang, "train", "freeciv-data",
                   [f"usr/share/locale/{'de' if lang == 'en' else lang}/LC_MESSAGES/freeciv-*.mo"],
                   "gettext_catalog", {"side": "msgid" if lang == "en" else "msgstr"}, None,
                   "GPL-2+ (Freeciv: help texts and nation legends)")
            for lang in ("en", "de", "fr", "es")]

# apt indexes (not .debs): fetch.sh stores them decompressed and xz-compressed under these names.
APT_INDEXES = {f"Translation-{lang}": f"Translation-{lang}.xz" for lang in ("en", "de", "fr", "es")}


def packages():
    """Debian packages to download (apt indexes excluded)."""
    names = set()
    for s in SOURCES:
        names.update((s.package,) if isinstance(s.package, str) else s.package)
    return sorted(names - set(APT_INDEXES))
