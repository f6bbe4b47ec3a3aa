"""Oracle transcripts of the bundled model's held-out clips (tests/data/toy-eval).

The training run writes references.json with its own evaluation's output (batched
generate(), TF32 and SDPA attention on): good for quality figures, not for an exact-text
parity test, where one near-tie decides a token differently (found when the open-vocabulary
checkpoint was shipped, 2026-12-01: one French word of thirteen clips). This script decodes
every clip again the way the other goldens are made (fp32, TF32 off, eager attention, one
clip at a time, OpenAI's greedy decoding with timestamps, the language given) and detects
the language from the SOT step. It rewrites references.json in place, keeping the training
run's fields (reference text, segments) and replacing the hypotheses:
  hyp_timestamps, ids_timestamps   OpenAI greedy, timestamps on, the clip's language given
  detected_lang                    argmax of the language probabilities at the SOT step
  no_speech_prob                   at the SOT step of that decoding
  oracle                           min top-2 logit margin of the decoding, how it was made;
                                   beam5_min_margin: OpenAI beam search (5 beams, timestamps)
                                   on the same window, the smallest gap between a kept and a
                                   dropped candidate at any step or between the best two at the end
Usage (repo root, on the GPU machine): python3 scripts/oracle/toy_eval.py --out DIR
(writes DIR/references.json; copy it over tests/data/toy-eval/references.json).
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import decoding  # noqa: E402  (the same Ref, filters and greedy loop as the other goldens)
import synthetic  # noqa: E402

TOY_EVAL = os.path.join("tests", "data", "toy-eval")


def clip_mel(path, fe):
    from scipy.io import wavfile
    rate, data = wavfile.read(path)
    assert rate == 16000 and data.dtype == np.int16, path
    audio = data.astype(np.float32) / 32768.0
    padded = np.concatenate([audio, np.zeros(480000, dtype=np.float32)])  # as OpenAI pads
    mel = fe(padded, sampling_rate=16000, return_tensors="np", padding="longest",
             truncation=False).input_features[0].astype(np.float32)
    content = len(audio) // 160
    # OpenAI's seek loop: the window is the clip's own frames, zeros after them in log-mel
    # space (pad_or_trim on the segment), not the log-mel of 30 s of silent audio that
    # transformers' short-form generate() sees.
    return decoding.pad_window(np.ascontiguousarray(mel[:, :content]), 0, min(content, decoding.N_FRAMES))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration
    device = synthetic.exact_torch()
    with open(os.path.join(decoding.TOY_DIR, "generation_config.json")) as f:
        heads = json.load(f).get("alignment_heads")
    model = WhisperForConditionalGeneration.from_pretrained(decoding.TOY_DIR, attn_implementation="eager",
                                                            dtype=torch.float32).to(device).eval()
    ref = decoding.Ref(device, model=model, alignment_heads=heads)
    fe = WhisperFeatureExtractor(feature_size=80)
    with open(os.path.join(TOY_EVAL, "references.json"), encoding="utf-8") as f:
        clips = json.load(f)
    for clip in clips:
        enc = ref.encoder(clip_mel(os.path.join(TOY_EVAL, clip["file"]), fe))
        probs = decoding.language_probs(ref, enc)
        clip["detected_lang"] = max(probs, key=probs.get)
        lang = clip.get("lang") or "en"
        ref.sot_sequence = [ref.sot, ref.language_tokens[ref.language_codes.index(lang)], ref.transcribe]
        g = decoding.openai_greedy(ref, enc)
        clip["hyp_timestamps"] = g["text"]
        clip["ids_timestamps"] = g["tokens"]
        clip["no_speech_prob"] = g["no_speech_prob"]
        b = decoding.openai_beam(ref, enc, 5)
        clip["oracle"] = {"min_margin": g["min_margin"], "beam5_min_margin": b["min_margin"],
                          "method": "scripts/oracle/toy_eval.py: OpenAI greedy and beam 5, "
                          "timestamps, language given, fp32, TF32 off, eager attention, batch 1"}
        for stale in ("hyp_segments", "hyp_plain", "ids_plain"):  # the training run's, not redone here
            clip.pop(stale, None)
        print(f"{clip['file']}: {clip['detected_lang']} margin {g['min_margin']:.4f} beam {b['min_margin']:.4f} "
              f"| {g['text'][:90]}", flush=True)
    with open(os.path.join(args.out, "references.json"), "w", encoding="utf-8") as f:
        json.dump(clips, f, indent=1, ensure_ascii=False)
    print("wrote", os.path.join(args.out, "references.json"))


if __name__ == "__main__":
    main()
