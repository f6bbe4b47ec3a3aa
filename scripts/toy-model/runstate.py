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
  python3 scripts/toy-model/runstate.py rebase PARTS_DIR NEW_FULL_CORPUS OUT_PARTS_DIR
      # the same state on a rebuilt corpus: changed languages restart at line 0 (rebase())
  python3 scripts/toy-model/runstate.py from-model MODEL_DIR OUT_PARTS_DIR [--corpus DIR]
      [--step N] [--windows-seen N] [--position en=N,de=N,...]
      # a resumable state from a shipped checkpoint (models/hark-toy-speech) when the last
      # run's parts are lost: see from_model() for what it can and cannot recover

Every state saved since 2026-12-01 also holds training-state.json (SIDECAR): a ~1 KB summary of state.json (step,
windows seen, data position, corpus checksums) tied to model.safetensors by its sha256.
Shipping a checkpoint copies it beside the model, so that from-model can continue the
schedule and the data position exactly.
"""
import glob
import hashlib
import json
import lzma
import os
import re
import shutil
import struct
import sys
import tarfile
import tempfile

PART_BYTES = 15 * 2**20
EVAL_LINES = 1000  # held-out lines per language a slice keeps
STATE_NAME = "state.tar"
LANGS = ("en", "de", "fr", "es")
SIDECAR = "training-state.json"
MODEL_FILES = ("model.safetensors", "config.json", "generation_config.json")  # what trainer.export writes
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


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
    # A state may lie inside the slice it was trained from: a slice cut for two runs lets
    # the second resume on the GPU machine from the first one's state, with nothing
    # recut here in between. Only what the slice holds from that line on is read.
    offset = (start - header["start"]) % header["lines"]
    if offset >= len(lines):
        raise ValueError(f"[state] the {lang} slice starts at line {header['start']} and holds {len(lines)} lines, "
                         f"but the state is at {start}; cut a new slice from the state you resume (runstate.py slice)")
    return [((start + i) % header["lines"], text) for i, text in enumerate(lines[offset:offset + count])]


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


def sidecar(state, model_sha256):
    """The small summary of a state that travels with a shipped checkpoint (SIDECAR)."""
    return {"format": "hark-toy-training-state", "version": 1, "model_sha256": model_sha256,
            "shape": state["shape"], "step": state["step"], "windows_seen": state["windows_seen"],
            "seed": state["seed"], "position": state["position"], "wraps": state["wraps"],
            "corpus": state["corpus"],
            "note": "position: the next line of corpus/build.py's train-LL.txt.xz to read, valid for the corpus "
                    "with these sha256; runstate.py from-model reads this file"}


def write_sidecar(state_dir, state):
    """state_dir/training-state.json for the model.safetensors in state_dir."""
    data = sidecar(state, sha256_file(os.path.join(state_dir, "model.safetensors")))
    save_json(os.path.join(state_dir, SIDECAR), data)
    return data


def safetensors_header(path):
    """The JSON header of a .safetensors file (standard library: 8-byte length + JSON)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if head.startswith(b"version "):
            raise ValueError(f"[state] {path} is a Git LFS pointer, not the weights; fetch the real file")
        if len(head) < 8:
            raise ValueError(f"[state] {path} is too short to be a safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > 100 * 2**20 or n > os.path.getsize(path) - 8:
            raise ValueError(f"[state] {path}: header length {n} makes no sense; not a safetensors file")
        return json.loads(f.read(n))


def shape_of_model(model_dir):
    """state.json's shape from a checkpoint's config.json, checked against its weights:
    {"d_model", "heads", "enc_layers", "dec_layers"} (what train.py's --d-model, --heads,
    --enc-layers, --dec-layers set)."""
    cfg = load_json(os.path.join(model_dir, "config.json"))
    if cfg.get("model_type") != "whisper":
        raise ValueError(f"[state] {model_dir}/config.json is not a Whisper config (model_type "
                         f"{cfg.get('model_type')!r})")
    try:
        shape = {"d_model": int(cfg["d_model"]), "heads": int(cfg["encoder_attention_heads"]),
                 "enc_layers": int(cfg["encoder_layers"]), "dec_layers": int(cfg["decoder_layers"])}
        dec_heads, vocab = int(cfg["decoder_attention_heads"]), int(cfg["vocab_size"])
    except KeyError as e:
        raise ValueError(f"[state] {model_dir}/config.json lacks {e}") from None
    if dec_heads != shape["heads"]:
        raise ValueError(f"[state] encoder and decoder head counts differ ({shape['heads']} / {dec_heads}); "
                         "train.py builds both with --heads")
    header = safetensors_header(os.path.join(model_dir, "model.safetensors"))
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    embed = tensors.get("model.decoder.embed_tokens.weight")
    if embed is None or embed.get("shape") != [vocab, shape["d_model"]]:
        raise ValueError(f"[state] model.safetensors has no model.decoder.embed_tokens.weight of shape "
                         f"[{vocab}, {shape['d_model']}] (config.json): not this config's Hugging Face weights")
    for part, key in (("encoder", "enc_layers"), ("decoder", "dec_layers")):
        found = {int(m.group(1)) for m in (re.match(rf"model\.{part}\.layers\.(\d+)\.", k) for k in tensors) if m}
        if found != set(range(shape[key])):
            raise ValueError(f"[state] model.safetensors has {part} layers {sorted(found)}, config.json "
                             f"{part}_layers {shape[key]}")
    dtypes = {v.get("dtype") for v in tensors.values()}
    if dtypes != {"F16"}:
        raise ValueError(f"[state] model.safetensors holds {sorted(map(str, dtypes))}, not fp16 as the trainer saves")
    return shape


def shipped_history(model_dir, model_sha256, results_dir=RESULTS_DIR, log=print):
    """What is known of a shipped checkpoint's training, best source first:
      1. MODEL_DIR/training-state.json (SIDECAR) of this model.safetensors (sha256): step,
         windows seen, seed, data position, wraps and the corpus it indexes;
      2. MODEL_DIR/MODEL_CARD.md naming this model.safetensors' sha256 and one run's
         results file (results/open-runN-results.json): that run's step, windows seen,
         wraps and seed; no position (results.json has no corpus checksums);
      3. nothing (None)."""
    path = os.path.join(model_dir, SIDECAR)
    if os.path.exists(path):
        side = load_json(path)
        if side.get("model_sha256") == model_sha256:
            return {k: side[k] for k in ("step", "windows_seen", "seed", "position", "wraps", "corpus") if k in side} \
                | {"source": SIDECAR}
        log(f"[state] {path} belongs to other weights (sha256 {str(side.get('model_sha256'))[:12]}, "
            f"model.safetensors {model_sha256[:12]}): ignored")
    card_path = os.path.join(model_dir, "MODEL_CARD.md")
    if not os.path.exists(card_path):
        return None
    with open(card_path, encoding="utf-8") as f:
        card = f.read()
    if model_sha256 not in card:
        log(f"[state] MODEL_CARD.md does not name model.safetensors' sha256 {model_sha256[:12]}: its figures may "
            "be another checkpoint's; ignored")
        return None
    runs = sorted({int(n) for n in re.findall(r"open-run(\d+)-results\.json", card)})
    if len(runs) != 1:
        log(f"[state] MODEL_CARD.md names the results of runs {runs}, not of one run: step unknown")
        return None
    results_path = os.path.join(results_dir, f"open-run{runs[0]}-results.json")
    if not os.path.exists(results_path):
        log(f"[state] {results_path} (named by MODEL_CARD.md) is missing: step unknown")
        return None
    results = load_json(results_path)
    st = results.get("state") or {}
    if "step" not in st:
        log(f"[state] {results_path} has no state.step: step unknown")
        return None
    history = {"step": int(st["step"]), "windows_seen": int(st.get("windows_seen", 0)),
               "source": f"MODEL_CARD.md -> results/{os.path.basename(results_path)}"}
    if "wraps" in st:
        history["wraps"] = st["wraps"]
    if "seed" in results.get("args", {}):
        history["seed"] = int(results["args"]["seed"])
    return history


def from_model(model_dir, out_dir, corpus_dir=None, results_dir=RESULTS_DIR, step=None, windows_seen=None,
               position=None, part_bytes=PART_BYTES, log=print):
    """Builds the parts of a resumable state (what `remake.sh --resume DIR` reads) from a
    shipped checkpoint folder (model.safetensors fp16 in Hugging Face layout, config.json,
    generation_config.json), for when the last run's parts are lost. Returns state.json.

    - weights: the checkpoint's files, byte for byte (the state's layout is the shipped one:
      trainer.export writes both);
    - Adam moments: none (no adam-moments.pt). trainer.train then starts AdamW fresh and, as
      on every resume, re-warms the LR over 50 steps (first moments restart from zero on
      every resume anyway; the second moments re-estimate within ~50 steps at beta2 0.98);
    - shape: from config.json, checked against the weights;
    - step, windows seen, seed: from shipped_history() (sidecar, else MODEL_CARD.md and the
      results file it names), else `step`/`windows_seen` given here, else 0: a state at
      step 0 warms up over 300 steps like new weights (safe for weights of unknown history);
    - data position: the sidecar's where it has one for this corpus; otherwise 0 for every
      language: the position within the corpus is unknown (results.json does not say which
      corpus build it indexes), and the corpus is re-read with new voices anyway (voices
      and effects are drawn per run from the step; de/fr/es had been read 3-4 times by run 9);
      `position` ({lang: line}) sets it where it is known otherwise (a results file's
      state.position, for a corpus rebuilt with the checksums that run trained on);
    - corpus: corpus_info(corpus_dir) when given (the full corpus or a slice); without it
      the sidecar's, or none, and train.py records the corpus of the first resumed run
      (complete_state)."""
    model_sha = sha256_file(os.path.join(model_dir, "model.safetensors"))
    shape = shape_of_model(model_dir)
    history = shipped_history(model_dir, model_sha, results_dir, log) or {"source": "defaults"}
    if step is not None:
        history["step"], history["source"] = int(step), history["source"] + " + --step"
    if windows_seen is not None:
        history["windows_seen"] = int(windows_seen)
    known = history.get("corpus") or {}
    info = corpus_info(corpus_dir, LANGS) if corpus_dir else dict(known)
    state = new_state(shape, info, int(history.get("seed", 1)))
    state["position"] = {lang: 0 for lang in LANGS}
    state["wraps"] = {lang: int((history.get("wraps") or {}).get(lang, 0)) for lang in LANGS}
    state["step"] = int(history.get("step", 0))
    state["windows_seen"] = int(history.get("windows_seen", 0))
    kept = []
    for lang, pos in sorted((history.get("position") or {}).items()):
        if lang not in state["position"]:
            continue
        if known.get(lang) and info.get(lang) and known[lang]["sha256"] == info[lang]["sha256"]:
            state["position"][lang] = int(pos)
            kept.append(lang)
        else:
            log(f"[state] {lang}: the sidecar's position {pos} indexes corpus "
                f"{str((known.get(lang) or {}).get('sha256'))[:12]}, not this one: position 0")
    for lang, pos in sorted((position or {}).items()):
        if lang not in state["position"]:
            raise ValueError(f"[state] --position: unknown language {lang!r}")
        size = (info.get(lang) or {}).get("lines")
        if size and not 0 <= int(pos) < size:
            raise ValueError(f"[state] --position {lang}={pos}: the corpus has {size} lines")
        state["position"][lang] = int(pos)
        kept.append(lang)
    state["origin"] = {"from_model": model_dir, "model_sha256": model_sha,
                       "history": history["source"], "positions_kept": kept,
                       "moments": "none: AdamW starts fresh, the LR re-warms over 50 steps"}
    with tempfile.TemporaryDirectory(prefix="hark-from-model-") as tmp:
        for name in MODEL_FILES:
            src = os.path.join(model_dir, name)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(tmp, name))
            elif name != "generation_config.json":  # trainer.export writes it again
                raise FileNotFoundError(f"[state] {src} missing")
        save_json(os.path.join(tmp, "state.json"), state)
        write_sidecar(tmp, state)
        parts = pack_state(tmp, out_dir, part_bytes)
    log(f"[state] from {model_dir} (history: {history['source']}): step {state['step']}, windows seen "
        f"{state['windows_seen']}, position {state['position']}, no Adam moments -> {len(parts)} parts in {out_dir}")
    return state


def rebase(parts_dir, corpus_dir, out_dir, part_bytes=PART_BYTES, log=print):
    """Moves a state onto a rebuilt corpus (a source added, say), keeping the weights, the
    optimizer moments, the step and the schedule. A language whose training file changed
    starts again at line 0 of the new interleaved order (its old position indexes other
    sentences); one whose file is the same keeps its position. The change is recorded in
    state.json's "rebases". Returns state.json."""
    langs = [lang for lang in LANGS if os.path.exists(os.path.join(corpus_dir, f"train-{lang}.txt.xz"))
             or os.path.exists(_slice_path(corpus_dir, lang))]
    if not langs:
        raise FileNotFoundError(f"[state] no train-LL.txt.xz in {corpus_dir}; build it with corpus/build.py")
    info = corpus_info(corpus_dir, langs)
    with tempfile.TemporaryDirectory(prefix="hark-rebase-") as tmp:
        state = unpack_state(parts_dir, tmp)
        changed = {}
        for lang, have in sorted(info.items()):
            old = state["corpus"].get(lang)
            if old and old["sha256"] == have["sha256"]:
                continue
            changed[lang] = {"from_sha256": (old or {}).get("sha256"), "from_position": state["position"].get(lang),
                             "to_sha256": have["sha256"], "to_lines": have["lines"]}
            state["corpus"][lang] = have
            state["position"][lang] = 0
            state["wraps"][lang] = 0
        if not changed:
            raise ValueError(f"[state] {corpus_dir} is the corpus the state already reads: nothing to rebase")
        state.setdefault("rebases", []).append({"step": state["step"], "languages": changed})
        save_json(os.path.join(tmp, "state.json"), state)
        write_sidecar(tmp, state)
        pack_state(tmp, out_dir, part_bytes)
    log(f"[state] rebased at step {state['step']}: {', '.join(sorted(changed))} from line 0 of the new corpus; "
        f"position {state['position']} -> {out_dir}")
    return state


def complete_state(state, info):
    """Gives a state (one made by from_model without a corpus, say) every language of the
    corpus it resumes on: its checksum and line count, position 0, no wraps."""
    for lang, have in info.items():
        state["corpus"].setdefault(lang, have)
        state["position"].setdefault(lang, 0)
        state["wraps"].setdefault(lang, 0)
    return state


def main(argv):
    if len(argv) >= 2 and argv[1] == "from-model":
        import argparse
        ap = argparse.ArgumentParser(prog="runstate.py from-model", description=from_model.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("model_dir")
        ap.add_argument("out_parts_dir")
        ap.add_argument("--corpus", default=None, help="the corpus the next runs read (full or a slice)")
        ap.add_argument("--step", type=int, default=None, help="global step, when nothing beside the model says")
        ap.add_argument("--windows-seen", type=int, default=None)
        ap.add_argument("--position", default="", help="data position where known, e.g. en=136368,de=23549 "
                        "(default: the sidecar's, else 0)")
        a = ap.parse_args(argv[2:])
        position = {}
        for item in filter(None, a.position.split(",")):
            lang, _, value = item.partition("=")
            position[lang] = int(value)
        state = from_model(a.model_dir, a.out_parts_dir, a.corpus, step=a.step, windows_seen=a.windows_seen,
                           position=position)
        print(json.dumps({k: state[k] for k in ("shape", "step", "windows_seen", "position", "wraps", "origin")},
                         indent=1))
        return 0
    if len(argv) == 5 and argv[1] == "rebase":
        rebase(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 4 and argv[1] == "unpack":
        print(json.dumps(unpack_state(argv[2], argv[3]), indent=1))
        return 0
    if len(argv) == 3 and argv[1] == "show":
        print(json.dumps({"position": positions_of(argv[2], [])}, indent=1))
        return 0
    if len(argv) == 6 and argv[1] == "slice":
        positions = positions_of(argv[3], LANGS)
        cut_slices(argv[2], positions, int(argv[5]), argv[4])
        print(f"slices from {positions} -> {argv[4]}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
