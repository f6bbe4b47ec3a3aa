#!/usr/bin/env python3
"""Silero VAD v6.2 goldens for hark's VAD port (tests/parity: tests/unit/vad/parity_test.cc).

Run from the repository root on the oracle machine:
    python3 scripts/oracle/vad.py --out OUT_DIR
then unpack OUT_DIR into tests/data/golden/vad/.

For every clip it writes, into --out:
  <clip>.input.npy        the 16 kHz float32 samples fed to the models (synthetic clips only;
                          the real clips are read by the C++ tests from tests/data/audio)
  <clip>.jit.npy          per-chunk speech probabilities from torch.jit.load(silero_vad.jit),
                          512-sample chunks, the last one zero-padded, states reset per clip
  <clip>.onnx.npy         the same from onnxruntime on silero_vad.onnx (OnnxWrapper's context
                          handling), when onnxruntime is importable
  <clip>.numpy.npy        the same from the plain-numpy graph below (weights from the
                          safetensors file hark loads): a cross-check that those weights are
                          the jit model's weights
  segments.json           get_speech_timestamps (re-implemented below from silero-vad 6.2.2
                          utils_vad.py) on the jit probabilities, for several option sets
  intermediates.npz       front-end/encoder/LSTM values for the first chunks of jfk (debugging)
  summary.json            versions, clip lengths, max differences between the three references

Runs without torch/onnxruntime too (numpy-only, for a local dry run): then the .jit/.onnx
files are missing and summary.json says so.
"""
import argparse
import json
import math
import os
import struct
import sys
import wave

import numpy as np

SR = 16000
WINDOW = 512
CONTEXT = 64
JIT_PATH = "tests/data/vad/silero_vad.jit"
ONNX_PATH = "tests/data/vad/silero_vad.onnx"
SAFETENSORS_PATH = "tests/data/vad/silero_vad_16k.safetensors"  # v6.2.1 weights: NOT those of the .jit/.onnx
JIT_WEIGHTS_PATH = "tests/data/vad/silero_vad_16k_jit.safetensors"  # the .jit's own 16 kHz weights

# Option sets for the segment goldens: the defaults plus variants that exercise the
# threshold, the silence/speech durations, the padding merge rule and max-speech splitting.
OPTION_SETS = {
    "default": {},
    "th03": {"threshold": 0.3},
    "th07_neg05": {"threshold": 0.7, "neg_threshold": 0.5},
    "minsil500_pad100": {"min_silence_duration_ms": 500, "speech_pad_ms": 100},
    "minspeech50_minsil20_pad200": {"min_speech_duration_ms": 50, "min_silence_duration_ms": 20, "speech_pad_ms": 200},
    "maxspeech2": {"max_speech_duration_s": 2.0},
    "maxspeech3_lastsil": {"max_speech_duration_s": 3.0, "use_max_poss_sil_at_max_speech": False},
    "maxspeech1_minsil300": {"max_speech_duration_s": 1.0, "min_silence_duration_ms": 300},
}


def read_wav_pcm16(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == SR, path
        raw = w.readframes(w.getnframes())
    return (np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(32768.0)).astype(np.float32)


def make_clips():
    rng = np.random.default_rng(20261129)
    t = np.arange(3 * SR + 300, dtype=np.float64) / SR
    clips = {
        "silero_test": (read_wav_pcm16("tests/data/audio/silero-test.wav"), False),
        "jfk": (read_wav_pcm16("tests/data/audio/jfk.wav"), False),
        "ls_test": (np.load("tests/data/audio/ls-test.f32.npy").astype(np.float32), False),
        "silence": (np.zeros(2 * SR, dtype=np.float32), True),
        "noise": ((0.1 * rng.standard_normal(4 * SR + 123)).astype(np.float32), True),
        "tone": ((0.5 * np.sin(2 * math.pi * 440.0 * t)).astype(np.float32), True),
    }
    return clips


def padded_chunks(audio):
    n_chunks = (len(audio) + WINDOW - 1) // WINDOW
    padded = np.zeros(n_chunks * WINDOW, dtype=np.float32)
    padded[: len(audio)] = audio
    return padded.reshape(n_chunks, WINDOW)


def jit_probs(model, torch, audio):
    model.reset_states()
    out = []
    with torch.no_grad():
        for chunk in padded_chunks(audio):
            out.append(model(torch.from_numpy(chunk.copy()), SR).item())
    return np.array(out, dtype=np.float32)


def onnx_probs(session, audio):
    # OnnxWrapper.__call__: the model input is the 64-sample context followed by the chunk.
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, CONTEXT), dtype=np.float32)
    out = []
    for chunk in padded_chunks(audio):
        x = np.concatenate([context, chunk[None, :]], axis=1)
        prob, state = session.run(None, {"input": x, "state": state, "sr": np.array(SR, dtype=np.int64)})
        context = x[:, -CONTEXT:]
        out.append(float(np.asarray(prob).reshape(-1)[0]))
    return np.array(out, dtype=np.float32)


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        assert info["dtype"] == "F32"
        tensors[name] = np.frombuffer(data[8 + n + a : 8 + n + b], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return tensors


# silero_vad.jit's 16 kHz tensors under the names of silero_vad_16k.safetensors.
JIT_TO_SAFETENSORS = {
    "_model.stft.forward_basis_buffer": "stft_conv.weight",
    "_model.encoder.0.reparam_conv.weight": "conv1.weight",
    "_model.encoder.0.reparam_conv.bias": "conv1.bias",
    "_model.encoder.1.reparam_conv.weight": "conv2.weight",
    "_model.encoder.1.reparam_conv.bias": "conv2.bias",
    "_model.encoder.2.reparam_conv.weight": "conv3.weight",
    "_model.encoder.2.reparam_conv.bias": "conv3.bias",
    "_model.encoder.3.reparam_conv.weight": "conv4.weight",
    "_model.encoder.3.reparam_conv.bias": "conv4.bias",
    "_model.decoder.rnn.weight_ih": "lstm_cell.weight_ih",
    "_model.decoder.rnn.weight_hh": "lstm_cell.weight_hh",
    "_model.decoder.rnn.bias_ih": "lstm_cell.bias_ih",
    "_model.decoder.rnn.bias_hh": "lstm_cell.bias_hh",
    "_model.decoder.decoder.2.weight": "final_conv.weight",
    "_model.decoder.decoder.2.bias": "final_conv.bias",
}


def read_jit_weights(path):
    """The 16 kHz weights stored in a TorchScript zip, read without torch (numpy + pickle)."""
    import io
    import pickle
    import zipfile

    archive = zipfile.ZipFile(path)
    pkl = next(n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1)
    root = pkl.rsplit("/", 1)[0]

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):  # ('storage', type, key, location, numel)
            return ("storage", pid[2])

        def find_class(self, module, name):
            if name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
                return lambda storage, offset, size, stride, *rest: ("tensor", storage[1], offset, tuple(size), tuple(stride))
            if module == "collections" and name == "OrderedDict":
                import collections
                return collections.OrderedDict

            class Opaque:
                def __init__(self, *args, **kwargs):
                    pass

                def __setstate__(self, state):
                    self.state = state
            return Opaque

    obj = Unpickler(io.BytesIO(archive.read(pkl))).load()
    found = {}

    def walk(node, prefix):
        state = getattr(node, "state", None)
        if not isinstance(state, dict):
            return
        for key, value in state.items():
            name = f"{prefix}.{key}" if prefix else key
            if isinstance(value, tuple) and value and value[0] == "tensor":
                found[name] = value
            elif hasattr(value, "state"):
                walk(value, name)

    walk(obj, "")
    weights = {}
    for jit_name, st_name in JIT_TO_SAFETENSORS.items():
        _, key, offset, size, stride = found[jit_name]
        raw = np.frombuffer(archive.read(f"{root}/data/{key}"), dtype="<f4")
        numel = int(np.prod(size))
        contiguous = tuple(int(np.prod(size[i + 1:])) for i in range(len(size)))
        assert all(st == c or sz == 1 for st, c, sz in zip(stride, contiguous, size)), (jit_name, stride)
        weights[st_name] = raw[offset:offset + numel].reshape(size).copy()
    return weights


def write_safetensors(path, weights, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name, array in weights.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def conv1d(x, w, b, stride, pad):
    # x [C_in, T], w [C_out, C_in, K] -> [C_out, T_out]
    x = np.pad(x, ((0, 0), (pad, pad)))
    k = w.shape[2]
    t_out = (x.shape[1] - k) // stride + 1
    cols = np.stack([x[:, i * stride : i * stride + k] for i in range(t_out)], axis=0)  # [T_out, C_in, K]
    y = np.einsum("tck,ock->ot", cols, w)
    return y + (b[:, None] if b is not None else 0.0)


def numpy_model(weights):
    """The 16 kHz graph in float64 numpy, written from the TorchScript code in the .jit file."""
    strides = [1, 2, 2, 1]

    def step(x576, h, c, record=None):
        x = np.pad(x576, (0, 64), mode="reflect")  # ReflectionPad1d((0, 64))
        spec = conv1d(x[None, :], weights["stft_conv.weight"], None, 128, 0)  # [258, 4]
        mag = np.sqrt(spec[:129] ** 2 + spec[129:] ** 2)
        y = mag
        for i, s in enumerate(strides):
            y = np.maximum(conv1d(y, weights[f"conv{i + 1}.weight"], weights[f"conv{i + 1}.bias"], s, 1), 0.0)
        feat = y[:, 0]
        gates = (weights["lstm_cell.weight_ih"] @ feat + weights["lstm_cell.bias_ih"]
                 + weights["lstm_cell.weight_hh"] @ h + weights["lstm_cell.bias_hh"])
        gi, gf, gg, go = np.split(gates, 4)
        sig = lambda v: 1.0 / (1.0 + np.exp(-v))
        c = sig(gf) * c + sig(gi) * np.tanh(gg)
        h = sig(go) * np.tanh(c)
        logit = weights["final_conv.weight"][0, :, 0] @ np.maximum(h, 0.0) + weights["final_conv.bias"][0]
        if record is not None:
            record.append((mag, feat, h.copy(), c.copy()))
        return sig(logit), h, c

    def run(audio, record=None):
        h = np.zeros(128)
        c = np.zeros(128)
        context = np.zeros(CONTEXT)
        out = []
        for chunk in padded_chunks(audio):
            x = np.concatenate([context, chunk.astype(np.float64)])
            p, h, c = step(x, h, c, record)
            context = x[-CONTEXT:]
            out.append(p)
        return np.array(out, dtype=np.float32)

    return run


def get_speech_timestamps_from_probs(speech_probs, audio_length_samples, threshold=0.5,
                                     min_speech_duration_ms=250, max_speech_duration_s=float("inf"),
                                     min_silence_duration_ms=100, speech_pad_ms=30, neg_threshold=None,
                                     min_silence_at_max_speech=98, use_max_poss_sil_at_max_speech=True):
    """silero-vad 6.2.2 utils_vad.get_speech_timestamps after the probability loop (16 kHz)."""
    sampling_rate = SR
    window_size_samples = WINDOW
    min_speech_samples = sampling_rate * min_speech_duration_ms / 1000
    speech_pad_samples = sampling_rate * speech_pad_ms / 1000
    max_speech_samples = sampling_rate * max_speech_duration_s - window_size_samples - 2 * speech_pad_samples
    min_silence_samples = sampling_rate * min_silence_duration_ms / 1000
    min_silence_samples_at_max_speech = sampling_rate * min_silence_at_max_speech / 1000

    triggered = False
    speeches = []
    current_speech = {}
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    temp_end = 0
    prev_end = next_start = 0
    possible_ends = []

    for i, speech_prob in enumerate(speech_probs):
        if (speech_prob >= threshold) and temp_end:
            if temp_end != 0:
                sil_dur = (window_size_samples * i) - temp_end
                if sil_dur > min_silence_samples_at_max_speech:
                    possible_ends.append((temp_end, sil_dur))
                temp_end = 0
            if next_start < prev_end:
                next_start = window_size_samples * i

        if (speech_prob >= threshold) and not triggered:
            triggered = True
            current_speech["start"] = window_size_samples * i
            continue

        if triggered and (window_size_samples * i) - current_speech["start"] > max_speech_samples:
            if possible_ends:
                if use_max_poss_sil_at_max_speech:
                    prev_end, dur = max(possible_ends, key=lambda x: x[1])
                else:
                    prev_end, dur = possible_ends[-1]
                current_speech["end"] = prev_end
                speeches.append(current_speech)
                current_speech = {}
                next_start = prev_end + dur
                if next_start < prev_end + window_size_samples * i:
                    current_speech["start"] = next_start
                else:
                    triggered = False
                possible_ends = [p_end for p_end in possible_ends if p_end[0] > next_start]
                prev_end = next_start = temp_end = 0
            else:
                current_speech["end"] = window_size_samples * i
                speeches.append(current_speech)
                current_speech = {}
                prev_end = next_start = temp_end = 0
                triggered = False
                possible_ends = []
                continue

        if (speech_prob < neg_threshold) and triggered:
            if not temp_end:
                temp_end = window_size_samples * i
            if (window_size_samples * i) - temp_end < min_silence_samples:
                continue
            else:
                current_speech["end"] = temp_end
                if (current_speech["end"] - current_speech["start"]) > min_speech_samples:
                    speeches.append(current_speech)
                current_speech = {}
                prev_end = next_start = temp_end = 0
                triggered = False
                possible_ends = []
                continue

    if current_speech and (audio_length_samples - current_speech["start"]) > min_speech_samples:
        current_speech["end"] = audio_length_samples
        speeches.append(current_speech)

    for i, speech in enumerate(speeches):
        if i == 0:
            speech["start"] = int(max(0, speech["start"] - speech_pad_samples))
        if i != len(speeches) - 1:
            silence_duration = speeches[i + 1]["start"] - speech["end"]
            if silence_duration < 2 * speech_pad_samples:
                speech["end"] += int(silence_duration // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - silence_duration // 2))
            else:
                speech["end"] = int(min(audio_length_samples, speech["end"] + speech_pad_samples))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - speech_pad_samples))
        else:
            speech["end"] = int(min(audio_length_samples, speech["end"] + speech_pad_samples))
    return [{"start": int(s["start"]), "end": int(s["end"])} for s in speeches]


def jit_intermediates(model, torch, audio, n_chunks=4):
    """STFT magnitude and encoder output of the jit's own submodules for the first chunks."""
    inner = model._model
    chunks = padded_chunks(audio)[:n_chunks]
    context = np.zeros(CONTEXT, dtype=np.float32)
    mags, feats = [], []
    with torch.no_grad():
        for chunk in chunks:
            x = np.concatenate([context, chunk])
            context = x[-CONTEXT:]
            xt = torch.from_numpy(x[None, :].copy())
            mag = inner.stft(xt)
            enc = inner.encoder(mag)
            mags.append(mag[0].numpy())
            feats.append(enc[0, :, 0].numpy())
    return np.stack(mags).astype(np.float32), np.stack(feats).astype(np.float32)


def jit_with_weights(torch, weights):
    """silero_vad.jit with its 16 kHz tensors replaced by `weights` (the same graph, other weights)."""
    model = torch.jit.load(JIT_PATH, map_location="cpu")
    model.eval()
    tensors = dict(model.named_parameters())
    tensors.update(dict(model.named_buffers()))
    with torch.no_grad():
        for jit_name, st_name in JIT_TO_SAFETENSORS.items():
            target = tensors[jit_name]
            target.copy_(torch.from_numpy(weights[st_name].astype(np.float32)).reshape(target.shape))
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="folder for the goldens")
    parser.add_argument("--write-jit-weights", metavar="PATH",
                        help="write the .jit's 16 kHz weights as safetensors (how %s was made) and exit" % JIT_WEIGHTS_PATH)
    args = parser.parse_args()
    if args.write_jit_weights:
        write_safetensors(args.write_jit_weights, read_jit_weights(JIT_PATH),
                          {"source": "silero_vad.jit (silero-vad), 16 kHz branch, extracted by scripts/oracle/vad.py",
                           "license": "MIT (snakers4/silero-vad)"})
        return
    if not args.out:
        parser.error("--out is required")
    os.makedirs(args.out, exist_ok=True)

    try:
        import torch
        torch.set_num_threads(1)
        jit_model = torch.jit.load(JIT_PATH, map_location="cpu")
        jit_model.eval()
    except Exception as e:  # numpy-only dry run
        print(f"[vad oracle] torch unavailable ({e}); writing numpy references only", file=sys.stderr)
        torch, jit_model = None, None
    try:
        import onnxruntime
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(ONNX_PATH, providers=["CPUExecutionProvider"], sess_options=opts)
    except Exception as e:
        print(f"[vad oracle] onnxruntime unavailable ({e})", file=sys.stderr)
        onnxruntime, session = None, None

    jit_weights = read_jit_weights(JIT_PATH)
    committed = load_safetensors(JIT_WEIGHTS_PATH)
    st_weights = load_safetensors(SAFETENSORS_PATH)
    summary = {"torch": getattr(torch, "__version__", None), "onnxruntime": getattr(onnxruntime, "__version__", None),
               "numpy": np.__version__, "clips": {}, "option_sets": OPTION_SETS,
               "committed_jit_weights_equal_jit": all(np.array_equal(committed[k], jit_weights[k].astype(np.float64))
                                                      for k in jit_weights)}
    run_numpy = numpy_model({k: v.astype(np.float64) for k, v in jit_weights.items()})
    run_numpy_st = numpy_model(st_weights)
    jit_st = None
    if torch is not None:
        try:
            jit_st = jit_with_weights(torch, st_weights)
        except Exception as e:
            summary["jit_st_error"] = repr(e)
    segments = {}
    for name, (audio, synthetic) in make_clips().items():
        if synthetic:
            np.save(os.path.join(args.out, f"{name}.input.npy"), audio)
        info = {"samples": int(len(audio)), "chunks": int((len(audio) + WINDOW - 1) // WINDOW)}
        ref = run_numpy(audio)
        np.save(os.path.join(args.out, f"{name}.numpy.npy"), ref)
        ref_st = run_numpy_st(audio)
        np.save(os.path.join(args.out, f"{name}.numpy_st.npy"), ref_st)
        probs_for_segments = ref
        if jit_model is not None:
            jp = jit_probs(jit_model, torch, audio)
            np.save(os.path.join(args.out, f"{name}.jit.npy"), jp)
            info["max_abs_jit_vs_numpy"] = float(np.abs(jp - ref).max())
            probs_for_segments = jp
        if jit_st is not None:
            jp_st = jit_probs(jit_st, torch, audio)
            np.save(os.path.join(args.out, f"{name}.jit_st.npy"), jp_st)
            info["max_abs_jit_st_vs_numpy_st"] = float(np.abs(jp_st - ref_st).max())
        if session is not None:
            op = onnx_probs(session, audio)
            np.save(os.path.join(args.out, f"{name}.onnx.npy"), op)
            info["max_abs_onnx_vs_numpy"] = float(np.abs(op - ref).max())
            onnx_segments = get_speech_timestamps_from_probs([float(p) for p in op], len(audio))
            info["onnx_default_segments_equal"] = onnx_segments == get_speech_timestamps_from_probs(
                [float(p) for p in probs_for_segments], len(audio))
        info["segments_from"] = "jit" if jit_model is not None else "numpy"
        segments[name] = {
            key: get_speech_timestamps_from_probs([float(p) for p in probs_for_segments], len(audio), **opts)
            for key, opts in OPTION_SETS.items()
        }
        summary["clips"][name] = info
        print(f"[vad oracle] {name}: {info}", file=sys.stderr)

    if jit_model is not None:
        try:
            mags, feats = jit_intermediates(jit_model, torch, make_clips()["jfk"][0])
            np.savez(os.path.join(args.out, "intermediates.npz"), stft_magnitude=mags, encoder_out=feats)
        except Exception as e:  # debugging aid only
            summary["intermediates_error"] = repr(e)
    with open(os.path.join(args.out, "segments.json"), "w") as f:
        json.dump(segments, f, indent=1, sort_keys=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
