#!/usr/bin/env bash
# Quantized against fp32 on the larger held-out set of the bundled toy model
# (scripts/quant/heldout_set.py): WER per compute type (scripts/toy-model/wer.py's
# definition) and each type's token edit distance to the fp32 path per clip. Not part of CI
# (the set is ~15 MB of WAV made with espeak-ng, not committed); docs/benchmarks.md,
# "Quantized Whisper on the CPU", gives the results.
#
#   /usr/bin/python3 scripts/quant/heldout_set.py SET_DIR          # once
#   scripts/quant/heldout_wer.sh HARK_BIN SET_DIR [RESULTS_JSON] [BEAM_SIZE]
#
# Types: f32 (the reference path) and int8 on the fp16 checkpoint; q8_0, q5_0 and q4_0
# files written by `hark convert --dtype` (run with --compute-type auto, which keeps them
# packed). Greedy unless BEAM_SIZE > 0; language given; 2 threads.
set -euo pipefail
hark=$1 set_dir=$2 results=${3:-} beam=${4:-0}
root=$(cd "$(dirname "$0")/../.." && pwd)
model="${MODEL:-$root/models/hark-toy-speech}"  # MODEL=DIR: another checkpoint folder
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A model_of=([f32]="$model" [int8]="$model")
declare -A compute_of=([f32]=f32 [int8]=int8)
for q in q8_0 q5_0 q4_0; do
  "$hark" convert "$model" --to ggml --dtype "$q" -o "$work/toy-$q.bin" >/dev/null
  model_of[$q]="$work/toy-$q.bin"
  compute_of[$q]=auto
done

types=(f32 int8 q8_0 q5_0 q4_0)
for ct in "${types[@]}"; do
  SECONDS=0
  for lang in en de fr es; do
    "$hark" transcribe "$set_dir"/"$lang"-*.wav --model "${model_of[$ct]}" --compute-type "${compute_of[$ct]}" \
      --language "$lang" --threads 2 --temperature 0 --beam-size "$beam" --format verbose_json \
      --output-dir "$work/out-$ct" --no-progress >/dev/null
  done
  echo "$ct: $SECONDS s for the set" >&2
done
python3 "$root/scripts/quant/heldout_score.py" "$set_dir/references.json" "$work" "${types[*]}" "$results"
