"""Trains hark's toy speech model on the GPU machine, one time-boxed run at a time: reads
the next sentences of the open-vocabulary corpus (corpus/build.py) from the saved data
position, synthesizes them with espeak-ng on all CPU cores while the GPU trains on the
clips already made, saves the state (fp16 weights, compact Adam moments, data position)
in parts of <= 15 MiB, and evaluates on held-out sentences spoken by held-out voices.
Called by remake.sh, which sets up espeak-ng.

  python3 scripts/toy-model/train.py --out DIR [--resume STATE_DIR] [--budget-s 480]
                                     [--eval quick|full|none] [--dry-run]

--resume takes a folder holding the previous run's state.tar.part-* (remake.sh unpacks
them); the model shape then comes from its state.json. --dry-run runs the data pipeline
without torch: corpus slice, synthesis of a few hundred clips with effects and word
timings, 30 s window plans and their token targets, evaluation windows (long-form,
silence, noise) as WAV files, and a state save / resume round trip.

This file imports only the standard library at the top: the synthesis workers are
spawned processes that import it again, and must not pay for importing torch.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
T0 = time.time()
LANGS = ("en", "de", "fr", "es")
TEMPLATE_SHARE = 0.05  # default share of sentences from textgen.py's templates (numbers, dates, prices)


def log(*parts):
    print(f"[{time.time() - T0:6.1f}s]", *parts, flush=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the state parts, results and eval subset")
    ap.add_argument("--resume", default=None, help="folder of an unpacked state (state.json, model, moments)")
    ap.add_argument("--corpus", default=os.path.join(REPO, ".device-carry", "corpus"),
                    help="full corpus (corpus/build.py) or slices cut from the state (runstate.py slice)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="wall-clock budget of the whole script")
    ap.add_argument("--eval", choices=("quick", "full", "none"), default="quick")
    ap.add_argument("--eval-reserve-s", type=float, default=None, help="time kept for saving and evaluation")
    ap.add_argument("--clips-per-lang", type=int, default=50000, help="corpus sentences planned per language")
    ap.add_argument("--eval-clips", type=int, default=None, help="held-out utterances per language")
    ap.add_argument("--cooldown", action="store_true",
                    help="decay the LR to 2 %% over this run (the last run before shipping)")
    ap.add_argument("--cooldown-after", type=float, default=0.0,
                    help="with --cooldown: share of the training time held at --lr before the decay "
                         "starts (default 0: the decay takes the whole run)")
    ap.add_argument("--cooldown-lr", type=float, default=None,
                    help="with --cooldown: the LR the decay starts from (default --lr); it decays to "
                         "2 %% of this")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--enc-layers", type=int, default=6)
    ap.add_argument("--dec-layers", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup-steps", type=int, default=300)
    ap.add_argument("--late-start", type=float, default=0.25,
                    help="share of windows whose first utterance starts after 1 s (layout.LATE_START_S)")
    ap.add_argument("--long-gap", type=float, default=0.1, help="share of pauses of 2-8 s (layout.LONG_GAP_S)")
    ap.add_argument("--vtlp-share", type=float, default=None,
                    help="share of training clips whose voice shape is perturbed: formants moved by a "
                         "factor 0.85-1.15 with pitch and timing kept, and a mild tone curve "
                         "(augment.vtlp; default augment.VTLP_SHARE, 0.5; 0 turns it off; never on "
                         "held-out clips)")
    ap.add_argument("--shaped-voice-share", type=float, default=None,
                    help="share of training clips spoken with a voice shape made here (synth.SHAPED_VARIANTS: "
                         "formants 1-3 moved and weighted each on its own, a tone curve; rendered by espeak-ng "
                         "itself; default synth.SHAPED_SHARE, 0.25; 0: the voices of run 17)")
    ap.add_argument("--lang-weights", default="",
                    help="relative share of windows per language, e.g. en=1.5 (others 1; default: equal)")
    ap.add_argument("--template-share", type=float, default=TEMPLATE_SHARE,
                    help="share of each language's sentences from textgen.py's templates: numbers, dates, "
                         "prices, phone numbers, which the corpus rarely has (default 0.05)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default=None, help="cuda if available, else cpu")
    ap.add_argument("--dry-run", action="store_true", help="the data pipeline only, without torch (see above)")
    args = ap.parse_args(argv)
    if not 0.0 <= args.cooldown_after < 1.0:
        ap.error("--cooldown-after must be in [0, 1)")
    if (args.cooldown_after or args.cooldown_lr is not None) and not args.cooldown:
        ap.error("--cooldown-after and --cooldown-lr need --cooldown")
    if args.cooldown_lr is not None and args.cooldown_lr <= 0:
        ap.error("--cooldown-lr must be positive")
    for name in ("vtlp_share", "shaped_voice_share", "template_share"):
        value = getattr(args, name)
        if value is not None and not 0.0 <= value <= 1.0:
            ap.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    if args.eval_reserve_s is None:
        args.eval_reserve_s = {"none": 25.0, "quick": 70.0, "full": 170.0}[args.eval]
    if args.eval_clips is None:
        args.eval_clips = 300 if args.eval == "full" else 80
    if args.dry_run:
        args.clips_per_lang, args.eval_clips, args.workers = min(args.clips_per_lang, 60), min(args.eval_clips, 24), \
            min(args.workers, 2)
    return args


def shape_of(args):
    return {"d_model": args.d_model, "heads": args.heads, "enc_layers": args.enc_layers, "dec_layers": args.dec_layers}


def load_state(args):
    """The run state (new, or from --resume), with the model shape applied to args."""
    import runstate
    info = runstate.corpus_info(args.corpus, LANGS)
    if not args.resume:
        return runstate.new_state(shape_of(args), info, args.seed)
    state = runstate.load_json(os.path.join(args.resume, "state.json"))
    runstate.check_corpus(state, info)
    runstate.complete_state(state, info)  # a state made by runstate.py from-model may name no corpus
    for key, value in state["shape"].items():
        setattr(args, key, value)
    args.seed = state["seed"]
    return state


def plan_texts(args, state):
    """Training texts per language from the data position (with their corpus lines), a
    few template sentences, and the held-out texts."""
    import runstate
    import textgen
    texts, lines = {}, {}
    n_templates = int(args.clips_per_lang * args.template_share)
    for lang in LANGS:
        part = runstate.read_slice(args.corpus, lang, state["position"][lang], args.clips_per_lang - n_templates)
        extra = textgen.sentences(lang, args.seed + state["step"], n_templates) if n_templates else []
        texts[lang] = [t for _, t in part] + extra
        lines[lang] = [n for n, _ in part] + [None] * len(extra)
    eval_texts = {}
    for lang in LANGS:
        with open(os.path.join(args.corpus, f"eval-{lang}.txt"), encoding="utf-8") as f:
            eval_texts[lang] = [l.strip() for l in f if l.strip()][: args.eval_clips]
    return texts, lines, eval_texts


def attach_lines(meta, texts, lines):
    """Adds each training clip's corpus line to its metadata (plan_jobs interleaves
    languages but keeps each language's order)."""
    cursor = {lang: 0 for lang in texts}
    for m in meta:
        m["line"] = lines[m["lang"]][cursor[m["lang"]]]
        cursor[m["lang"]] += 1


def start_pool(workers, fresh_workers=False):
    """Spawned (not forked) workers: they inherit ESPEAK_LD_PATH as LD_LIBRARY_PATH, which
    the dynamic linker only reads at process start, and the parent's CUDA state is not
    copied into them. fresh_workers: a new process for every task (map with chunksize=1),
    so a job's clips do not depend on what the worker synthesized before: espeak-ng keeps
    state between utterances (the same text and voice come out a few samples different
    after other utterances), which made hark_eval.py's audio depend on the scheduling."""
    extra = os.environ.get("ESPEAK_LD_PATH")
    saved = os.environ.get("LD_LIBRARY_PATH")
    if extra and extra not in (saved or ""):
        os.environ["LD_LIBRARY_PATH"] = extra + (":" + saved if saved else "")
    # The variable stays set: the parent's own linker read its path at start and ignores
    # it, and a worker the pool starts again later (after one died) needs it too — run 1
    # of 2026-11-30 stopped when a replacement worker could load neither the library nor
    # the program.
    return mp.get_context("spawn").Pool(workers, maxtasksperchild=1 if fresh_workers else None)


def save_state(args, model, opt, state, info, results):
    """state folder -> state.tar.part-* in --out; updates state.json first."""
    import runstate
    import trainer
    state_dir = os.path.join(args.out, "work", "state")
    os.makedirs(state_dir, exist_ok=True)
    trainer.export(model, state_dir, alignment_heads=results.get("metrics", {}).get("alignment_heads"), log=log)
    trainer.save_moments(opt, model, os.path.join(state_dir, trainer.MOMENTS_FILE))
    runstate.advance(state, info["used_lines"])
    state["step"] = info["steps"]
    state["windows_seen"] += info["windows_seen"]
    state["runs"].append({k: info[k] for k in ("first_step", "steps", "windows_seen", "train_seconds", "clips_used",
                                                "audio_hours", "final_loss")} | {"position": dict(state["position"])})
    runstate.save_json(os.path.join(state_dir, "state.json"), state)
    runstate.write_sidecar(state_dir, state)  # training-state.json: shipped beside the model
    parts = runstate.pack_state(state_dir, args.out)
    log(f"state saved: step {state['step']}, position {state['position']}, {len(parts)} parts")
    return state_dir


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    import augment
    import synth
    if args.vtlp_share is None:  # recorded in results.json as used
        args.vtlp_share = augment.VTLP_SHARE
    if args.shaped_voice_share is None:
        args.shaped_voice_share = synth.SHAPED_SHARE
    if args.shaped_voice_share > 0:  # the variant files, before any worker synthesizes
        synth.install_shaped_variants()
    if args.dry_run:
        import dryrun
        return dryrun.run(args, log)
    state = load_state(args)
    log(f"args {vars(args)}")
    texts, lines, eval_texts = plan_texts(args, state)
    eval_jobs, eval_meta = synth.plan_jobs(eval_texts, args.seed, held_out=True, job_size=16, effect_shares={})
    train_jobs, train_meta = synth.plan_jobs(texts, args.seed, held_out=False, job_size=48,
                                             label=f"-{state['step']}", vtlp_share=args.vtlp_share,
                                             shaped_share=args.shaped_voice_share)
    attach_lines(train_meta, texts, lines)
    log(f"texts ready: {len(train_meta)} train from positions {state['position']}, {len(eval_meta)} held out")
    # One BLAS/OpenMP thread a process: the voice-shape perturbation's LPC product (a numpy
    # matmul) otherwise starts a thread per core in each of the ~15 synthesis workers. On
    # the H200 of 2026-12-06 that oversubscription cut synthesis to ~93 clips/s and training
    # to ~310 windows/s (run 17a); with one thread (run 17b) ~410 clips/s and ~710 windows/s.
    # Set before torch is imported here, so the training process has one CPU thread too,
    # as it had in run 17b (its CPU work is Python; the GPU does the rest).
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    pool = start_pool(args.workers)
    eval_clips = [c for part in pool.map(synth.synth_job, eval_jobs) for c in part] if args.eval != "none" else []
    log(f"held-out clips synthesized: {len(eval_clips)}")
    train_stream = pool.imap_unordered(synth.synth_job, train_jobs)

    import trainer  # torch and transformers: only now, after the workers exist
    results = {"args": vars(args), "stages": {}}
    try:
        model, opt, info = trainer.train(args, train_stream, train_meta, log,
                                         deadline=T0 + args.budget_s - args.eval_reserve_s, state=state,
                                         resume_dir=args.resume)
        results["training"] = {k: v for k, v in info.items() if k != "used_lines"}
    finally:
        pool.terminate()
    state_dir = save_state(args, model, opt, state, info, results)
    results["stages"]["save"] = "ok"
    results["state"] = {k: state[k] for k in ("step", "windows_seen", "position", "wraps")}
    _write(args.out, results)
    if args.eval != "none":
        import evaluate
        try:
            evaluate.run(args, state_dir, eval_clips, eval_meta, results, log, deadline=T0 + args.budget_s - 5)
            if args.eval == "full":  # measured alignment heads go into the state too
                import runstate
                runstate.pack_state(state_dir, args.out)
        except Exception as e:  # keep the state and what was measured so far
            import traceback
            traceback.print_exc()
            results["stages"]["evaluate"] = f"failed: {e!r}"
    _write(args.out, results)
    log("done")


def _write(out, results):
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
