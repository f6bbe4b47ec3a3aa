"""Seeded random-weight Whisper checkpoints, bit-identical to src/model/synthetic.cc.

The formula (see synthetic.h) keys every element on the internal (OpenAI) tensor name and
its flat index, so the C++ tests rebuild the very checkpoint the oracle ran without
storing it. build_hf_model() returns a transformers WhisperForConditionalGeneration with
those weights (fp32, eager attention) and saves it in the Hugging Face layout.
"""
import math

import numpy as np

M64 = (1 << 64) - 1

SIZES = {
    # name: (d_model, heads, encoder layers, decoder layers, n_mels, n_vocab)
    "tiny": (384, 6, 4, 4, 80, 51865),
    "tiny.en": (384, 6, 4, 4, 80, 51864),
    "base": (512, 8, 6, 6, 80, 51865),
    "small": (768, 12, 12, 12, 80, 51865),
    "medium": (1024, 16, 24, 24, 80, 51865),
    "large-v3": (1280, 20, 32, 32, 128, 51866),
    "large-v3-turbo": (1280, 20, 32, 4, 128, 51866),
}


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & M64
    return h


def unit(name_hash, n):
    """c in [-1, 1) for indices 0..n-1 (float64, exact)."""
    with np.errstate(over="ignore"):
        i = np.arange(n, dtype=np.uint64)
        z = np.uint64(name_hash) + (i + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return 2.0 * (z >> np.uint64(40)).astype(np.float64) / 16777216.0 - 1.0


def init_for(name, shape):
    is_norm = "_ln." in name or "ln_post." in name or name.startswith("decoder.ln.")
    if is_norm:
        return (1.0, 0.2) if name.endswith(".weight") else (0.0, 0.05)
    if name.endswith(".bias"):
        return (0.0, 0.05)
    if name in ("decoder.token_embedding.weight", "decoder.positional_embedding"):
        return (0.0, 0.1)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (0.0, math.sqrt(3.0 / fan_in))


def sinusoids(length, channels):
    half = channels // 2
    inc = math.log(10000.0) / (half - 1)
    inv = np.exp(-inc * np.arange(half, dtype=np.float64))
    angle = np.arange(length, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(np.float32)


def expected_tensors(size):
    d, heads, n_enc, n_dec, n_mels, n_vocab = SIZES[size]
    out = [("encoder.conv1.weight", (d, n_mels, 3)), ("encoder.conv1.bias", (d,)),
           ("encoder.conv2.weight", (d, d, 3)), ("encoder.conv2.bias", (d,)),
           ("encoder.positional_embedding", (1500, d))]

    def attn(p):
        return [(p + ".query.weight", (d, d)), (p + ".query.bias", (d,)), (p + ".key.weight", (d, d)),
                (p + ".value.weight", (d, d)), (p + ".value.bias", (d,)), (p + ".out.weight", (d, d)),
                (p + ".out.bias", (d,))]

    def norm(p):
        return [(p + ".weight", (d,)), (p + ".bias", (d,))]

    def mlp(p):
        return [(p + ".mlp.0.weight", (4 * d, d)), (p + ".mlp.0.bias", (4 * d,)),
                (p + ".mlp.2.weight", (d, 4 * d)), (p + ".mlp.2.bias", (d,))]

    for i in range(n_enc):
        p = f"encoder.blocks.{i}"
        out += attn(p + ".attn") + norm(p + ".attn_ln") + mlp(p) + norm(p + ".mlp_ln")
    out += norm("encoder.ln_post")
    out += [("decoder.token_embedding.weight", (n_vocab, d)), ("decoder.positional_embedding", (448, d))]
    for i in range(n_dec):
        p = f"decoder.blocks.{i}"
        out += attn(p + ".attn") + norm(p + ".attn_ln") + attn(p + ".cross_attn") + norm(p + ".cross_attn_ln")
        out += mlp(p) + norm(p + ".mlp_ln")
    out += norm("decoder.ln")
    return out


def make_tensor(name, shape):
    if name == "encoder.positional_embedding":
        return sinusoids(*shape)
    center, scale = init_for(name, shape)
    n = int(np.prod(shape))
    return (center + scale * unit(fnv1a64(name), n)).astype(np.float32).reshape(shape)


HF_PARTS = [
    ("encoder.blocks.", "model.encoder.layers."), ("decoder.blocks.", "model.decoder.layers."),
    (".cross_attn_ln.", ".encoder_attn_layer_norm."), (".cross_attn.", ".encoder_attn."),
    (".attn_ln.", ".self_attn_layer_norm."), (".attn.", ".self_attn."), (".mlp_ln.", ".final_layer_norm."),
    (".mlp.0.", ".fc1."), (".mlp.2.", ".fc2."), (".query.", ".q_proj."), (".key.", ".k_proj."),
    (".value.", ".v_proj."), (".out.", ".out_proj."),
]


def hf_name(name):
    special = {
        "encoder.conv1.weight": "model.encoder.conv1.weight", "encoder.conv1.bias": "model.encoder.conv1.bias",
        "encoder.conv2.weight": "model.encoder.conv2.weight", "encoder.conv2.bias": "model.encoder.conv2.bias",
        "encoder.positional_embedding": "model.encoder.embed_positions.weight",
        "encoder.ln_post.weight": "model.encoder.layer_norm.weight",
        "encoder.ln_post.bias": "model.encoder.layer_norm.bias",
        "decoder.token_embedding.weight": "model.decoder.embed_tokens.weight",
        "decoder.positional_embedding": "model.decoder.embed_positions.weight",
        "decoder.ln.weight": "model.decoder.layer_norm.weight", "decoder.ln.bias": "model.decoder.layer_norm.bias",
    }
    if name in special:
        return special[name]
    out = name
    for a, b in HF_PARTS:
        out = out.replace(a, b)
    return out


def hf_config(size):
    from transformers import WhisperConfig
    d, heads, n_enc, n_dec, n_mels, n_vocab = SIZES[size]
    return WhisperConfig(
        vocab_size=n_vocab, num_mel_bins=n_mels, encoder_layers=n_enc, encoder_attention_heads=heads,
        decoder_layers=n_dec, decoder_attention_heads=heads, d_model=d, encoder_ffn_dim=4 * d,
        decoder_ffn_dim=4 * d, max_source_positions=1500, max_target_positions=448,
        decoder_start_token_id=50258, bos_token_id=50257, eos_token_id=50257, pad_token_id=50257,
        scale_embedding=False, tie_word_embeddings=True, activation_function="gelu")


def build_hf_model(size, save_dir=None, device="cpu"):
    """A transformers model holding the synthetic weights (fp32, eager attention)."""
    import torch
    from transformers import WhisperForConditionalGeneration
    cfg = hf_config(size)
    model = WhisperForConditionalGeneration(cfg)
    state = {hf_name(n): torch.from_numpy(make_tensor(n, s)) for n, s in expected_tensors(size)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "proj_out.weight"]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    if save_dir:
        model.save_pretrained(save_dir, safe_serialization=True)
        model = WhisperForConditionalGeneration.from_pretrained(save_dir, attn_implementation="eager",
                                                                dtype=torch.float32)
    else:
        try:
            model.set_attn_implementation("eager")
        except Exception:
            model.config._attn_implementation = "eager"
    return model.to(device).eval()


def exact_torch():
    """PyTorch set up the way every golden is made: fp32 products without TF32 (on by
    default for cuDNN, and for matmul in some versions), highest matmul precision; returns
    the device to use ("cuda" where there is one)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return "cuda" if torch.cuda.is_available() else "cpu"
