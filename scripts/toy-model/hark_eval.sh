#!/usr/bin/env bash
# The bundled model's held-out WER through hark itself, on this machine (see hark_eval.py):
#   bash scripts/toy-model/hark_eval.sh [--hark build/bin/hark] [--model models/hark-toy-speech]
#        [--clips 150] [--windows 10,20,24] [--longform-repeat 1] [--longform-cut] [--langs en]
#        [--seed 1] [--hark-args="--beam-size 5"] [--numbers 120] [--word-timing 60]
#        [--out /tmp/hark-toy-eval]
# Needs the espeak-ng .debs (scripts/toy-model/fetch-debs.sh) and the held-out text
# (.device-carry/corpus/eval-*.txt, from runstate.py slice, or corpus/build.py --eval-only:
# corpus/README.md); Debian's python3 with numpy. A larger set (7-14 min on 2 cores):
#   --clips 1000 --windows 40,80,48 --longform-repeat 5 --longform-cut
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/toy-model/espeak-env.sh
exec "${PYTHON:-/usr/bin/python3}" scripts/toy-model/hark_eval.py "$@"
