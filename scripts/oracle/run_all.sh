#!/usr/bin/env bash
# Runs every oracle part on the GPU machine in one go (parts in parallel: the CPU-only
# ones beside the GPU ones) and packs the goldens into $OUT/goldens.tgz. Unpack with
#   tar xzf goldens.tgz -C tests/data/golden
# Usage (repo root): bash scripts/oracle/run_all.sh [part ...]
set -u
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0
work=${GOLDEN_DIR:-/tmp/hark-goldens}
out=${OUT:-/tmp/hark-oracle-out}
mkdir -p "$work" "$out"
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(tokenizer mel model vad decoding loaders)
pids=()
for part in "${parts[@]}"; do
  [ -f "scripts/oracle/$part.py" ] || { echo "skip $part (no script)"; continue; }
  mkdir -p "$work/$part"
  ( timeout 540 python3 "scripts/oracle/$part.py" --out "$work/$part" >"$work/$part/log.txt" 2>&1
    echo "rc=$?" >>"$work/$part/log.txt" ) &
  pids+=($!)
done
wait "${pids[@]}"
for part in "${parts[@]}"; do
  [ -f "$work/$part/log.txt" ] && { echo "== $part"; tail -n 15 "$work/$part/log.txt"; }
done
tar czf "$out/goldens.tgz" -C "$work" .
ls -la "$out"
