#!/usr/bin/env bash
# Base decoder steps of the k-quants against q4_0, and before/after for a kernel change,
# on a shared, noisy machine (docs/benchmarks.md, "k-quant decoder steps"). Not part of CI.
#
#   scripts/quant/kquant_ab.sh NEW_HARK OLD_HARK [ROUNDS] [MODEL_DIR] > results.txt
#
# MODEL_DIR holds base-{q4_0,q2_k,q3_k,q4_k,q5_k,q6_k}.bin (made here when missing with
# `NEW_HARK convert synthetic:base --to ggml --dtype TYPE`). Per round and type, three
# `hark bench` runs back to back so that they see the same load: q4_0 with NEW, the type
# with NEW, the type with OLD. Each line: round, type, then the 1-row and 5-row step (ms)
# of those three runs, then the load average. Summarise with kquant_ab_summary.py.
set -euo pipefail
new=$1 old=$2 rounds=${3:-4} dir=${4:-/tmp/hark-kquant-ab}
types=(q2_k q3_k q4_k q5_k q6_k q4_0)
mkdir -p "$dir"
for q in "${types[@]}"; do
  [ -f "$dir/base-$q.bin" ] || "$new" convert synthetic:base --to ggml --dtype "$q" -o "$dir/base-$q.bin" >/dev/null
done
step() {  # binary, type -> "one_row five_rows"
  "$1" bench --model "$dir/base-$2.bin" --threads 2 --runs 1 --tokens 64 2>&1 |
    awk '/decoder.*batch 1/ {a=$2} /decoder.*batch 5/ {b=$2} END {print a, b}'
}
for round in $(seq 1 "$rounds"); do
  for q in "${types[@]}"; do
    echo "$round $q $(step "$new" q4_0) $(step "$new" "$q") $(step "$old" "$q") $(cut -d' ' -f1 /proc/loadavg)"
  done
done
