"""GPU side of the toy model: clip store, batch assembly, the Whisper model, the training
loop with a wall-clock deadline, and the fp16 Hugging Face export."""
import json
import math
import multiprocessing
import os
import random

import numpy as np
import torch
import torch.nn.functional as F

import layout
import tokens as T
from mel import LogMel, N_SAMPLES

RATE = layout.RATE
MIN_CLIPS_PER_LANG = 64


class ClipStore:
    """All synthesized clips in one int16 tensor on the device, plus their metadata."""

    def __init__(self, device, capacity_samples):
        self.device = device
        self.data = torch.zeros(capacity_samples, dtype=torch.int16, device=device)
        self.used = 0
        self.offset, self.length = [], []
        self.table = layout.ClipTable()

    def add(self, clip, lang, text, token_ids):
        n = len(clip)
        if n < RATE // 5 or n > int(layout.WINDOW_S * RATE) - RATE:
            return False  # empty or absurdly long synthesis: skip
        if self.used + n > self.data.numel():
            grown = torch.zeros(max(self.data.numel() * 2, self.used + n), dtype=torch.int16, device=self.device)
            grown[: self.used] = self.data[: self.used]
            self.data = grown
        self.data[self.used: self.used + n] = torch.from_numpy(clip).to(self.device)
        self.offset.append(self.used)
        self.length.append(n)
        self.used += n
        self.table.add(lang, n / RATE, text, token_ids)
        return True


SPEECH_NOISE_MAX = 1.2e-2  # std of the added noise, peak-0.5 speech at gains 0.25-1.6
SILENCE_NOISE_MAX = 3e-2


def parse_lang_weights(text, langs):
    """'en=1.5,fr=1.2' -> weights in `langs` order (unnamed languages weigh 1)."""
    weights = {lang: 1.0 for lang in langs}
    for item in filter(None, (text or "").split(",")):
        lang, _, value = item.partition("=")
        if lang not in weights or not value:
            raise ValueError(f"--lang-weights: expected LANG=WEIGHT with LANG one of {sorted(weights)}, got {item!r}")
        weights[lang] = float(value)
        if weights[lang] <= 0:
            raise ValueError(f"--lang-weights: {lang}'s weight must be positive")
    return [weights[lang] for lang in langs]


def gather_audio(store, plans, rng, device):
    """[B, 480000] float32 windows: clips placed per plan, random gains, mild noise."""
    B = len(plans)
    K = max(1, max(len(p["placements"]) + (p["cut"] is not None) for p in plans))
    # Filled as numpy arrays: element-wise writes into torch tensors cost microseconds each.
    start = np.full((B, K), N_SAMPLES + 1, dtype=np.int64)
    length = np.zeros((B, K), dtype=np.int64)
    source = np.zeros((B, K), dtype=np.int64)
    gain = np.zeros((B, K), dtype=np.float32)
    noise_std = np.zeros((B, 1), dtype=np.float32)
    noise_end = np.zeros((B, 1), dtype=np.int64)
    noise_tilt = np.zeros((B, 1), dtype=np.float32)  # 0 white, 1 pink, 2 brown
    for b, plan in enumerate(plans):
        placed = list(plan["placements"]) + ([plan["cut"]] if plan["cut"] is not None else [])
        for k, (clip, t) in enumerate(placed):
            s = int(round(t * RATE))
            start[b, k] = s
            length[b, k] = min(store.length[clip], N_SAMPLES - s)
            source[b, k] = store.offset[clip]
            gain[b, k] = rng.uniform(0.25, 1.6) / 16384.0  # clips are stored at peak 0.5
        r = rng.random()
        # Noise-only windows reach louder noise than speech windows: the evaluation's go up to
        # std 2e-2 (evalsets.windows), and run 11 — trained to 1.2e-2 — wrote text on hark's
        # one window at 2.02e-2 (silence-16 of hark_eval.sh).
        top = SILENCE_NOISE_MAX if plan["kind"] == "silence" else SPEECH_NOISE_MAX
        noise_std[b, 0] = 0.0 if r < 0.3 else math.exp(rng.uniform(math.log(1e-4), math.log(top)))
        noise_tilt[b, 0] = rng.choice((0.0, 0.0, 1.0, 2.0))
        noise_end[b, 0] = N_SAMPLES if rng.random() < 0.5 else int(plan["audio_end"] * RATE)
    start, length, source, gain, noise_std, noise_end = (
        torch.from_numpy(x) for x in (start, length, source, gain, noise_std, noise_end))
    start, length, source, gain = (x.to(device, non_blocking=True) for x in (start, length, source, gain))
    t = torch.arange(N_SAMPLES, device=device).expand(B, N_SAMPLES)
    k = torch.searchsorted(start, t.contiguous(), right=True) - 1
    kc = k.clamp(min=0)
    rel = t - start.gather(1, kc)
    valid = (k >= 0) & (rel < length.gather(1, kc))
    index = (source.gather(1, kc) + rel).clamp(0, store.used - 1)
    audio = torch.where(valid, store.data[index].float() * gain.gather(1, kc), 0.0)
    noise = coloured_noise(B, torch.from_numpy(noise_tilt).to(device), device) * noise_std.to(device)
    audio += torch.where(t < noise_end.to(device), noise, 0.0)
    return audio


def coloured_noise(B, tilt, device):
    """[B, 480000] unit-RMS noise with a 1/f^tilt power spectrum per row (tilt [B, 1])."""
    spec = torch.fft.rfft(torch.randn(B, N_SAMPLES, device=device))
    f = torch.fft.rfftfreq(N_SAMPLES, 1.0 / RATE, device=device).clamp(min=20.0)
    y = torch.fft.irfft(spec * f[None, :] ** (-tilt / 2.0), N_SAMPLES)
    return y / y.pow(2).mean(dim=1, keepdim=True).sqrt().clamp(min=1e-12)


def build_targets(plans, table, rng, device, p_timestamps=0.75, p_prompt=0.5):
    seqs, masks = [], []
    for plan in plans:
        prompt = layout.draw_prompt(rng, table, plan["lang"], p_prompt)
        ids, n_masked = layout.targets(plan, table, timestamps=rng.random() < p_timestamps, prompt=prompt)
        seqs.append(ids)
        masks.append(n_masked)
    L = max(len(s) for s in seqs) - 1
    inputs = np.full((len(seqs), L), T.EOT, dtype=np.int64)
    labels = np.full((len(seqs), L), -100, dtype=np.int64)
    for b, (s, m) in enumerate(zip(seqs, masks)):
        inputs[b, : len(s) - 1] = s[:-1]
        labels[b, : len(s) - 1] = s[1:]
        labels[b, :m] = -100
    return torch.from_numpy(inputs).to(device), torch.from_numpy(labels).to(device)


def build_model(args):
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(
        vocab_size=T.N_VOCAB, num_mel_bins=80, d_model=args.d_model,
        encoder_layers=args.enc_layers, decoder_layers=args.dec_layers,
        encoder_attention_heads=args.heads, decoder_attention_heads=args.heads,
        encoder_ffn_dim=4 * args.d_model, decoder_ffn_dim=4 * args.d_model,
        max_source_positions=1500, max_target_positions=448,
        decoder_start_token_id=T.SOT, bos_token_id=T.EOT, eos_token_id=T.EOT, pad_token_id=T.EOT,
        scale_embedding=False, tie_word_embeddings=True, activation_function="gelu",
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, use_cache=True,
        begin_suppress_tokens=None, suppress_tokens=None)
    try:
        model = WhisperForConditionalGeneration(cfg)
    except TypeError:
        model = WhisperForConditionalGeneration._from_config(cfg)
    try:  # memory-efficient attention for training; evaluation reloads with "eager"
        model.set_attn_implementation("sdpa")
    except Exception:
        pass
    return model


def _drain(stream, store, meta, tok, block, used_lines):
    """Moves finished synthesis jobs into the store and notes the corpus lines they
    came from (the data position); returns False once all are in."""
    while True:
        try:
            part = stream.next(timeout=30 if block else 0.0)
        except multiprocessing.TimeoutError:
            return True
        except StopIteration:
            return False
        for index, clip, _words in part:
            m = meta[index]
            store.add(clip, m["lang"], m["text"], tok.encode(" " + m["text"]))
            if m.get("line") is not None:
                used_lines.setdefault(m["lang"], []).append(m["line"])
        block = False


def lr_factor(step, warmup, resumed_at=None, cooldown_frac=None, rewarm=50, cooldown_after=0.0,
              cooldown_scale=1.0):
    """Warm-up, stable, decay: the peak LR holds across runs (training has no planned
    end); a run with --cooldown decays it linearly to 2 % over its own time budget
    (cooldown_frac: the share of that budget used). A resumed run re-warms over `rewarm`
    steps because its Adam first moments start from zero.

    Both halves in one run (--cooldown-after, --cooldown-lr): the LR holds for the first
    `cooldown_after` share of the budget, then drops to `cooldown_scale` times the peak
    (--cooldown-lr / --lr) and decays linearly from there to 2 % of that over the rest.
    With the defaults (0 and 1) this is the plain decay above."""
    warm = min(1.0, (step + 1) / warmup)
    if resumed_at:
        warm = min(warm, (step - resumed_at + 1) / rewarm)
    if cooldown_frac is None or cooldown_frac < cooldown_after:
        return warm
    share = (cooldown_frac - cooldown_after) / (1.0 - cooldown_after)
    return warm * cooldown_scale * max(0.02, 1.0 - min(1.0, share))


def cooldown_scale(args):
    """--cooldown-lr as a multiple of --lr (1 without it: the decay starts at the peak)."""
    lr = getattr(args, "cooldown_lr", None)
    return 1.0 if lr is None else lr / args.lr


def make_optimizer(model, args, device):
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.98), eps=1e-6,
                             **({"fused": True} if device.type == "cuda" else {}))


def load_model(args, device, resume_dir, log):
    """A new model, or the one saved in resume_dir (fp16 on disk, trained on in fp32)."""
    if not resume_dir:
        return build_model(args).to(device)
    from transformers import WhisperForConditionalGeneration
    try:
        model = WhisperForConditionalGeneration.from_pretrained(resume_dir, dtype=torch.float32)
    except TypeError:
        model = WhisperForConditionalGeneration.from_pretrained(resume_dir, torch_dtype=torch.float32)
    cfg = model.config
    shape = (cfg.d_model, cfg.encoder_attention_heads, cfg.encoder_layers, cfg.decoder_layers)
    if shape != (args.d_model, args.heads, args.enc_layers, args.dec_layers):
        raise ValueError(f"[train] the saved model has shape {shape}; run with the same --d-model/--heads/"
                         "--enc-layers/--dec-layers (train.py takes them from state.json)")
    try:
        model.set_attn_implementation("sdpa")
    except Exception:
        pass
    log(f"resumed weights from {resume_dir}")
    return model.to(device)


MOMENTS_FILE = "adam-moments.pt"


def save_moments(opt, model, path):
    """Adam's second moments in a compact form: for a matrix only its row and column means
    (Adafactor's factorisation, a few hundred kB instead of 90 MB); first moments are not
    kept (they follow the gradient within ~10 steps)."""
    names = {id(p): n for n, p in model.named_parameters()}
    packed = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if not st or "exp_avg_sq" not in st:
                continue
            v = st["exp_avg_sq"].float()
            packed[names[id(p)]] = ((v.mean(dim=1).cpu(), v.mean(dim=0).cpu()) if v.dim() == 2 else v.cpu())
            step = float(st["step"])
    torch.save({"moments": packed, "step": step if packed else 0.0}, path)


def restore_moments(opt, model, path, log):
    """Rebuilds Adam's state from save_moments(): v[i, j] ~ row[i] * col[j] / mean(row)."""
    saved = torch.load(path, map_location="cpu")
    params = dict(model.named_parameters())
    state, restored = {}, 0
    index = 0
    for group in opt.param_groups:
        for p in group["params"]:
            name = next(n for n, q in params.items() if q is p)
            m = saved["moments"].get(name)
            if m is not None:
                if isinstance(m, tuple):
                    row, col = m
                    v = torch.outer(row, col) / row.mean().clamp(min=1e-30)
                else:
                    v = m
                if v.shape == p.shape:
                    state[index] = {"step": torch.tensor(saved["step"], dtype=torch.float32),
                                    "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                                    "exp_avg_sq": v.to(p.device, p.dtype)}
                    restored += 1
            index += 1
    sd = opt.state_dict()
    sd["state"] = state
    opt.load_state_dict(sd)
    log(f"restored Adam second moments of {restored} tensors (step {saved['step']:.0f})")


def resume_moments(opt, model, resume_dir, first_step, log):
    """Restores the saved second moments when the state has them; a state made from a
    shipped checkpoint (runstate.py from-model) has none: AdamW then starts fresh, and the
    LR re-warms over lr_factor's 50 steps as on every resume (or warms up over
    --warmup-steps at step 0). Returns "restored", "fresh" or "new"."""
    if not resume_dir:
        return "new"
    path = os.path.join(resume_dir, MOMENTS_FILE)
    if os.path.exists(path):
        restore_moments(opt, model, path, log)
        return "restored"
    log(f"no {MOMENTS_FILE} in {resume_dir} (a state made from a checkpoint): Adam's moments start fresh, "
        f"the LR re-warms from step {first_step}")
    return "fresh"


def train(args, stream, meta, log, deadline, state, resume_dir=None):
    """Trains until `deadline` (time.time()); returns (model, optimizer, info). `state`
    (runstate) gives the global step the LR schedule continues from; info['used_lines']
    lists the corpus lines per language the run synthesized (the new data position)."""
    import time
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(args.seed + state["step"])
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    tok = T.Tokenizer()
    import transformers
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    log(f"device {device} ({gpu}), torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizer {tok.backend}")
    if device.type == "cuda" and tok.backend != "tiktoken":
        raise RuntimeError("[train] tiktoken is missing: the approximate tokenizer is for --dry-run only")
    store = ClipStore(device, capacity_samples=min(len(meta), 200000) * 5 * RATE)
    model = load_model(args, device, resume_dir, log)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params / 1e6:.2f} M parameters (embedding {T.N_VOCAB * args.d_model / 1e6:.2f} M), "
        f"fp16 size {2 * n_params / 1e6:.1f} MB")
    opt = make_optimizer(model, args, device)
    first_step = state["step"]
    resume_moments(opt, model, resume_dir, first_step, log)
    melspec = LogMel(device)
    rng = random.Random(f"{args.seed}-{first_step}")
    langs = sorted({m["lang"] for m in meta})
    # English is the language furthest from its target: a run may show it more windows.
    lang_weights = parse_lang_weights(getattr(args, "lang_weights", ""), langs)
    more, used_lines = True, {}
    while more and min(len(store.table.by_lang.get(l, [])) for l in langs) < min(MIN_CLIPS_PER_LANG, len(meta) // 4):
        more = _drain(stream, store, meta, tok, True, used_lines)
    t_start = time.time()
    log(f"training starts at step {first_step} with {len(store.length)} clips; {deadline - t_start:.0f} s left")
    model.train()
    step, losses, nan_steps, windows, history = first_step, [], 0, 0, []
    parts = 1  # passes per step; doubled when a batch does not fit the GPU
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    while time.time() < deadline:
        if more:
            more = _drain(stream, store, meta, tok, False, used_lines)
        # Fewer single-utterance windows than run 3 (22 %): open vocabulary needs text per window.
        plans = [layout.plan_window(rng, store.table, rng.choices(langs, lang_weights)[0], layout.draw_kind(rng, 0.08, 0.12),
                                    late_start=args.late_start, long_gap=args.long_gap)
                 for _ in range(args.batch)]
        with torch.no_grad():
            feats = melspec(gather_audio(store, plans, rng, device))
        inputs, labels = build_targets(plans, store.table, rng, device)
        cooldown = (time.time() - t_start) / max(1.0, deadline - t_start) if args.cooldown else None
        for g in opt.param_groups:
            g["lr"] = args.lr * lr_factor(step, args.warmup_steps, first_step or None, cooldown,
                                          cooldown_after=getattr(args, "cooldown_after", 0.0),
                                          cooldown_scale=cooldown_scale(args))
        loss, parts = backward_fitting(model, feats, inputs, labels, autocast, opt, parts, log)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        windows += len(plans)
        # Reading the loss waits for the GPU: only every 10th step, so the CPU can prepare
        # the next batch while the GPU works.
        value = loss.item() if step % 10 == 0 else None
        if value is not None and not math.isfinite(value):
            nan_steps += 1
        losses.append(value)
        if step % 50 == 0 or step == first_step + 1:
            recent = [x for x in losses[-50:] if x is not None]
            mean = sum(recent) / len(recent) if recent else loss.item()
            elapsed = time.time() - t_start
            history.append({"step": step, "s": round(elapsed, 1), "loss": round(mean, 4), "clips": len(store.length)})
            log(f"step {step:6d} loss {mean:.4f} lr {opt.param_groups[0]['lr']:.2e} clips {len(store.length)} "
                f"{windows / elapsed:.0f} windows/s")
    model.eval()
    info = {"first_step": first_step, "steps": step, "windows_seen": windows,
            "train_seconds": round(time.time() - t_start, 1), "clips_used": len(store.length),
            "audio_hours": round(store.used / RATE / 3600, 2), "nan_steps": nan_steps, "parameters": n_params,
            "passes_per_step": parts, "loss_history": history, "final_loss": history[-1]["loss"] if history else None,
            "used_lines": used_lines}
    log(f"training done: steps {first_step}..{step}, {windows} windows, {info['audio_hours']} h of clips")
    return model, opt, info


def target_loss(model, feats, inputs, labels, autocast):
    """The mean cross-entropy over the taught positions (labels != -100), the same number as
    the cross-entropy of the whole logits with ignore_index=-100. Only the taught positions'
    hidden states go through the 51 865-token output layer: the padding of a batch's shorter
    targets and the untaught prompt tokens never form logits, and neither does their fp32
    copy (the largest tensors of a step: at batch 128 they did not fit an H100's 80 GB).
    `model` is transformers' WhisperForConditionalGeneration: its decoder stack
    (`model.model`) and output layer (`model.proj_out`) are called apart."""
    taught = labels != -100
    with autocast:
        hidden = model.model(input_features=feats, decoder_input_ids=inputs, use_cache=False).last_hidden_state
        logits = model.proj_out(hidden[taught])
    return F.cross_entropy(logits.float(), labels[taught])


def backward_fitting(model, feats, inputs, labels, autocast, opt, parts, log, max_parts=8):
    """backward_in_parts with fresh gradients, doubling the passes while the GPU runs out of
    memory (up to max_parts): the same batch and gradient, since an H100's 80 GB may not hold
    a batch an H200's 141 GB does and a smaller batch would change the recipe. Returns
    (loss, the passes it took), which later steps start from."""
    while True:
        opt.zero_grad(set_to_none=True)
        try:
            return backward_in_parts(model, feats, inputs, labels, autocast, parts), parts
        except torch.cuda.OutOfMemoryError:
            if parts >= max_parts:
                raise
            parts *= 2
            log(f"out of GPU memory at batch {feats.shape[0]}: {parts} passes a step from now on")
            if torch.cuda.is_available():
                torch.cuda.empty_cache()


def backward_in_parts(model, feats, inputs, labels, autocast, parts):
    """Backward of the batch's target_loss in `parts` passes over consecutive windows, each
    part's mean weighted by its share of the taught positions: the gradient of one pass,
    with a part's activations in memory at a time. Returns the batch's loss (detached)."""
    if parts == 1:
        loss = target_loss(model, feats, inputs, labels, autocast)
        loss.backward()
        return loss.detach()
    size = -(-feats.shape[0] // parts)
    counts = [int(c.sum()) for c in (labels != -100).reshape(labels.shape[0], -1).sum(1).split(size)]
    total, loss = sum(counts), feats.new_zeros(())
    for i, count in zip(range(0, feats.shape[0], size), counts):
        if count == 0:  # nothing taught in these windows: no loss, no gradient
            continue
        part = target_loss(model, feats[i:i + size], inputs[i:i + size], labels[i:i + size], autocast)
        (part * (count / total)).backward()
        loss = loss + part.detach() * (count / total)
    return loss


def generation_config(alignment_heads, n_dec_layers, n_heads):
    """Whisper's generation settings for the 51 865-token multilingual vocabulary."""
    if not alignment_heads:  # until measured: every head of the upper half of the decoder
        alignment_heads = [[l, h] for l in range(n_dec_layers // 2, n_dec_layers) for h in range(n_heads)]
    return {
        "decoder_start_token_id": T.SOT, "bos_token_id": T.EOT, "eos_token_id": T.EOT, "pad_token_id": T.EOT,
        "max_length": 448, "begin_suppress_tokens": [220, T.EOT], "suppress_tokens": suppress_tokens(),
        "no_timestamps_token_id": T.NOTIMESTAMPS, "prev_sot_token_id": T.STARTOFPREV,
        "max_initial_timestamp_index": 50, "is_multilingual": True, "return_timestamps": False,
        "lang_to_id": {f"<|{c}|>": T.lang_token(c) for c in T.LANGUAGES},
        "task_to_id": {"transcribe": T.TRANSCRIBE, "translate": T.TRANSLATE},
        "alignment_heads": alignment_heads, "median_filter_width": 7,
    }


def suppress_tokens():
    """Tokens Whisper never samples: lone symbols and brackets that mark non-speech
    annotations (OpenAI's rule: each symbol alone, and with a leading space when that is
    one token; plus " -" and " '")."""
    tok = T.Tokenizer()
    symbols = list('"#()*+/:;<=>@[\\]^_`{|}~「」『』')
    symbols += "<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split()
    miscellaneous = set("♩♪♫♬♭♮♯")
    out = {tok.encode(" -")[0], tok.encode(" '")[0]}
    for s in symbols + sorted(miscellaneous):
        for ids in (tok.encode(s), tok.encode(" " + s)):
            if len(ids) == 1 or s in miscellaneous:
                out.add(ids[0])
    return sorted(out)


def export(model, out_dir, alignment_heads, log):
    """fp16 safetensors + config.json + generation_config.json (Hugging Face layout)."""
    import copy
    os.makedirs(out_dir, exist_ok=True)
    half = copy.deepcopy(model).to("cpu", torch.float16)
    try:
        half.save_pretrained(out_dir, safe_serialization=True)
    except TypeError:
        half.save_pretrained(out_dir)
    write_generation_config(out_dir, alignment_heads, model.config.decoder_layers, model.config.decoder_attention_heads)
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    log(f"exported to {out_dir}: model.safetensors {size / 2**20:.2f} MiB; files {sorted(os.listdir(out_dir))}")
    return size


def write_generation_config(out_dir, alignment_heads, n_dec_layers, n_heads):
    cfg = generation_config(alignment_heads, n_dec_layers, n_heads)
    path = os.path.join(out_dir, "generation_config.json")
    existing = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = json.load(f)
    existing.update(cfg)
    # Written by save_pretrained; when true, generate() rebuilds the settings from config.json
    # and drops the Whisper fields above.
    existing.pop("_from_model_config", None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(existing, f, indent=2, sort_keys=True)
