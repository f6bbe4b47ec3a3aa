"""Tokenizer goldens: tiktoken ids for a deterministic corpus of >= 1000 strings.

Builds tiktoken Encodings from assets/*.tiktoken exactly as Whisper does (GPT-2 split
pattern, special tokens appended after the ranks in Whisper's order) and writes
  DIR/corpus.json     the strings alone
  DIR/tokenizer.json  {"strings", "gpt2", "multilingual", "invalid_utf8", "decode_cases",
                       "word_splits", "specials", "non_speech_tokens", ...}
Usage (from the repository root): python3 scripts/oracle/tokenizer.py --out DIR
Needs only the standard library and tiktoken; no download.
"""
import argparse
import base64
import json
import os
import random
import string
import unicodedata

import tiktoken

PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SEED = 20261129

LANGUAGES = [
    ("en", "english"), ("zh", "chinese"), ("de", "german"), ("es", "spanish"), ("ru", "russian"),
    ("ko", "korean"), ("fr", "french"), ("ja", "japanese"), ("pt", "portuguese"), ("tr", "turkish"),
    ("pl", "polish"), ("ca", "catalan"), ("nl", "dutch"), ("ar", "arabic"), ("sv", "swedish"),
    ("it", "italian"), ("id", "indonesian"), ("hi", "hindi"), ("fi", "finnish"), ("vi", "vietnamese"),
    ("he", "hebrew"), ("uk", "ukrainian"), ("el", "greek"), ("ms", "malay"), ("cs", "czech"),
    ("ro", "romanian"), ("da", "danish"), ("hu", "hungarian"), ("ta", "tamil"), ("no", "norwegian"),
    ("th", "thai"), ("ur", "urdu"), ("hr", "croatian"), ("bg", "bulgarian"), ("lt", "lithuanian"),
    ("la", "latin"), ("mi", "maori"), ("ml", "malayalam"), ("cy", "welsh"), ("sk", "slovak"),
    ("te", "telugu"), ("fa", "persian"), ("lv", "latvian"), ("bn", "bengali"), ("sr", "serbian"),
    ("az", "azerbaijani"), ("sl", "slovenian"), ("kn", "kannada"), ("et", "estonian"), ("mk", "macedonian"),
    ("br", "breton"), ("eu", "basque"), ("is", "icelandic"), ("hy", "armenian"), ("ne", "nepali"),
    ("mn", "mongolian"), ("bs", "bosnian"), ("kk", "kazakh"), ("sq", "albanian"), ("sw", "swahili"),
    ("gl", "galician"), ("mr", "marathi"), ("pa", "punjabi"), ("si", "sinhala"), ("km", "khmer"),
    ("sn", "shona"), ("yo", "yoruba"), ("so", "somali"), ("af", "afrikaans"), ("oc", "occitan"),
    ("ka", "georgian"), ("be", "belarusian"), ("tg", "tajik"), ("sd", "sindhi"), ("gu", "gujarati"),
    ("am", "amharic"), ("yi", "yiddish"), ("lo", "lao"), ("uz", "uzbek"), ("fo", "faroese"),
    ("ht", "haitian creole"), ("ps", "pashto"), ("tk", "turkmen"), ("nn", "nynorsk"), ("mt", "maltese"),
    ("sa", "sanskrit"), ("lb", "luxembourgish"), ("my", "myanmar"), ("bo", "tibetan"), ("tl", "tagalog"),
    ("mg", "malagasy"), ("as", "assamese"), ("tt", "tatar"), ("haw", "hawaiian"), ("ln", "lingala"),
    ("ha", "hausa"), ("ba", "bashkir"), ("jw", "javanese"), ("su", "sundanese"), ("yue", "cantonese"),
]
ALIASES = ["burmese", "valencian", "flemish", "haitian", "letzeburgesch", "pushto", "panjabi",
           "moldavian", "moldovan", "sinhalese", "castilian", "mandarin"]

# Short phrases in many scripts (written for this corpus).
PHRASES = [
    "Hello, world! How are you today?", "The quick brown fox jumps over the lazy dog.",
    "Ça va très bien, merci ; et toi ?", "Größere Übungen für Ärzte — straße.", "¿Dónde está la biblioteca? ¡Aquí!",
    "Não sei o que é isso, coração.", "Zażółć gęślą jaźń.", "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Árvíztűrő tükörfúrógép", "Şişli'de çok güzel bir gün.", "Tiếng Việt có dấu: người, được, những.",
    "Привет, как дела? Всё хорошо.", "Київ — столиця України, ґанок, їжак.", "Γειά σου Κόσμε, τί κάνεις;",
    "مرحبا بالعالم، كيف حالك؟", "שלום עולם, מה שלומך?", "سلام دنیا، حال شما چطور است؟", "ہیلو دنیا، آپ کیسے ہیں؟",
    "नमस्ते दुनिया, आप कैसे हैं?", "হ্যালো বিশ্ব, আপনি কেমন আছেন?", "வணக்கம் உலகம், எப்படி இருக்கிறீர்கள்?",
    "హలో ప్రపంచం", "ಹಲೋ ವಿಶ್ವ", "ഹലോ ലോകം", "ਸਤ ਸ੍ਰੀ ਅਕਾਲ ਦੁਨੀਆ", "નમસ્તે દુનિયા", "ආයුබෝවන් ලෝකය",
    "สวัสดีชาวโลก คุณสบายดีไหม", "ສະບາຍດີຊາວໂລກ", "မင်္ဂလာပါ ကမ္ဘာလောက", "សួស្តី​ពិភពលោក", "བཀྲ་ཤིས་བདེ་ལེགས།",
    "გამარჯობა მსოფლიო", "Բարեւ աշխարհ", "ሰላም ልዑል", "你好，世界！今天天气很好。", "我們今天去吃點心，好唔好？",
    "こんにちは世界、元気ですか？カタカナもテスト。", "안녕하세요 세계, 잘 지내세요?", "Сайн байна уу дэлхий", "Сәлем әлем",
    "Salamu dunia, habari yako?", "Kia ora te ao", "Helló világ", "Labas pasauli, ačiū!", "Sveika pasaule, paldies!",
    "Tere maailm, õun ja šokolaad", "Halló heimur, þetta er íslenska.", "Hej världen, å ä ö", "Hei maailma, hyvää päivää",
    "Dia duit, a dhomhain", "Helo byd, sut wyt ti?", "Kaixo mundua", "Ahoj svet, ďakujem", "Zdravo svete, ćevapčići",
    "Здраво свете, ћевапчићи", "Bonjou tout moun", "Mhoro nyika", "Ẹ n lẹ o, ayé", "Sannu duniya",
    "Иә, бұл қазақ тілі", "Салом ҷаҳон", "Assalomu alaykum dunyo, oʻzbek", "Ahoj světe", "Olá mundo, à noite",
    "ʻO ka honua nei", "Мы ўсе беларусы", "Здравей свят", "Здраво свету, ѓ ќ ѕ", "ཨོཾ་མ་ཎི་པདྨེ་ཧཱུྃ",
    "שלום וברכה, ייִדיש: װאָס מאַכסטו?", "Mbote mokili", "Сәлам донья", "Сәләм донъя",
]

EMOJI = [
    "👍", "👍🏽", "👍🏿 great job", "👨‍👩‍👧‍👦", "👩🏽‍💻 coding", "🏳️‍🌈", "🏴‍☠️", "🇺🇸🇫🇷🇯🇵", "1️⃣2️⃣3️⃣", "❤️‍🔥",
    "🧑🏻‍🤝‍🧑🏿", "😀😃😄😁", "🙂 smile 🙃", "🤷‍♂️", "♪ la la la ♪", "♫♬♩", "🎶 music 🎵", "☕️ coffee", "✔️ done", "⚠️ warning",
]

WHITESPACE = [
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "a  b", "a   b", "a\tb", "a\t\tb", "a \t b", "a\n\nb",
    "a\n \nb", "trailing   ", "   leading", "  both  ", "\u00a0nbsp", "a\u00a0b", "a\u00a0 b", "a \u00a0b", "x\u3000y",
    "\u2003em space", "a\u2028b", "a\u2029b", "\x0b\x0c", "a\x85b", "a\x1cb\x1dc\x1ed\x1ff", "\x1c \x1d", " \x1f",
    "tab\tend\t", "nl end\n", "  \n\n  x", "x  \n", "1  2", "!  ?", " ' s", "\t'll", "\u200bzero width", "a\u200db",
    "\ufeffbom", "word \t\n", "\n\n\n\n", "\t \t \t", "x" + " " * 17 + "y", " " * 40,
]

CONTRACTIONS = [
    "don't", "I'm", "we'll", "they've", "she'd", "you're", "it's", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
    "'S", "'T", "'RE", "DON'T", "I'M", "''", "'", "'''s", "o'clock", "rock 'n' roll", "'tis", "'twas", "y'all'd've",
    "’s curly", "it’s", " 's", "'sa", "'lll", "'ree", "a'b'c", "'1", "' s", "'\n", "l'amour", "d'accord", "Qu'est-ce",
]

NUMBERS = [
    "0", "7", "42", "123", "1234", "12345", "1234567890", "1234567890123456789012345678901234567890", " 2024", "3.14159",
    "1,000,000", "-17", "+1 (555) 123-4567", "2026-11-29T12:00:00Z", "v1.2.3-rc4", "0x1F3A", "1e-10", "50%", "$19.99",
    "€5,00", "٣٤٥ ١٢", "۱۲۳", "१२३४", "১২৩", "๑๒๓", "²³¹", "½ ¾ ⅓", "Ⅻ Ⅳ", "①②③", "𝟘𝟙𝟚", "１２３", "〇一二三",
    "10:30pm", "No. 5", "x2y3z4", "1st 2nd 3rd 4th", "99 bottles", "12" * 60, "9" * 500,
]

PUNCT = [
    "!!!", "???", "?!", "...", "…", "--", "---", "—", "–", "(a)", "[b]", "{c}", "<d>", "<<", ">>>", "((", ")))",
    "\"quoted\"", "“curly”", "‘single’", "«guillemets»", "「かぎ」『二重』", "【括弧】", "#hashtag", "@mention",
    "https://example.com/path?q=1&r=2#frag", "a+b=c", "x*y/z", "~tilde~", "`code`", "a_b_c", "a|b", "a\\b",
    "<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|0.00|>", "[MUSIC]", "(SPEAKING FOREIGN LANGUAGE)",
    "[DAVID] Hey there,", "♪♪♪", "- hi", "- 'quote'", "§ 12 ¶ 3", "© ® ™", "° ± × ÷", "∑ ∫ √ ∞", "→ ← ↑ ↓",
]

COMBINING = [
    "e\u0301", "cafe\u0301", "n\u0303", "a\u0308\u0304", "Z\u0351\u0300\u0316a\u0362\u0317l\u0358\u0319g\u0340o",
    "\u0301alone", "x\u20dd", "1\u20e3", "ק\u05b8", "بِسْمِ", "क्षत्रिय", "ñ vs n\u0303", "Å vs A\u030a", "ﬁ ligature",
]

RTL = ["שָׁלוֹם", "العربية", "abc אבג 123", "مرحبا 123 hello", "\u202eRTL override\u202c", "\u200fmark\u200e"]


def load_ranks(path):
    # As Whisper's get_encoding does: one "<base64> <rank>" per line.
    with open(path) as f:
        return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in f if line)}


def special_names(num_languages):
    names = ["<|endoftext|>", "<|startoftranscript|>"]
    names += [f"<|{code}|>" for code, _ in LANGUAGES[:num_languages]]
    names += ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]
    names += [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    return names


def make_encoding(rank_file, num_languages):
    ranks = load_ranks(os.path.join("assets", rank_file))
    n_vocab = len(ranks)
    specials = {}
    for name in special_names(num_languages):
        specials[name] = n_vocab
        n_vocab += 1
    return tiktoken.Encoding(name=f"{rank_file}-{num_languages}", explicit_n_vocab=n_vocab, pat_str=PAT,
                             mergeable_ranks=ranks, special_tokens=specials)


def assigned(cp):
    return unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co")


def random_strings(rng, count):
    """Random mixtures drawn from a pool that mixes every character class of the pattern."""
    pool = (list(string.ascii_letters) + list(string.digits) + list(string.punctuation) + [" "] * 12 +
            ["\t", "\n", "\r", "\u00a0", "\u3000", "\x0b", "\x85", "\u2028"] + list("'''''sdtmlvre") +
            list("éüñçøßæœąłżčšžőű") + list("абвгдежзийклмнопрстуфхцчшщыэюяЁ") + list("αβγδεζηθλμπσω") +
            list("אבגדהוזחטיכלמנסעפצקרשת") + list("ابتثجحخدذرزسشصضطظعغفقكلمنهوي") + list("अआइईउऊकखगघचछजझटठडढणत") +
            list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年") + list("あいうえおかきくけこアイウエオカキクケコ") +
            list("가나다라마바사아자차카타파하") + list("กขคงจฉชซ") + list("0123456789٠١٢٣۴۵६७๘๙") +
            ["😀", "👍", "🏽", "\u200d", "\ufe0f", "🇫", "🇷", "♪", "\u0301", "\u0308", "\u20e3", "\ufffd", "€", "£", "¥"])
    out = []
    for _ in range(count):
        out.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 48))))
    return out


def random_code_point_strings(rng, count):
    """Assigned code points from the whole range (no surrogates), a few per string."""
    blocks = [(0x20, 0x2FF), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0xDFF), (0xE00, 0xFFF), (0x1000, 0x1FFF),
              (0x2000, 0x2BFF), (0x3000, 0x33FF), (0x4E00, 0x9FFF), (0xA000, 0xABFF), (0xAC00, 0xD7A3),
              (0xF900, 0xFFFD), (0x10000, 0x1FFFF), (0x20000, 0x2A6DF), (0xE0000, 0xE01EF)]
    out = []
    while len(out) < count:
        chars = []
        for _ in range(rng.randint(1, 12)):
            lo, hi = rng.choice(blocks)
            cp = rng.randint(lo, hi)
            if assigned(cp):
                chars.append(chr(cp))
            if rng.random() < 0.2:
                chars.append(rng.choice([" ", "  ", "\n", "a", "1", "'s", "."]))
        if chars:
            out.append("".join(chars))
    return out


def build_corpus():
    rng = random.Random(SEED)
    corpus = []
    corpus += PHRASES + [" " + p for p in PHRASES[:30]] + EMOJI + WHITESPACE + CONTRACTIONS + NUMBERS + PUNCT
    corpus += COMBINING + RTL
    for code, name in LANGUAGES:
        corpus += [code, name, " " + name, name.capitalize(), f"<|{code}|>", f"{name} ({code})"]
    corpus += ALIASES
    corpus += [" And so my fellow Americans, ask not what your country can do for you, ask what you can do for your "
               "country."]
    corpus += random_strings(rng, 600)
    corpus += random_code_point_strings(rng, 250)
    # Long single pieces (BPE on hundreds of bytes) and a long mixed paragraph.
    corpus += ["a" * 300, "ab" * 200, "的" * 120, "".join(rng.choice("人大中国的是") for _ in range(400)),
               "supercalifragilisticexpialidocious" * 8, " ".join(PHRASES), "\n".join(PHRASES[:20]) + "\n"]
    corpus += ["".join(rng.choice(PHRASES) + rng.choice(["", " ", "  ", "\n", "\t"]) for _ in range(6))
               for _ in range(60)]
    seen, unique = set(), []
    for s in corpus:
        if s and s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


def invalid_utf8_cases(enc):
    samples = [b"\xff", b"\xc0\xaf", b"\xe2\x82", b"\xe2\x82a", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80",
               b"abc\x80def", b"\xf0\x9f\x98\x80\x80", b"\xc3", b"caf\xc3", b"\xe0\x80\xaf", b"\xf8\x88\x80\x80\x80",
               b" \xfe \xff ", b"\xe6\x97\xa5\xe6\x9c", b"ok\xef\xbf\xbdok", b"\xc2\x85x", b"\xf0\x90\x80"]
    rng = random.Random(SEED + 1)
    for _ in range(40):
        samples.append(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 16))))
    out = []
    for b in samples:
        text = b.decode("utf-8", errors="replace")
        out.append({"hex": b.hex(), "text": text, "ids": enc.encode_ordinary(text)})
    return out


def decode_cases(enc, n_ranks, eot, rng):
    """Random ids decoded with errors="replace"; half of them drawn from the tokens whose
    bytes are not UTF-8 on their own (pieces of multi-byte characters)."""
    partial = []
    for i in range(n_ranks):
        try:
            enc.decode_single_token_bytes(i).decode("utf-8")
        except UnicodeDecodeError:
            partial.append(i)
    ts_begin = enc.encode_single_token("<|0.00|>")
    out = []
    for k in range(160):
        pool = partial if k % 2 else range(n_ranks)
        ids = [rng.choice(pool) for _ in range(rng.randint(1, 10))]
        if k % 4 == 0:
            ids.insert(rng.randrange(len(ids) + 1), eot + rng.randrange(enc.n_vocab - eot))
        # "text" is tiktoken's decode (decode_with_timestamps); "text_no_timestamps" is
        # Whisper's decode(), which drops the timestamp tokens first.
        out.append({"ids": ids, "text": enc.decode(ids),
                    "text_no_timestamps": enc.decode([t for t in ids if t < ts_begin])})
    return out


def non_speech_tokens(enc):
    # The symbols Whisper's tokenizer.py suppresses, computed the way it does.
    symbols = list('"#()*+/:;<=>@[\\]^_`{|}~「」『』')
    symbols += "<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split()
    miscellaneous = set("♩♪♫♬♭♮♯")
    result = {enc.encode(" -")[0], enc.encode(" '")[0]}
    for symbol in symbols + list(miscellaneous):
        for tokens in [enc.encode(symbol), enc.encode(" " + symbol)]:
            if len(tokens) == 1 or symbol in miscellaneous:
                result.add(tokens[0])
    return sorted(result)


def split_on_unicode(enc, tokens):
    decoded_full = enc.decode(tokens)
    words, word_tokens, current, offset = [], [], [], 0
    for token in tokens:
        current.append(token)
        decoded = enc.decode(current)
        if "\ufffd" not in decoded or decoded_full[offset + decoded.index("\ufffd")] == "\ufffd":
            words.append(decoded)
            word_tokens.append(current)
            current = []
            offset += len(decoded)
    return words, word_tokens


def split_on_spaces(enc, tokens, eot):
    words, word_tokens = [], []
    for subword, sub_tokens in zip(*split_on_unicode(enc, tokens)):
        if sub_tokens[0] >= eot or subword.startswith(" ") or subword.strip() in string.punctuation or not words:
            words.append(subword)
            word_tokens.append(list(sub_tokens))
        else:
            words[-1] += subword
            word_tokens[-1].extend(sub_tokens)
    return words, word_tokens


def word_split_cases(enc, eot, ts_begin):
    texts = [(" And so my fellow Americans, ask not what your country can do for you.", "en"),
             (" Hello, world! It's 3.14 -- isn't it? (yes)", "en"), (" 你好，世界！今天天气很好。", "zh"),
             ("こんにちは、世界。カタカナ", "ja"), (" สวัสดีชาวโลก", "th"), (" 我們今天去吃點心", "yue"),
             (" Привет, мир... «ёлка»", "ru"), (" 👨‍👩‍👧‍👦 family ♪♪", "en"), (" ສະບາຍດີ", "lo"), (" မင်္ဂလာပါ", "my")]
    out = []
    for text, lang in texts:
        tokens = [eot + 1] + enc.encode_ordinary(text) + [ts_begin + 50, eot]
        if lang in ("zh", "ja", "th", "lo", "my", "yue"):
            words, word_tokens = split_on_unicode(enc, tokens)
        else:
            words, word_tokens = split_on_spaces(enc, tokens, eot)
        out.append({"language": lang, "tokens": tokens, "words": words, "word_tokens": word_tokens})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    encodings = {51864: make_encoding("gpt2.tiktoken", 99), 51865: make_encoding("multilingual.tiktoken", 99),
                 51866: make_encoding("multilingual.tiktoken", 100)}
    multi, gpt2 = encodings[51865], encodings[51864]
    for n_vocab, enc in encodings.items():
        assert enc.n_vocab == n_vocab, (n_vocab, enc.n_vocab)
    # The facts oracle.md records as known to work; stop early if this tiktoken disagrees.
    assert multi.encode_single_token("<|startoftranscript|>") == 50258
    assert multi.eot_token == 50257
    assert multi.encode(" And so my fellow Americans, ask not") == [400, 370, 452, 7177, 6280, 11, 1029, 406]

    corpus = build_corpus()
    assert len(corpus) >= 1000, len(corpus)
    with open(os.path.join(args.out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(corpus, f, ensure_ascii=False)

    golden = {"strings": corpus, "multilingual": [], "gpt2": [], "roundtrip_failures": []}
    for s in corpus:
        for name, enc in (("multilingual", multi), ("gpt2", gpt2)):
            ids = enc.encode_ordinary(s)
            golden[name].append(ids)
            if enc.decode(ids) != s:
                golden["roundtrip_failures"].append([name, s])
    rng = random.Random(SEED + 2)
    golden["invalid_utf8"] = invalid_utf8_cases(multi)
    golden["decode_cases"] = {"51865": decode_cases(multi, 50257, 50257, rng),
                              "51864": decode_cases(gpt2, 50256, 50256, rng)}
    golden["word_splits"] = word_split_cases(multi, 50257, multi.encode_single_token("<|0.00|>"))
    golden["specials"] = {str(n): {name: enc.encode_single_token(name) for name in sorted(enc.special_tokens_set)}
                          for n, enc in encodings.items()}
    golden["non_speech_tokens"] = {str(n): non_speech_tokens(enc) for n, enc in encodings.items()}
    golden["tiktoken_version"] = getattr(tiktoken, "__version__", "unknown")
    golden["unicode_version"] = unicodedata.unidata_version
    path = os.path.join(args.out, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
    print(f"tokenizer: {len(corpus)} strings, {os.path.getsize(path)} bytes -> {path}")


if __name__ == "__main__":
    main()
