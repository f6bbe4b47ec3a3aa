"""transformers' fp16 Whisper with SDPA attention, timed on the GPU machine beside hark
(scripts/device/run-all.sh): encoder ms per 30 s window at several batch sizes, and the
decoder step (one token through the KV cache, logits included) at batch 1.

Weights: transformers' own random initialisation of the same shape (what is timed does not
depend on the values). Medians of CUDA-event timings after warm-up; the decoder step is
timed from the host (it includes transformers' Python overhead, as a user would see it).

  python3 scripts/device/transformers_bench.py --size large-v3-turbo --out FILE.json
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import synthetic  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="large-v3-turbo")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    from transformers import WhisperForConditionalGeneration
    cfg = synthetic.hf_config(args.size)
    cfg._attn_implementation = "sdpa"
    model = WhisperForConditionalGeneration(cfg).to("cuda", dtype=torch.float16).eval()
    n_mels = cfg.num_mel_bins
    out = {"size": args.size, "torch": torch.__version__, "dtype": "float16", "attention": "sdpa",
           "gpu": torch.cuda.get_device_name(0), "encoder_ms_per_window": {}}
    import transformers
    out["transformers"] = transformers.__version__
    enc = model.model.encoder
    with torch.inference_mode():
        for b in [int(x) for x in args.batches.split(",")]:
            mel = torch.randn(b, n_mels, 3000, device="cuda", dtype=torch.float16)
            for _ in range(3):
                enc(mel)
            times = []
            for _ in range(args.runs):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                enc(mel)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            out["encoder_ms_per_window"][str(b)] = statistics.median(times) / b
            print(f"transformers encoder {statistics.median(times) / b:8.2f} ms / window at batch {b}", flush=True)
        mel = torch.randn(1, n_mels, 3000, device="cuda", dtype=torch.float16)
        encoded = enc(mel)
        step_medians = []
        for _ in range(3):
            ids = torch.tensor([[50258, 50259, 50360, 50364]], device="cuda")
            res = model(encoder_outputs=encoded, decoder_input_ids=ids, use_cache=True)
            cache = res.past_key_values
            token = torch.tensor([[400]], device="cuda")
            per_step = []
            for _ in range(args.steps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                res = model(encoder_outputs=encoded, decoder_input_ids=token, past_key_values=cache, use_cache=True)
                cache = res.past_key_values
                torch.cuda.synchronize()
                per_step.append((time.perf_counter() - t0) * 1000)
            step_medians.append(statistics.median(per_step))
        out["decoder_ms_per_step"] = {"1": statistics.median(step_medians)}
        print(f"transformers decoder {out['decoder_ms_per_step']['1']:8.3f} ms / step at batch 1", flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
