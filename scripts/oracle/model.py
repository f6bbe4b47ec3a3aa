"""Model goldens: encoder output, per-step logits of a forced 24-token sequence and the
plain greedy tokens of one window, for the synthetic checkpoints (scripts/oracle/synthetic.py).

Reference: transformers' WhisperForConditionalGeneration in fp32 with eager attention, on
the GPU with TF32 disabled. Input: the reference feature extractor's log-mel of jfk.wav,
saved too so the C++ test feeds the encoder the very same mel.

  python3 scripts/oracle/model.py --out DIR [--sizes tiny,base,large-v3-turbo]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from scipy.io import wavfile
from transformers import WhisperFeatureExtractor
from transformers.modeling_outputs import BaseModelOutput

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synthetic  # noqa: E402

# <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|> then text tokens; the
# task/notimestamps ids shift by one in the 51866 vocabulary (yue).
TEXT = [400, 370, 452, 7177, 6280, 11, 1029, 406, 437, 428, 1941, 393, 360, 337, 291, 11, 1029, 437, 291, 393]
ROW_STRIDE = 5      # encoder rows kept: every 5th of 1500
VOCAB_STRIDE = 13   # logit columns kept: every 13th
GREEDY_STEPS = 48


def specials(n_vocab):
    shift = 1 if n_vocab == 51866 else 0
    return {"sot": 50258, "en": 50259, "transcribe": 50359 + shift, "notimestamps": 50363 + shift, "eot": 50257}


def jfk_samples():
    rate, data = wavfile.read("tests/data/audio/jfk.wav")
    assert rate == 16000 and data.dtype == np.int16
    return data.astype(np.float32) / 32768.0


def golden_for(size, out, device):
    t0 = time.time()
    d, heads, n_enc, n_dec, n_mels, n_vocab = synthetic.SIZES[size]
    model = synthetic.build_hf_model(size, device=device)
    fe = WhisperFeatureExtractor(feature_size=n_mels)
    mel = fe(jfk_samples(), sampling_rate=16000, return_tensors="np").input_features[0].astype(np.float32)
    prefix = os.path.join(out, size.replace(".", "_"))
    np.save(prefix + "_mel.npy", mel)
    sp = specials(n_vocab)
    with torch.no_grad():
        feats = torch.from_numpy(mel)[None].to(device)
        enc = model.model.encoder(feats).last_hidden_state  # [1, 1500, d]
        enc_np = enc[0].double().cpu().numpy()
        np.save(prefix + "_encoder_rows.npy", enc_np[::ROW_STRIDE].astype(np.float32))
        tokens = [sp["sot"], sp["en"], sp["transcribe"], sp["notimestamps"]] + TEXT
        ids = torch.tensor([tokens], device=device)
        logits = model(encoder_outputs=BaseModelOutput(last_hidden_state=enc), decoder_input_ids=ids).logits[0].double().cpu().numpy()
        np.save(prefix + "_logits_cols.npy", logits[:, ::VOCAB_STRIDE].astype(np.float32))
        np.save(prefix + "_logits_last.npy", logits[-1].astype(np.float32))
        top = np.argsort(-logits, axis=1)[:, :5]
        # Plain greedy: argmax with no logit filters, from the 4-token start sequence.
        seq = tokens[:4]
        past = None
        step_ids = torch.tensor([seq], device=device)
        greedy, margins = [], []
        for _ in range(GREEDY_STEPS):
            o = model(encoder_outputs=BaseModelOutput(last_hidden_state=enc), decoder_input_ids=step_ids, past_key_values=past, use_cache=True)
            past = o.past_key_values
            row = o.logits[0, -1].double()
            vals, idx = torch.topk(row, 2)
            nxt = int(idx[0])
            greedy.append(nxt)
            margins.append(float(vals[0] - vals[1]))
            if nxt == sp["eot"]:
                break
            step_ids = torch.tensor([[nxt]], device=device)
    meta = {
        "size": size, "tokens": tokens, "row_stride": ROW_STRIDE, "vocab_stride": VOCAB_STRIDE,
        "encoder_sum": float(enc_np.sum()), "encoder_sumsq": float((enc_np ** 2).sum()),
        "logits_top5": top.tolist(), "greedy": greedy, "greedy_min_margin": min(margins),
        "torch": torch.__version__, "device": str(device), "seconds": time.time() - t0,
    }
    with open(prefix + "_meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{size}: greedy {greedy[:8]}... min margin {min(margins):.4f} in {time.time() - t0:.1f}s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="tiny,base,large-v3-turbo")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = synthetic.exact_torch()
    for size in args.sizes.split(","):
        golden_for(size, args.out, device)


if __name__ == "__main__":
    main()
