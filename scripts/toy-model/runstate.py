"""What carries a training run over to the next one, with the standard library only:
the state folder (model, compact optimizer moments, state.json) packed as one tar split
into parts of at most 15 MiB (the device tool returns files of at most 16 MiB, 8 files a
run, and carries at most 64 MiB in), and the corpus position each language has reached.

state.json holds: the model shape, the global step and windows seen, the data position
(next line of corpus/train-LL.txt.xz per language, and how often the corpus wrapped),
the corpus checksums it was trained on, and one entry per run (seconds, steps, loss).

  python3 scripts/toy-model/runstate.py unpack PARTS_DIR DEST   # join + verify + extract
  python3 scripts/toy-model/runstate.py show PARTS_DIR           # print the data position
  python3 scripts/toy-model/runstate.py slice FULL_CORPUS PARTS_DIR|new OUT_DIR COUNT
      # the next COUNT training lines per language from the state's position: the full
      # corpus (15+ MB) does not fit beside the state in the 64 MiB the device tool carries
"""
import glob
import hashlib
import json
import lzma
import os
import sys
import tarfile

PART_BYTES = 15 * 2**20
EVAL_LINES = 1000  # held-out lines per language a slice keeps
STATE_NAME = "state.tar"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def split_file(path, out_dir, part_bytes=PART_BYTES):
    """path -> out_dir/NAME.part-00, -01, ... and NAME.sha256 (of the whole file)."""
    name = os.path.basename(path)
    for old in glob.glob(os.path.join(out_dir, name + ".part-*")):
        os.remove(old)
    parts = []
    with open(path, "rb") as f:
        for i, block in enumerate(iter(lambda: f.read(part_bytes), b"")):
            part = os.path.join(out_dir, f"{name}.part-{i:02d}")
            with open(part, "wb") as g:
                g.write(block)
            parts.append(part)
    with open(os.path.join(out_dir, name + ".sha256"), "w", encoding="utf-8") as f:
        f.write(f"{sha256_file(path)}  {name}\n")
    return parts


def join_parts(parts_dir, name, dest):
    """Joins NAME.part-* from parts_dir into dest and checks NAME.sha256."""
    parts = sorted(glob.glob(os.path.join(parts_dir, name + ".part-*")))
    if not parts:
        raise FileNotFoundError(f"[state] no {name}.part-* in {parts_dir}; copy the previous run's files there")
    with open(dest, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                out.write(f.read())
    check = os.path.join(parts_dir, name + ".sha256")
    if os.path.exists(check):
        with open(check, encoding="utf-8") as f:
            want = f.read().split()[0]
        got = sha256_file(dest)
        if got != want:
            raise ValueError(f"[state] {name}: sha256 {got} != {want} from {len(parts)} parts; a part is missing "
                             "or damaged, copy all parts of one run again")
    return dest


def pack_state(state_dir, out_dir, part_bytes=PART_BYTES):
    """Tars state_dir (flat) and splits it into parts in out_dir; returns the part paths."""
    os.makedirs(out_dir, exist_ok=True)
    tar_path = os.path.join(out_dir, STATE_NAME)
    with tarfile.open(tar_path, "w") as tar:
        for name in sorted(os.listdir(state_dir)):
            tar.add(os.path.join(state_dir, name), arcname=name)
    parts = split_file(tar_path, out_dir, part_bytes)
    os.remove(tar_path)
    return parts


def unpack_state(parts_dir, dest):
    """Joins, verifies and extracts the parts of a state into dest; returns state.json."""
    os.makedirs(dest, exist_ok=True)
    tar_path = join_parts(parts_dir, STATE_NAME, os.path.join(dest, STATE_NAME))
    with tarfile.open(tar_path) as tar:
        for member in tar.getmembers():
            if "/" in member.name or member.name.startswith("..") or not member.isfile():
                raise ValueError(f"[state] unexpected member {member.name!r} in {STATE_NAME}")
        tar.extractall(dest)
    os.remove(tar_path)
    return load_json(os.path.join(dest, "state.json"))


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False, sort_keys=True)


def new_state(shape, corpus_info, seed):
    return {"version": 1, "shape": shape, "step": 0, "windows_seen": 0, "seed": seed,
            "position": {lang: 0 for lang in sorted(corpus_info)},
            "wraps": {lang: 0 for lang in sorted(corpus_info)},
            "corpus": corpus_info, "runs": []}


def corpus_info(corpus_dir, langs):
    """{lang: {"lines": n, "sha256": of the decompressed full training file}}, from the
    full file or from a slice's header."""
    info = {}
    for lang in langs:
        full = os.path.join(corpus_dir, f"train-{lang}.txt.xz")
        if os.path.exists(full):
            data = _read_xz(full)
            info[lang] = {"lines": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}
        else:
            header, _ = _read_slice_file(corpus_dir, lang)
            info[lang] = {"lines": header["lines"], "sha256": header["sha256"]}
    return info


def _read_xz(path):
    with lzma.open(path, "rb") as f:
        return f.read()


def _slice_path(corpus_dir, lang):
    return os.path.join(corpus_dir, f"train-{lang}.slice.txt.xz")


def _read_slice_file(corpus_dir, lang):
    path = _slice_path(corpus_dir, lang)
    if not os.path.exists(path):
        raise FileNotFoundError(f"[state] neither train-{lang}.txt.xz nor its slice in {corpus_dir}; build the "
                                "corpus with scripts/toy-model/corpus/build.py and cut a slice with runstate.py slice")
    lines = _read_xz(path).decode("utf-8").splitlines()
    return json.loads(lines[0]), lines[1:]


def read_slice(corpus_dir, lang, start, count):
    """[(line number, sentence)] of `count` lines from `start`, wrapping at the end; from
    the full file, or from a slice cut at `start` (runstate.py slice)."""
    full = os.path.join(corpus_dir, f"train-{lang}.txt.xz")
    if os.path.exists(full):
        lines = _read_xz(full).decode("utf-8").splitlines()
        if not lines:
            raise ValueError(f"[state] corpus train-{lang} is empty")
        return [((start + i) % len(lines), lines[(start + i) % len(lines)]) for i in range(min(count, len(lines)))]
    header, lines = _read_slice_file(corpus_dir, lang)
    if header["start"] != start:
        raise ValueError(f"[state] the {lang} slice starts at line {header['start']} but the state is at {start}; "
                         "cut a new slice from the state you resume (runstate.py slice)")
    return [((start + i) % header["lines"], text) for i, text in enumerate(lines[:count])]


def cut_slices(corpus_dir, positions, count, out_dir):
    """Writes the next `count` training lines per language from `positions` into
    out_dir/train-LL.slice.txt.xz (first line: JSON header with the start, the full
    file's line count and sha256), plus the held-out files and stats.json."""
    os.makedirs(out_dir, exist_ok=True)
    for lang, start in sorted(positions.items()):
        data = _read_xz(os.path.join(corpus_dir, f"train-{lang}.txt.xz"))
        lines = data.decode("utf-8").splitlines()
        header = {"start": start, "lines": len(lines), "sha256": hashlib.sha256(data).hexdigest()}
        body = [lines[(start + i) % len(lines)] for i in range(min(count, len(lines)))]
        with lzma.open(_slice_path(out_dir, lang), "wb", preset=9) as f:
            f.write(("\n".join([json.dumps(header)] + body) + "\n").encode("utf-8"))
    for name in os.listdir(corpus_dir):  # an evaluation reads at most a few hundred held-out lines
        if name.startswith("eval-") or name == "stats.json":
            with open(os.path.join(corpus_dir, name), "rb") as f, open(os.path.join(out_dir, name), "wb") as g:
                g.write(b"".join(f.readlines()[:EVAL_LINES]) if name.startswith("eval-") else f.read())


def positions_of(parts_dir, langs):
    """The data position saved in a state's parts (all zero when parts_dir is 'new')."""
    if parts_dir == "new":
        return {lang: 0 for lang in langs}
    tmp = os.path.join("/tmp", f"hark-state-{os.getpid()}.tar")
    join_parts(parts_dir, STATE_NAME, tmp)
    try:
        with tarfile.open(tmp) as tar:
            return json.loads(tar.extractfile("state.json").read())["position"]
    finally:
        os.remove(tmp)


def advance(state, used_lines):
    """Moves each language's position past the highest line used in this run (lines of
    unfinished synthesis jobs below it are skipped; few). used_lines: {lang: [line]}."""
    for lang, lines in used_lines.items():
        if not lines:
            continue
        size = state["corpus"][lang]["lines"]
        old = state["position"][lang]
        # Lines are absolute numbers modulo the corpus size; the furthest one is the
        # largest distance ahead of the old position.
        ahead = max((line - old) % size for line in lines) + 1
        new = old + ahead
        state["wraps"][lang] += new // size
        state["position"][lang] = new % size
    return state


def check_corpus(state, info):
    """Raises when the corpus differs from the one the state was trained on (positions
    would point at other sentences)."""
    for lang, have in info.items():
        want = state["corpus"].get(lang)
        if want and want["sha256"] != have["sha256"]:
            raise ValueError(f"[state] corpus train-{lang} changed since the state was saved ({want['sha256'][:12]} "
                             f"-> {have['sha256'][:12]}); rebuild it from the same package versions (stats.json)")


def main(argv):
    if len(argv) == 4 and argv[1] == "unpack":
        print(json.dumps(unpack_state(argv[2], argv[3]), indent=1))
        return 0
    if len(argv) == 3 and argv[1] == "show":
        print(json.dumps({"position": positions_of(argv[2], [])}, indent=1))
        return 0
    if len(argv) == 6 and argv[1] == "slice":
        langs = ("en", "de", "fr", "es")
        positions = positions_of(argv[3], langs)
        cut_slices(argv[2], positions, int(argv[5]), argv[4])
        print(f"slices from {positions} -> {argv[4]}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
