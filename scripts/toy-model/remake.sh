#!/usr/bin/env bash
# One time-boxed training run of the toy speech model on the GPU machine (one H200):
# espeak-ng synthesis of the next corpus sentences on the CPU cores while the GPU trains,
# state saved in parts of <= 15 MiB, held-out evaluation. Run it again with --resume to
# continue where the last run stopped. See scripts/toy-model/NEXT.md for the whole plan.
#
#   on the development machine, once:
#     bash scripts/toy-model/fetch-debs.sh              # espeak-ng .debs -> .device-carry/debs
#     bash scripts/toy-model/corpus/fetch.sh            # text packages -> .device-carry/corpus-*
#     /usr/bin/python3 scripts/toy-model/corpus/build.py   # -> .device-carry/corpus-full
#   before every run, here: the next sentences from the state's data position
#     /usr/bin/python3 scripts/toy-model/runstate.py slice .device-carry/corpus-full \
#         .device-carry/state .device-carry/corpus 50000      # "new" instead of the state at first
#     (the last run's parts lost? a state from the shipped checkpoint, before slicing:
#      runstate.py from-model models/hark-toy-speech .device-carry/state --corpus .device-carry/corpus-full)
#     bash scripts/toy-model/slim-for-training.sh on      # (off again after the call)
#   on the GPU machine (carry .device-carry/debs, .device-carry/corpus and, to resume,
#   .device-carry/state holding the previous run's state.tar.part-* and state.tar.sha256):
#     bash scripts/toy-model/remake.sh [--resume .device-carry/state] [--budget-s 480] \
#          [--eval quick|full|none] [--cooldown [--cooldown-after 0.5 --cooldown-lr 4e-4]] \
#          [--out DIR] [other train.py options]
#   (--cooldown-after F holds --lr for the first share F of the training time, then decays
#    linearly from --cooldown-lr to 2 % of it: a constant stretch and its decay in one call;
#    --vtlp-share S: share of training clips whose voice shape is perturbed, default 0.5,
#    0 for the data of runs 1-16; --shaped-voice-share S: share of training clips spoken
#    with a voice shape written as an espeak-ng variant file, default 0.25, 0 for the voices
#    of run 17)
#   a dry run here (no torch): PYTHON=/usr/bin/python3 bash scripts/toy-model/remake.sh --dry-run
#
# OUT (default $OUT) receives at most 7 files: state.tar.part-00.. (model, Adam moments,
# data position), state.tar.sha256, results.json, report.tar (train-log.txt,
# eval-details.json, toy-eval.tar with --eval full).
set -u
out=${OUT:-/tmp/hark-toy-out}
py=${PYTHON:-python3}  # the GPU machine's python3 has torch; a dry run here: PYTHON=/usr/bin/python3
resume=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --resume) resume=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
. scripts/toy-model/espeak-env.sh
if [ -n "$resume" ]; then
  rm -rf /tmp/hark-state
  "$py" scripts/toy-model/runstate.py unpack "$resume" /tmp/hark-state > "$out/resumed-state.json" || exit 1
  args+=(--resume /tmp/hark-state)
fi
"$py" scripts/toy-model/train.py --out "$out/work" "${args[@]}" 2>&1 | tee "$out/train-log.txt"
rc=${PIPESTATUS[0]}
case " ${args[*]} " in *" --dry-run "*) ls -l "$out/work/dry-run"; exit "$rc" ;; esac  # keep its files
mv "$out"/work/state.tar.part-* "$out"/work/state.tar.sha256 "$out"/ 2>/dev/null
cp "$out"/work/results.json "$out"/ 2>/dev/null
(cd "$out" && mv work/eval-details.json work/toy-eval.tar . 2>/dev/null
 tar -cf report.tar train-log.txt resumed-state.json eval-details.json toy-eval.tar 2>/dev/null
 rm -f train-log.txt resumed-state.json eval-details.json toy-eval.tar)
rm -rf "$out/work"
ls -l "$out"
exit "$rc"
