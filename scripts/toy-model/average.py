#!/usr/bin/env python3
"""Averages the weights of checkpoints of one training line into a new checkpoint.

Two checkpoints of the same run line (one resumed from the other) usually sit in one basin
of the loss, and their mean is often better than either: each decay ends somewhere in that
basin with its own small errors, and the mean cancels part of them. This writes that mean,
optionally weighted, in the layout of the first checkpoint: the same tensor names, dtypes,
order and header metadata, so only the tensor bytes differ (the mean is taken in float64
and rounded once to each tensor's dtype).

    average.py OUT_DIR MODEL_DIR [MODEL_DIR ...] [--weights 0.5,0.5]

OUT_DIR receives model.safetensors and copies of the first model's config.json and
generation_config.json. The checkpoints must hold the same tensors with the same shapes
and dtypes (an error names the first difference). Where the checkpoints carry a
training-state.json (runstate.py's sidecar), OUT_DIR gets the one of the furthest-trained
checkpoint (highest step), tied to the new weights' sha256 and naming what was averaged:
training resumed from the mean (`runstate.py from-model`) reads on from that checkpoint's
data position. Standard library and numpy only.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

import runstate

DTYPES = {"F16": np.float16, "F32": np.float32, "BF16": None, "F64": np.float64}


def read_safetensors(path):
    """(header dict, data bytes) of a safetensors file; the header keeps its key order."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header size)")
    (size,) = struct.unpack("<Q", raw[:8])
    if 8 + size > len(raw):
        raise ValueError(f"{path}: header size {size} runs past the end of the file")
    header = json.loads(raw[8:8 + size].decode("utf-8"))
    return header, raw[8 + size:]


def tensor(header, data, name):
    info = header[name]
    dtype = DTYPES.get(info["dtype"])
    if dtype is None:
        raise ValueError(f"{name}: dtype {info['dtype']} is not supported (F16, F32, F64)")
    begin, end = info["data_offsets"]
    return np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])


def average(paths, weights):
    """Header of the first file and the averaged data bytes."""
    loaded = [read_safetensors(p) for p in paths]
    header, data = loaded[0]
    names = [k for k in header if k != "__metadata__"]
    for path, (h, _) in zip(paths[1:], loaded[1:]):
        other = [k for k in h if k != "__metadata__"]
        if sorted(other) != sorted(names):
            missing = sorted(set(names) ^ set(other))
            raise ValueError(f"{path}: tensors differ from {paths[0]}'s, first: {missing[0]}")
        for name in names:
            if (h[name]["dtype"], h[name]["shape"]) != (header[name]["dtype"], header[name]["shape"]):
                raise ValueError(f"{path}: {name} is {h[name]['dtype']} {h[name]['shape']}, "
                                 f"{paths[0]} has {header[name]['dtype']} {header[name]['shape']}")
    out = bytearray(data)
    for name in names:
        mean = sum(w * tensor(h, d, name).astype(np.float64) for w, (h, d) in zip(weights, loaded))
        begin, end = header[name]["data_offsets"]
        out[begin:end] = mean.astype(DTYPES[header[name]["dtype"]]).tobytes()
    return header, bytes(out)


def write_safetensors(path, header, data):
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the format asks
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def merged_sidecar(models, weights, out_sha256):
    """The furthest-trained model's training-state.json for the averaged weights, or None."""
    sides = []
    for model, weight in zip(models, weights):
        path = os.path.join(model, runstate.SIDECAR)
        if os.path.exists(path):
            side = runstate.load_json(path)
            sides.append((side.get("step", 0), model, weight, side))
    if not sides:
        return None
    side = dict(max(sides, key=lambda s: s[0])[3])
    side["averaged_from"] = [{"model_sha256": s[3].get("model_sha256"), "step": s[0], "weight": s[2]}
                             for s in sides]
    side["model_sha256"] = out_sha256
    return side


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("models", nargs="+", help="checkpoint folders holding model.safetensors")
    ap.add_argument("--weights", help="comma-separated, one per model (default equal); they must sum to 1")
    args = ap.parse_args(argv)
    if len(args.models) < 2:
        ap.error("give at least two checkpoints to average")
    weights = [1 / len(args.models)] * len(args.models)
    if args.weights:
        weights = [float(w) for w in args.weights.split(",")]
        if len(weights) != len(args.models) or abs(sum(weights) - 1) > 1e-6:
            ap.error(f"--weights needs {len(args.models)} numbers summing to 1, got {args.weights}")
    try:
        header, data = average([os.path.join(m, "model.safetensors") for m in args.models], weights)
    except (OSError, ValueError) as e:
        print(f"average.py: {e}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), header, data)
    for name in ("config.json", "generation_config.json"):
        src = os.path.join(args.models[0], name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(args.out, name))
    side = merged_sidecar(args.models, weights, runstate.sha256_file(os.path.join(args.out, "model.safetensors")))
    if side is not None:
        runstate.save_json(os.path.join(args.out, runstate.SIDECAR), side)
    print(f"wrote {args.out}/model.safetensors: mean of {len(args.models)} checkpoints, weights {weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
