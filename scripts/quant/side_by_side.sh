#!/usr/bin/env bash
# hark and whisper.cpp on the same ggml files, runs alternating, medians printed
# (docs/benchmarks.md, "Quantized Whisper on the CPU"). Not part of CI.
#
#   scripts/quant/side_by_side.sh HARK_BIN WHISPER_CPP_BUILD_BIN MODEL_DIR [ROUNDS]
#
# MODEL_DIR must hold ggml-{tiny,base}-f16.bin (`hark convert synthetic:SIZE --to ggml
# --dtype f16`) and the quantized files whisper-quantize made from them
# (ggml-SIZE-q8_0.bin, -q5_0, -q4_0, and ggml-base-q4_k.bin). Each round runs every
# configuration once; the medians over the rounds are printed as one table row each. The
# 5-row column is hark's step of 5 rows (beams) and whisper.cpp's call of 5 tokens
# (whisper-bench's "batchd", reported per token, times 5).
# env: SIZES="tiny base" TYPES="q8_0 q5_0 q4_0" (the quantized files to compare, besides f16;
# q4_k is included when TYPES names it, for base only).
set -euo pipefail
hark=$1 wcpp=$2 dir=$3 rounds=${4:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

configs=()  # "label|command"
sizes=${SIZES:-tiny base}
types=${TYPES:-q8_0 q5_0 q4_0 q4_k}
for size in $sizes; do
  configs+=("hark $size f16 auto|$hark bench --model $dir/ggml-$size-f16.bin --threads 2 --runs 6 --tokens 64")
  configs+=("hark $size f16 --compute-type int8|$hark bench --model $dir/ggml-$size-f16.bin --compute-type int8 --threads 2 --runs 6 --tokens 64")
  for q in $types; do
    [[ $q == q4_k ]] && continue
    configs+=("hark $size $q auto|$hark bench --model $dir/ggml-$size-$q.bin --threads 2 --runs 6 --tokens 64")
  done
  [[ " $types " == *" q8_0 "* ]] &&
    configs+=("hark $size q8_0 int8_float32|$hark bench --model $dir/ggml-$size-q8_0.bin --compute-type int8_float32 --threads 2 --runs 6 --tokens 64")
  for q in f16 $types; do
    [[ $q == q4_k ]] && continue
    configs+=("whisper.cpp $size $q|$wcpp/whisper-bench -m $dir/ggml-$size-$q.bin -t 2")
  done
done
if [[ " $sizes " == *" base "* && " $types " == *" q4_k "* ]]; then
  configs+=("hark base q4_k auto|$hark bench --model $dir/ggml-base-q4_k.bin --threads 2 --runs 6 --tokens 64")
  configs+=("whisper.cpp base q4_k|$wcpp/whisper-bench -m $dir/ggml-base-q4_k.bin -t 2")
fi

for ((r = 0; r < rounds; ++r)); do
  for i in "${!configs[@]}"; do
    cmd=${configs[$i]#*|}
    log=$($cmd 2>&1 || true)
    if [[ $cmd == *whisper-bench* ]]; then
      per_run() { printf '%s\n' "$log" | sed -n "s/.*$1 time = .*(\\s*\\([0-9.]*\\) ms per run).*/\\1/p"; }
      enc=$(per_run encode) dec=$(per_run decode)
      # batchd: one call of 5 tokens, timed per token
      beam=$(awk -v t="$(per_run batchd)" 'BEGIN {print t * 5}')
    else
      enc=$(printf '%s\n' "$log" | awk '/^encoder/ {print $2; exit}')
      dec=$(printf '%s\n' "$log" | awk '/^decoder/ && / at batch 1 / {print $2; exit}')
      beam=$(printf '%s\n' "$log" | awk '/^decoder/ && / at batch 5 / {print $2; exit}')
      printf '%s\n' "$log" | awk '/^step reads/' >> "$out/floor-$i"
    fi
    echo "$enc $dec $beam" >> "$out/times-$i"
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '| configuration | encoder ms | decoder ms / step, 1 row | 5 rows | step reads, floor |\n'
printf '| --- | --- | --- | --- | --- |\n'
for i in "${!configs[@]}"; do
  label=${configs[$i]%%|*}
  enc=$(awk '{print $1}' "$out/times-$i" | median)
  dec=$(awk '{print $2}' "$out/times-$i" | median)
  beam=$(awk '{print $3}' "$out/times-$i" | median)
  floor=""
  [ -f "$out/floor-$i" ] && floor=$(tail -n 1 "$out/floor-$i" | sed 's/^step reads *//')
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$enc" "$dec" "$beam" "$floor"
done
