"""Makes hark's toy speech model in one run on the GPU machine: synthesizes a corpus with
espeak-ng on all CPU cores while the GPU trains on the clips already made, exports the
checkpoint (fp16, Hugging Face layout), then evaluates it on held-out sentences spoken
with held-out voice settings. Called by remake.sh, which sets up espeak-ng.

  python3 scripts/toy-model/train.py --out DIR [--budget-s 520] [--dry-run]

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
sys.path.insert(0, HERE)
T0 = time.time()


def log(*parts):
    print(f"[{time.time() - T0:6.1f}s]", *parts, flush=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the checkpoint, results and eval subset")
    ap.add_argument("--budget-s", type=float, default=520.0, help="wall-clock budget of the whole script")
    ap.add_argument("--eval-reserve-s", type=float, default=115.0, help="time kept for export and evaluation")
    ap.add_argument("--train-clips", type=int, default=10000, help="training utterances per language")
    ap.add_argument("--eval-clips", type=int, default=140, help="held-out utterances per language")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=192)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--enc-layers", type=int, default=4)
    ap.add_argument("--dec-layers", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup-steps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default=None, help="cuda if available, else cpu")
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes for a CPU check of every stage")
    args = ap.parse_args(argv)
    if args.dry_run:
        args.train_clips, args.eval_clips, args.batch = min(args.train_clips, 60), min(args.eval_clips, 24), 4
        args.d_model, args.heads, args.enc_layers, args.dec_layers = 64, 2, 1, 1
        args.workers = min(args.workers, 2)
    return args


def start_pool(workers):
    """Spawned (not forked) workers: they inherit ESPEAK_LD_PATH as LD_LIBRARY_PATH, which
    the dynamic linker only reads at process start, and the parent's CUDA state is not
    copied into them."""
    extra = os.environ.get("ESPEAK_LD_PATH")
    saved = os.environ.get("LD_LIBRARY_PATH")
    if extra:
        os.environ["LD_LIBRARY_PATH"] = extra + (":" + saved if saved else "")
    pool = mp.get_context("spawn").Pool(workers)
    if extra:  # the parent keeps its own library path
        if saved is None:
            del os.environ["LD_LIBRARY_PATH"]
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    return pool


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    import synth
    import textgen

    log(f"args {vars(args)}")
    train_texts = {lang: textgen.sentences(lang, args.seed, args.train_clips) for lang in textgen.LANGS}
    eval_texts = {lang: textgen.sentences(lang, args.seed + 1000, args.eval_clips, exclude=set(train_texts[lang]))
                  for lang in textgen.LANGS}
    eval_jobs, eval_meta = synth.plan_jobs(eval_texts, args.seed, held_out=True, job_size=16)
    train_jobs, train_meta = synth.plan_jobs(train_texts, args.seed, held_out=False, job_size=48)
    log(f"texts ready: {sum(map(len, train_texts.values()))} train, {sum(map(len, eval_texts.values()))} held out")
    pool = start_pool(args.workers)
    eval_clips = [c for part in pool.map(synth.synth_job, eval_jobs) for c in part]
    log(f"held-out clips synthesized: {len(eval_clips)}")
    train_stream = pool.imap_unordered(synth.synth_job, train_jobs)

    import trainer  # torch and transformers: only now, after the workers exist
    results = {"args": vars(args), "stages": {}}
    try:
        model, info = trainer.train(args, train_stream, train_meta, log, deadline=T0 + args.budget_s - args.eval_reserve_s)
        results["training"] = info
    finally:
        pool.terminate()
    export_dir = os.path.join(args.out, "hark-toy-speech")
    trainer.export(model, export_dir, alignment_heads=None, log=log)
    results["stages"]["export"] = "ok"
    _write(args.out, results)
    import evaluate
    try:
        evaluate.run(args, export_dir, eval_clips, eval_meta, results, log, deadline=T0 + args.budget_s - 5)
    except Exception as e:  # keep the checkpoint and what was measured so far
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
