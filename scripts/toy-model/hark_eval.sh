#!/usr/bin/env bash
# The bundled model's held-out WER through hark itself, on this machine (see hark_eval.py):
#   bash scripts/toy-model/hark_eval.sh [--hark build/bin/hark] [--model models/hark-toy-speech]
#        [--clips 150] [--out /tmp/hark-toy-eval]
# Needs the espeak-ng .debs (scripts/toy-model/fetch-debs.sh) and the held-out text
# (.device-carry/corpus/eval-*.txt, from runstate.py slice); Debian's python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/toy-model/espeak-env.sh
exec "${PYTHON:-/usr/bin/python3}" scripts/toy-model/hark_eval.py "$@"
