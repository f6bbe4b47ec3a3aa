#!/usr/bin/env python3
"""Checkpoints written by the real libraries, for the loader tests
(tests/unit/model_loaders/real_files_test.cc). Run from the repository root:

    python3 scripts/oracle/loaders.py --out DIR      # then unpack DIR into tests/data/golden/loaders/

Writes into --out (about 3.5 MB):
  hf/             transformers' WhisperForConditionalGeneration.save_pretrained() of a small
                  seeded random model (d_model 16, 2 encoder + 2 decoder layers, 51865 tokens)
                  in float16, sharded (max_shard_size="1MB") so that it carries
                  model.safetensors.index.json, plus config.json and generation_config.json
                  (alignment_heads [[1, 0], [1, 1]]).
  reference.npz   every state_dict tensor by its Hugging Face name, float16, written by
                  numpy (proj_out.weight left out: it is tied to the token embedding).
  meta.json       library versions, tensor names and shard files.
The C++ test loads hf/ with hark's loader and compares each tensor bit for bit with
reference.npz through hark's internal->HF name mapping, so a wrong mapping cannot pass.
"""
import argparse
import json
import os

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    import transformers
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(20261129)
    config = WhisperConfig(
        vocab_size=51865,
        num_mel_bins=80,
        encoder_layers=2,
        encoder_attention_heads=2,
        decoder_layers=2,
        decoder_attention_heads=2,
        d_model=16,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=12,
        max_target_positions=8,
    )
    model = WhisperForConditionalGeneration(config).eval()
    # Give every parameter seeded non-trivial values (some are initialised to 0 or 1).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "proj_out.weight":
                continue
            p.copy_(torch.randn_like(p) * 0.1)
    model = model.to(torch.float16)
    try:
        model.generation_config.alignment_heads = [[1, 0], [1, 1]]
    except Exception as e:  # older/newer generation configs: the test skips the check
        print("could not set alignment_heads:", e)

    hf_dir = os.path.join(args.out, "hf")
    model.save_pretrained(hf_dir, max_shard_size="1MB")
    files = sorted(os.listdir(hf_dir))
    print("wrote", hf_dir, files)

    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items() if k != "proj_out.weight"}
    np.savez(os.path.join(args.out, "reference.npz"), **state)
    meta = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "files": files,
        "tensors": {k: list(v.shape) for k, v in state.items()},
        "tied_embeddings": bool(
            model.proj_out.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr()
        ),
    }
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("tensors:", len(state), "tied:", meta["tied_embeddings"])


if __name__ == "__main__":
    main()
