"""train.py --dry-run: every data step of a training run without torch, on a few hundred
clips, so the pipeline can be checked on the development machine (Debian's python3 with
numpy; espeak-ng from the same .debs remake.sh unpacks):

  corpus slice from the saved position -> synthesis with effects and word timings ->
  30 s window plans and token targets (checked: within 448 tokens, text round-trips) ->
  example training windows and every kind of evaluation item as WAV + JSON ->
  state save in parts, unpack, data position advance.

Writes into OUT/dry-run/: report.json, windows/*.wav + targets.json, eval/*.wav +
references.json, and the state parts (state.tar.part-*).
"""
import json
import os
import random
import time

import numpy as np

import augment
import evalsets
import layout
import runstate
import synth
import tokens as T


def _targets_check(table, tok, rng, n_windows=48):
    langs = sorted(table.by_lang)
    stats = {"windows": 0, "max_tokens": 0, "kinds": {}, "utterances": 0, "bad_round_trips": 0}
    examples = []
    for i in range(n_windows):
        lang = langs[i % len(langs)]
        plan = layout.plan_window(rng, table, lang, layout.draw_kind(rng))
        ids, masked = layout.targets(plan, table, timestamps=rng.random() < 0.75)
        if len(ids) > 448:
            raise AssertionError(f"[dry-run] target of {len(ids)} tokens > 448")
        text = tok.decode([t for t in ids if t < T.EOT]).strip()
        want = " ".join(table.text[c] for c, _ in plan["placements"] + ([plan["cut"]] if plan["cut"] else []))
        if plan["kind"] != "silence" and plan["cut"] is None and text != want:
            stats["bad_round_trips"] += 1
        stats["windows"] += 1
        stats["max_tokens"] = max(stats["max_tokens"], len(ids))
        stats["kinds"][plan["kind"]] = stats["kinds"].get(plan["kind"], 0) + 1
        stats["utterances"] += len(plan["placements"])
        examples.append({"plan": plan, "ids": ids, "sot_masked": masked, "text": text})
    return stats, examples


def _mix(plan, table, audio, rng):
    """A training window mixed on the CPU the way trainer.gather_audio does on the GPU."""
    x = np.zeros(int(layout.WINDOW_S * layout.RATE), np.float32)
    placed = plan["placements"] + ([plan["cut"]] if plan["cut"] else [])
    for clip, start in placed:
        s = int(round(start * layout.RATE))
        piece = audio[clip][: len(x) - s].astype(np.float32) / 16384.0 * rng.uniform(0.25, 1.6) * 0.5
        x[s: s + len(piece)] += piece
    x += np.random.default_rng(rng.randrange(1 << 30)).standard_normal(len(x)).astype(np.float32) * 3e-3
    return np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)


def _state_round_trip(args, state, used_lines, out):
    state_dir = os.path.join(out, "state")
    os.makedirs(state_dir, exist_ok=True)
    with open(os.path.join(state_dir, "model.safetensors"), "wb") as f:  # stands in for 46 MB of weights
        f.write(np.random.default_rng(0).bytes(3 * 2**20 + 12345))
    runstate.advance(state, used_lines)
    runstate.save_json(os.path.join(state_dir, "state.json"), state)
    parts = runstate.pack_state(state_dir, out, part_bytes=2**20)
    back = runstate.unpack_state(out, os.path.join(out, "state-unpacked"))
    if back != json.loads(json.dumps(state)):
        raise AssertionError("[dry-run] state.json changed in the round trip")
    return {"parts": len(parts), "largest_part": max(os.path.getsize(p) for p in parts), "position": state["position"]}


def run(args, log):
    import train  # the same text planning as a real run
    t0 = time.time()
    out = os.path.join(args.out, "dry-run")
    os.makedirs(out, exist_ok=True)
    state = train.load_state(args)
    texts, lines, eval_texts = train.plan_texts(args, state)
    eval_jobs, eval_meta = synth.plan_jobs(eval_texts, args.seed, held_out=True, job_size=8, effect_shares={})
    train_jobs, train_meta = synth.plan_jobs(texts, args.seed, held_out=False, job_size=8, label=f"-{state['step']}",
                                             vtlp_share=getattr(args, "vtlp_share", None),
                                             shaped_share=getattr(args, "shaped_voice_share", None))
    train.attach_lines(train_meta, texts, lines)
    pool = train.start_pool(args.workers)
    try:
        t = time.time()
        eval_clips = [c for part in pool.map(synth.synth_job, eval_jobs) for c in part]
        train_clips = [c for part in pool.map(synth.synth_job, train_jobs) for c in part]
        synth_s = time.time() - t
    finally:
        pool.terminate()
    n = len(eval_clips) + len(train_clips)
    log(f"synthesized {n} clips in {synth_s:.1f} s ({synth_s / max(1, n) * 1000 * args.workers:.0f} ms per clip "
        f"per worker)")
    tok = T.Tokenizer()
    table, audio, used_lines = layout.ClipTable(), [], {}
    for index, clip, _ in train_clips:
        m = train_meta[index]
        if len(clip) >= layout.RATE // 5:
            table.add(m["lang"], len(clip) / layout.RATE, m["text"], tok.encode(" " + m["text"]))
            audio.append(clip)
        if m["line"] is not None:
            used_lines.setdefault(m["lang"], []).append(m["line"])
    rng = random.Random(args.seed)
    stats, examples = _targets_check(table, tok, rng)
    wdir = os.path.join(out, "windows")
    os.makedirs(wdir, exist_ok=True)
    for k, ex in enumerate(examples[:4]):
        with open(os.path.join(wdir, f"train-{k}.wav"), "wb") as f:
            f.write(evalsets.wav_bytes(_mix(ex["plan"], table, audio, rng)))
    with open(os.path.join(wdir, "targets.json"), "w", encoding="utf-8") as f:
        json.dump(examples[:4], f, ensure_ascii=False, indent=1)
    held = evalsets.HeldOut(eval_clips, eval_meta, tok)
    items = evalsets.windows(held, counts=(2, 2, 6))
    items += evalsets.degraded([it for it in items if it["kind"] != "silence"][:5])
    items.append(evalsets.longform(held, "en", 60, 5, "en-long-0"))
    evalsets.write_wavs(items, os.path.join(out, "eval"))
    with open(os.path.join(out, "eval", "references.json"), "w", encoding="utf-8") as f:
        json.dump([{k: it[k] for k in ("name", "lang", "kind", "condition", "text", "segments", "words", "noise")}
                   | {"seconds": round(len(it["pcm"]) / layout.RATE, 2)} for it in items], f, ensure_ascii=False,
                  indent=1)
    effects = {}
    for m in train_meta:
        for e in m["effects"] or ["none"]:
            effects[e] = effects.get(e, 0) + 1
    vtlp_seeds = [item[7] for job in train_jobs for item in job if "vtlp" in item[6]]
    alphas = sorted(round(augment.vtlp_params(s)[0], 3) for s in vtlp_seeds)
    vtlp = {"clips": len(vtlp_seeds), "share": round(len(vtlp_seeds) / max(1, len(train_meta)), 3),
            "held_out_clips": sum(1 for m in eval_meta if "vtlp" in m["effects"]),
            "alpha_min_median_max": [alphas[0], alphas[len(alphas) // 2], alphas[-1]] if alphas else None,
            "alpha_first": [round(augment.vtlp_params(s)[0], 3) for s in vtlp_seeds[:5]]}
    shaped = [m["voice"] for m in train_meta if "+hark-shape-" in m["voice"]]
    shaped_voices = {"clips": len(shaped), "share": round(len(shaped) / max(1, len(train_meta)), 3),
                     "held_out_clips": sum(1 for m in eval_meta if "+hark-shape-" in m["voice"]), "first": shaped[:3]}
    with_words = sum(1 for _, _, w in eval_clips + train_clips if w is not None)
    report = {"clips": n, "synth_seconds": round(synth_s, 1), "clips_with_word_timings": with_words,
              "voices": len({m["voice"] for m in train_meta}), "effects_planned": effects, "vtlp": vtlp,
              "shaped_voices": shaped_voices,
              "tokenizer": tok.backend, "targets": stats, "eval_items": len(items),
              "longform_seconds": round(len(items[-1]["pcm"]) / layout.RATE, 1),
              "state": _state_round_trip(args, state, used_lines, out), "seconds": round(time.time() - t0, 1)}
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    log(f"dry run ok: {json.dumps(report)}")
    if stats["bad_round_trips"]:
        raise AssertionError(f"[dry-run] {stats['bad_round_trips']} targets do not decode to their text")
    return report
