#!/usr/bin/env bash
# Remakes the toy speech model end to end on the GPU machine (one H200, ~9 minutes):
# espeak-ng corpus synthesis, training, fp16 export, held-out evaluation.
#
#   bash scripts/toy-model/fetch-debs.sh          # once, on the development machine
#   bash scripts/toy-model/remake.sh [OUT_DIR] [train.py options]   # on the GPU machine,
#                                                 # with .device-carry/debs carried there
# OUT_DIR (default $OUT) receives: model.safetensors.part-00/-01, config.json,
# generation_config.json, results.json, eval-details.json, toy-eval.tar, train-log.txt.
set -u
out=${1:-${OUT:-/tmp/hark-toy-out}}
shift || true
mkdir -p "$out"
prefix=/tmp/hark-espeak
mkdir -p "$prefix"
for f in .device-carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
# Only the synthesis workers get this library path (train.py passes it on): the Debian 12
# libraries must not shadow the machine's own in the process that runs torch.
export ESPEAK_LD_PATH=$lib:$prefix/lib/x86_64-linux-gnu:$lib/pulseaudio
export ESPEAK_LIB=$lib/libespeak-ng.so.1 ESPEAK_DATA=$lib ESPEAK_BIN=$prefix/usr/bin/espeak-ng
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0
python3 scripts/toy-model/train.py --out "$out/work" "$@" 2>&1 | tee "$out/train-log.txt"
rc=${PIPESTATUS[0]}
cp "$out"/work/hark-toy-speech/*.json "$out"/ 2>/dev/null
# The device machine returns files of at most 16 MiB: the checkpoint travels in two parts.
# Join them with: cat model.safetensors.part-* > model.safetensors (sha256 in the log).
if [ -f "$out/work/hark-toy-speech/model.safetensors" ]; then
  sha256sum "$out/work/hark-toy-speech/model.safetensors" | tee -a "$out/train-log.txt"
  split -b 15M -d "$out/work/hark-toy-speech/model.safetensors" "$out/model.safetensors.part-"
fi
cp "$out"/work/results.json "$out"/work/eval-details.json "$out"/work/toy-eval.tar "$out"/ 2>/dev/null
rm -rf "$out/work"
ls -l "$out"
exit "$rc"
