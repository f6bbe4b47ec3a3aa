"""Whisper's multilingual tokenizer (51 865 tokens) built from assets/multilingual.tiktoken.

On the GPU machine this is tiktoken with GPT-2's split pattern and Whisper's special
tokens appended in Whisper's order (see shared docs/oracle.md). Where tiktoken is
missing (the development machine) a small pure-Python byte-pair encoder over the same
ranks stands in; it needs the `regex` module for the \\p{L} classes of the pattern.
"""
import base64
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RANKS = os.path.join(REPO, "assets", "multilingual.tiktoken")
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# The same with `re` classes: letters = word characters that are no digit or underscore.
PATTERN_RE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""

# Whisper's 99 language codes in token order (the 51 865-token vocabulary, no "yue").
LANGUAGES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no "
    "th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw "
    "gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl "
    "mg as tt haw ln ha ba jw su"
).split()
assert len(LANGUAGES) == 99

EOT = 50257
SOT = 50258
LANG0 = 50259
TRANSLATE = 50358
TRANSCRIBE = 50359
STARTOFLM = 50360
STARTOFPREV = 50361
NOSPEECH = 50362
NOTIMESTAMPS = 50363
TIMESTAMP0 = 50364
N_TIMESTAMPS = 1501
N_VOCAB = 51865


def lang_token(code):
    return LANG0 + LANGUAGES.index(code)


def timestamp_token(seconds):
    """Nearest 20 ms timestamp token, clamped to 0..30 s."""
    index = int(round(seconds / 0.02))
    return TIMESTAMP0 + max(0, min(N_TIMESTAMPS - 1, index))


def special_tokens():
    names = ["<|endoftext|>", "<|startoftranscript|>"] + [f"<|{c}|>" for c in LANGUAGES]
    names += ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
              "<|notimestamps|>"]
    names += [f"<|{i * 0.02:.2f}|>" for i in range(N_TIMESTAMPS)]
    return {name: EOT + i for i, name in enumerate(names)}


def load_ranks():
    ranks = {}
    with open(RANKS, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


class _PurePythonBPE:
    """Byte-pair encoding with the tiktoken ranks: merge the lowest-ranked pair first."""

    def __init__(self, ranks):
        try:
            import regex
            self.split, self.exact = regex.compile(PATTERN), True
        except ImportError:
            import re
            self.split, self.exact = re.compile(PATTERN_RE), False
        self.ranks = ranks
        self.decoder = {v: k for k, v in ranks.items()}
        self.n_vocab = N_VOCAB

    def _encode_piece(self, piece):
        if piece in self.ranks:
            return [self.ranks[piece]]
        parts = [bytes([b]) for b in piece]
        while len(parts) > 1:
            pairs = [(self.ranks.get(parts[i] + parts[i + 1], 1 << 30), i) for i in range(len(parts) - 1)]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return [self.ranks[p] for p in parts]

    def encode_ordinary(self, text):
        out = []
        for piece in self.split.findall(text):
            out.extend(self._encode_piece(piece.encode("utf-8")))
        return out

    def decode_bytes(self, ids):
        return b"".join(self.decoder[i] for i in ids if i in self.decoder)


class Tokenizer:
    def __init__(self):
        ranks = load_ranks()
        try:
            import tiktoken
            self.enc = tiktoken.Encoding(name="multilingual", pat_str=PATTERN, mergeable_ranks=ranks,
                                         special_tokens=special_tokens())
            self.backend = "tiktoken"
        except ImportError:
            self.enc = _PurePythonBPE(ranks)
            self.backend = "pure-python" if self.enc.exact else "pure-python-approximate"
        if self.backend == "tiktoken" and self.enc.n_vocab != N_VOCAB:
            raise RuntimeError(f"[tokens] n_vocab {self.enc.n_vocab} != {N_VOCAB}; check assets/multilingual.tiktoken")

    def encode(self, text):
        return self.enc.encode_ordinary(text)

    def decode(self, ids):
        """Text of the ordinary tokens in `ids` (special tokens are dropped)."""
        return self.enc.decode_bytes([i for i in ids if i < EOT]).decode("utf-8", errors="replace")


if __name__ == "__main__":
    tok = Tokenizer()
    ids = tok.encode(" And so my fellow Americans, ask not")
    print(tok.backend, ids)
    assert ids == [400, 370, 452, 7177, 6280, 11, 1029, 406], ids
    assert lang_token("en") == 50259 and special_tokens()["<|transcribe|>"] == TRANSCRIBE
    assert special_tokens()["<|30.00|>"] == N_VOCAB - 1
    print("ok", lang_token("de"), lang_token("es"), lang_token("fr"))
