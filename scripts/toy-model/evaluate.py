"""Held-out evaluation of the exported toy checkpoint, decoded by transformers' greedy
generate(): WER per language, language identification, no-speech probability on
silence and noise-only windows; with --eval full also segment-boundary error, the
alignment heads (decoder cross-attention heads whose attention stays inside the
utterance being written), evaluate_full.py's degraded-channel, long-form, word-timestamp
and empty-transcript measures, and a small subset of the held-out windows as WAV files
with references for the repository. --eval quick (every resumed run) measures plain WER,
language identification and no-speech on fewer windows."""
import io
import json
import os
import tarfile
import time

import numpy as np
import torch

import layout
import tokens as T
import trainer
import evalsets
import wer as W

RATE = layout.RATE
SUBSET_SINGLE, SUBSET_MULTI = 2, 1
MAX_NEW_TOKENS = 220


def parse_output(ids, tok):
    """(text, segments) from generated ids: timestamp pairs bracket segment text."""
    segments, start, text_ids, all_text = [], None, [], []
    for t in ids:
        if t >= T.TIMESTAMP0:
            sec = round((t - T.TIMESTAMP0) * 0.02, 2)
            if start is not None and text_ids:
                segments.append({"start": start, "end": sec, "text": tok.decode(text_ids).strip()})
                text_ids, start = [], None
            else:
                start = sec
        elif t < T.EOT:
            text_ids.append(t)
            all_text.append(t)
    if text_ids:
        segments.append({"start": start, "end": None, "text": tok.decode(text_ids).strip()})
    return tok.decode(all_text).strip(), segments


def boundary_errors(ref, hyp):
    """Absolute start/end errors of reference segments (None where nothing matches):
    paired in order when the counts agree, else each to the nearest hypothesis start."""
    timed = [h for h in hyp if h["start"] is not None]
    errs = []
    for i, r in enumerate(ref):
        if len(hyp) == len(ref):
            h = hyp[i]
        else:
            h = min(timed, key=lambda s: abs(s["start"] - r["start"]), default=None)
        if h is None or h["start"] is None:
            errs += [None, None]
            continue
        errs.append(abs(h["start"] - r["start"]))
        errs.append(abs(h["end"] - r["end"]) if h["end"] is not None else None)
    return errs


def _load(export_dir, device, eager=False):
    from transformers import WhisperForConditionalGeneration
    kwargs = {"attn_implementation": "eager"} if eager else {}
    try:
        model = WhisperForConditionalGeneration.from_pretrained(export_dir, dtype=torch.float32, **kwargs)
    except TypeError:
        model = WhisperForConditionalGeneration.from_pretrained(export_dir, torch_dtype=torch.float32, **kwargs)
    from transformers import GenerationConfig
    with open(os.path.join(export_dir, "generation_config.json"), encoding="utf-8") as f:
        model.generation_config = GenerationConfig(**json.load(f))
    return model.to(device).eval()


def features(items, device, log):
    """Reference features from WhisperFeatureExtractor; compared with the training mel."""
    from transformers import WhisperFeatureExtractor
    from mel import LogMel, N_SAMPLES
    fe = WhisperFeatureExtractor(feature_size=80)
    audio = [it["pcm"].astype(np.float32) / 32768.0 for it in items]
    feats = fe(audio, sampling_rate=RATE, return_tensors="np").input_features.astype(np.float32)
    padded = np.zeros((min(8, len(audio)), N_SAMPLES), np.float32)
    for i in range(len(padded)):
        padded[i, : len(audio[i])] = audio[i]
    ours = LogMel(device)(torch.from_numpy(padded).to(device)).cpu().numpy()
    diff = float(np.abs(ours - feats[: len(padded)]).max())
    log(f"features: {feats.shape}; training mel vs WhisperFeatureExtractor max |diff| {diff:.2e}")
    return torch.from_numpy(feats).to(device), diff


def first_step(model, feats):
    """Language-token argmax and no-speech probability from the logits at the SOT step."""
    from transformers.modeling_outputs import BaseModelOutput
    lang_ids = torch.tensor([T.lang_token(c) for c in T.LANGUAGES], device=feats.device)
    codes, nospeech = [], []
    with torch.no_grad():
        for i in range(0, len(feats), 32):
            enc = model.model.encoder(feats[i:i + 32]).last_hidden_state
            sot = torch.full((len(enc), 1), T.SOT, device=feats.device)
            logits = model(encoder_outputs=BaseModelOutput(last_hidden_state=enc), decoder_input_ids=sot).logits[:, 0]
            codes += [T.LANGUAGES[j] for j in logits[:, lang_ids].argmax(-1).tolist()]
            nospeech += logits.float().softmax(-1)[:, T.NOSPEECH].tolist()
    return codes, nospeech


def decode(model, feats, lang, timestamps):
    """Greedy transformers generate(); returns lists of generated ids per window."""
    out = model.generate(input_features=feats, generation_config=model.generation_config, language=lang, task="transcribe", return_timestamps=timestamps,
                         do_sample=False, num_beams=1, max_new_tokens=MAX_NEW_TOKENS)
    seqs = out.sequences if hasattr(out, "sequences") else out["sequences"] if isinstance(out, dict) else out
    return [_until_eot([int(t) for t in row]) for row in seqs.tolist()]


def _until_eot(ids):
    """Ids up to and including the first EOT (batched outputs are padded with EOT)."""
    return ids[: ids.index(T.EOT) + 1] if T.EOT in ids else ids


def greedy_fallback(model, feats, lang, timestamps):
    """Plain argmax decoding, used only if generate() fails (recorded in the results)."""
    prompt = [T.SOT, T.lang_token(lang), T.TRANSCRIBE] + ([] if timestamps else [T.NOTIMESTAMPS])
    ids = torch.tensor([prompt] * len(feats), device=feats.device)
    done = torch.zeros(len(feats), dtype=torch.bool, device=feats.device)
    with torch.no_grad():
        enc = model.model.encoder(feats).last_hidden_state
        from transformers.modeling_outputs import BaseModelOutput
        for _ in range(MAX_NEW_TOKENS):
            logits = model(encoder_outputs=BaseModelOutput(last_hidden_state=enc), decoder_input_ids=ids).logits[:, -1]
            nxt = torch.where(done, T.EOT, logits.argmax(-1))
            ids = torch.cat([ids, nxt[:, None]], 1)
            done |= nxt == T.EOT
            if bool(done.all()):
                break
    return [_until_eot(row) for row in ids.tolist()]


def alignment_scores(export_dir, items, table, device, log):
    """Mean cross-attention mass each decoder head puts inside the current utterance's
    span (+-0.1 s), teacher-forced on held-out multi-utterance windows."""
    from transformers import WhisperFeatureExtractor
    model = _load(export_dir, device, eager=True)
    multi = [it for it in items if it["kind"] == "multi"][:40]
    fe = WhisperFeatureExtractor(feature_size=80)
    feats = torch.from_numpy(fe([it["pcm"].astype(np.float32) / 32768.0 for it in multi], sampling_rate=RATE,
                                return_tensors="np").input_features.astype(np.float32)).to(device)
    cfg = model.config
    score = torch.zeros(cfg.decoder_layers, cfg.decoder_attention_heads, device=device)
    count = 0
    for it, f in zip(multi, feats):
        ids, _ = layout.targets(it["plan"], table, timestamps=True)
        spans, inside, current, k = [], False, None, 0  # per input position: its utterance or None
        for t in ids[:-1]:
            if t >= T.TIMESTAMP0:
                inside = not inside
                current = it["segments"][k] if inside and k < len(it["segments"]) else None
                k += inside
                spans.append(None)
            else:
                spans.append(current if inside and t < T.EOT else None)
        with torch.no_grad():
            out = model(input_features=f[None], decoder_input_ids=torch.tensor([ids[:-1]], device=device),
                        output_attentions=True)
        for pos, seg in enumerate(spans):
            if seg is None:
                continue
            a, b = int(max(0.0, seg["start"] - 0.1) / 0.02), int(min(30.0, seg["end"] + 0.1) / 0.02) + 1
            for layer, att in enumerate(out.cross_attentions):
                score[layer] += att[0, :, pos, a:b].sum(-1)
            count += 1
    score = (score / max(1, count)).cpu()
    best = float(score.max())
    heads = [[l, h] for l in range(score.shape[0]) for h in range(score.shape[1]) if score[l, h] >= 0.85 * best]
    heads = sorted(heads, key=lambda lh: -float(score[lh[0], lh[1]]))[:8]
    log(f"alignment scores per (layer, head):\n{np.round(score.numpy(), 3)}\n chosen {heads} from {count} tokens")
    return heads, score.numpy().round(4).tolist()


def run(args, export_dir, eval_clips, eval_meta, results, log, deadline):
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    tok = T.Tokenizer()
    full = args.eval == "full"
    held = evalsets.HeldOut(eval_clips, eval_meta, tok)
    items, table = evalsets.windows(held, counts=(10, 20, 24) if full else (6, 6, 16)), held.table
    log(f"held-out windows: {len(items)} ({args.eval})")
    feats, mel_diff = features(items, device, log)
    model = _load(export_dir, device)
    codes, nospeech = first_step(model, feats)
    metrics = {"mel_max_abs_diff_vs_feature_extractor": mel_diff}
    details = []
    for it, c, p in zip(items, codes, nospeech):
        details.append({"name": it["name"], "lang": it["lang"], "kind": it["kind"], "reference": it["text"],
                        "segments": it["segments"], "detected_lang": c, "no_speech_prob": round(p, 4)})
    speech = [d for d in details if d["kind"] != "silence"]
    silence = [d for d in details if d["kind"] == "silence"]
    metrics["language_id_accuracy"] = sum(d["detected_lang"] == d["lang"] for d in speech) / len(speech)
    metrics["no_speech_prob_silence"] = {"min": min(d["no_speech_prob"] for d in silence),
                                         "mean": float(np.mean([d["no_speech_prob"] for d in silence])),
                                         "share_above_0.6": sum(d["no_speech_prob"] > 0.6 for d in silence) / len(silence)}
    metrics["no_speech_prob_speech_max"] = max(d["no_speech_prob"] for d in speech)
    log(f"LID {metrics['language_id_accuracy']:.3f}; no-speech on silence {metrics['no_speech_prob_silence']}")
    results["metrics"] = metrics
    for timestamps in ((True, False) if full else (False,)):
        key = "timestamps" if timestamps else "plain"
        per_lang, boundary = {}, []
        for lang in sorted({d["lang"] for d in speech}):
            idx = [i for i, d in enumerate(details) if d["lang"] == lang and d["kind"] != "silence"]
            try:
                outs, method = decode(model, feats[idx], lang, timestamps), "transformers generate (greedy)"
            except Exception as e:
                log(f"generate failed ({e!r}); plain greedy fallback")
                outs, method = greedy_fallback(model, feats[idx], lang, timestamps), "own greedy (generate failed)"
            if timestamps and not any(t >= T.TIMESTAMP0 for ids in outs for t in ids):
                log("generate returned no timestamp tokens; boundaries from plain greedy decoding")
                seg_outs, metrics["boundary_method"] = greedy_fallback(model, feats[idx], lang, True), "own greedy"
            else:
                seg_outs = outs
            refs, hyps = [], []
            for i, ids, seg_ids in zip(idx, outs, seg_outs):
                text, segs = parse_output(ids, tok)
                details[i][f"hyp_{key}"] = text
                details[i][f"ids_{key}"] = ids
                if timestamps:
                    segs = parse_output(seg_ids, tok)[1]
                    details[i]["hyp_segments"] = segs
                    boundary += boundary_errors(details[i]["segments"], segs)
                refs.append(details[i]["reference"])
                hyps.append(text)
            rate, errors, words = W.corpus_wer(refs, hyps)
            per_lang[lang] = {"wer": round(rate, 4), "errors": errors, "words": words, "windows": len(idx), "method": method}
            log(f"WER {key} {lang}: {rate * 100:.2f} % ({errors}/{words})")
        metrics[f"wer_{key}"] = per_lang
        if timestamps:
            known = [e for e in boundary if e is not None]
            metrics["segment_boundaries"] = {
                "count": len(boundary), "unmatched": len(boundary) - len(known),
                "mean_abs_error_s": round(float(np.mean(known)), 4) if known else None,
                "share_within_0.3s": round(sum(e <= 0.3 for e in known) / max(1, len(boundary)), 4)}
            log(f"boundaries {metrics['segment_boundaries']}")
    if full and time.time() < deadline - 10:
        try:
            heads, scores = alignment_scores(export_dir, items, table, device, log)
            trainer.write_generation_config(export_dir, heads, model.config.decoder_layers,
                                            model.config.decoder_attention_heads)
            metrics["alignment_heads"], metrics["alignment_scores"] = heads, scores
        except Exception as e:
            log(f"alignment heads not measured ({e!r}); keeping the upper-half default")
    if full:
        import evaluate_full
        evaluate_full.run(args, export_dir, held, items, metrics, log, deadline)
        write_subset(args.out, items, details, log)
    with open(os.path.join(args.out, "eval-details.json"), "w", encoding="utf-8") as f:
        json.dump(details, f, ensure_ascii=False)
    results["stages"]["evaluate"] = "ok"


def write_subset(out, items, details, log):
    """toy-eval.tar: a few held-out windows (WAV, 16 kHz mono PCM16) + references.json."""
    picked = []
    for lang in sorted({it["lang"] for it in items if it["lang"]}):
        singles = sorted((i for i, it in enumerate(items) if it["lang"] == lang and it["kind"] == "single"),
                         key=lambda i: len(items[i]["pcm"]))
        multis = sorted((i for i, it in enumerate(items) if it["lang"] == lang and it["kind"] == "multi"
                         and len(it["segments"]) >= 2), key=lambda i: len(items[i]["pcm"]))
        picked += singles[len(singles) // 3: len(singles) // 3 + SUBSET_SINGLE] + multis[:SUBSET_MULTI]
    silences = [i for i, it in enumerate(items) if it["kind"] == "silence"]
    picked += sorted(silences, key=lambda i: len(items[i]["pcm"]))[:1]
    refs = []
    with tarfile.open(os.path.join(out, "toy-eval.tar"), "w") as tar:
        for i in picked:
            it, d = items[i], details[i]
            data = evalsets.wav_bytes(it["pcm"])
            info = tarfile.TarInfo(f"{it['name']}.wav")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            refs.append({k: d.get(k) for k in ("name", "lang", "kind", "reference", "segments", "detected_lang",
                                               "no_speech_prob", "hyp_timestamps", "hyp_segments", "ids_timestamps",
                                               "hyp_plain", "ids_plain")} | {"file": f"{it['name']}.wav",
                                                                           "seconds": round(len(it["pcm"]) / RATE, 3)})
        data = json.dumps(refs, indent=1, ensure_ascii=False).encode("utf-8")
        info = tarfile.TarInfo("references.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    log(f"subset: {len(picked)} windows, {sum(len(items[i]['pcm']) for i in picked) / RATE:.1f} s of audio")
