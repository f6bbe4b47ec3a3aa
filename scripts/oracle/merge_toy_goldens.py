"""Puts a new bundled checkpoint's oracle goldens in place, after the GPU call that made them
(scripts/toy-model/NEXT.md, "To ship a new checkpoint"):

  python3 scripts/oracle/merge_toy_goldens.py OUT_DIR

OUT_DIR is what came back from the call: toy_eval.py's references.json, and run_all.sh's
goldens (GOLDEN_DIR=$OUT/g: g/decoding/decoding.json and g/decoding/toy_alignment_matrix.npy;
or goldens.tgz, unpacked here first). What it does:

- tests/data/toy-eval/references.json <- OUT_DIR/references.json (the clips' file names
  must be the ones in tests/data/toy-eval, so the kept clips are what the oracle read);
- tests/data/golden/decoding/decoding.json: only the keys that start with "toy_" are
  replaced (the synthetic model's goldens come from seeded weights and stay as they are;
  a "toy" error entry from decoding.py stops the merge);
- tests/data/golden/decoding/toy_alignment_matrix.npy <- the new one.

Standard library only; prints what changed.
"""
import json
import os
import shutil
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOY_EVAL = os.path.join(ROOT, "tests", "data", "toy-eval")
DECODING = os.path.join(ROOT, "tests", "data", "golden", "decoding")


def _decoding_dir(out_dir, scratch):
    direct = os.path.join(out_dir, "g", "decoding")
    if os.path.exists(os.path.join(direct, "decoding.json")):
        return direct
    tgz = os.path.join(out_dir, "goldens.tgz")
    if os.path.exists(tgz):
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers() if m.name.lstrip("./").startswith("decoding/")]
            for m in members:
                if m.issym() or m.islnk() or ".." in m.name.split("/"):
                    raise ValueError(f"[merge] unexpected member {m.name!r} in {tgz}")
            tar.extractall(scratch, members=members)
        if os.path.exists(os.path.join(scratch, "decoding", "decoding.json")):
            return os.path.join(scratch, "decoding")
    raise FileNotFoundError(f"[merge] no decoding.json under {out_dir} (g/decoding/ or goldens.tgz); "
                            "run scripts/oracle/run_all.sh decoding on the GPU machine with the new checkpoint")


def merge(out_dir, toy_eval=TOY_EVAL, decoding=DECODING, log=print):
    refs_path = os.path.join(out_dir, "references.json")
    if not os.path.exists(refs_path):
        raise FileNotFoundError(f"[merge] {refs_path} missing; run scripts/oracle/toy_eval.py --out DIR")
    with open(refs_path, encoding="utf-8") as f:
        refs = json.load(f)
    missing = [r["file"] for r in refs if not os.path.exists(os.path.join(toy_eval, r["file"]))]
    if missing:
        raise ValueError(f"[merge] references.json names clips that {toy_eval} does not hold: {missing[:3]}")
    with tempfile.TemporaryDirectory(prefix="hark-merge-") as scratch:
        src = _decoding_dir(out_dir, scratch)
        with open(os.path.join(src, "decoding.json"), encoding="utf-8") as f:
            new = json.load(f)
        if "toy" in new and "error" in new["toy"]:
            raise ValueError(f"[merge] decoding.py's toy part failed: {new['toy']['error']}")
        toy_keys = sorted(k for k in new if k.startswith("toy_"))
        if not toy_keys:
            raise ValueError("[merge] the new decoding.json has no toy_* keys (was the bundled model in models/?)")
        matrix = os.path.join(src, "toy_alignment_matrix.npy")
        if not os.path.exists(matrix):
            raise FileNotFoundError(f"[merge] {matrix} missing")
        golden_path = os.path.join(decoding, "decoding.json")
        with open(golden_path, encoding="utf-8") as f:
            golden = json.load(f)
        changed = [k for k in toy_keys if golden.get(k) != new[k]]
        for k in [k for k in golden if k.startswith("toy_") and k not in new]:
            del golden[k]  # a part the oracle no longer makes
        golden.update({k: new[k] for k in toy_keys})
        with open(golden_path, "w", encoding="utf-8") as f:
            json.dump(golden, f, indent=1, default=float)
        shutil.copyfile(matrix, os.path.join(decoding, "toy_alignment_matrix.npy"))
    shutil.copyfile(refs_path, os.path.join(toy_eval, "references.json"))
    log(f"[merge] references.json: {len(refs)} clips; decoding.json: {len(changed)} of {len(toy_keys)} toy_* keys "
        f"changed ({', '.join(changed)}); toy_alignment_matrix.npy replaced")
    return changed


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    try:
        merge(argv[1])
    except (OSError, ValueError) as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
