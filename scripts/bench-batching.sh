#!/usr/bin/env bash
# The batching server against the one-at-a-time server (--max-batch 1), in the same run:
# for each model, each server in turn (A B A B: a machine shared with other work drifts)
# serves the same load from `hark bench --server` (N clients replaying clips of 5-30 s),
# and the figures go to $OUT (JSON per run, a summary table on stdout).
#   scripts/bench-batching.sh [MODEL…]       default: synthetic:tiny synthetic:base
#   env: HARK=build/bin/hark CONCURRENCY=8 REQUESTS=32 ROUNDS=2 THREADS=2 DEVICE=cpu
#        CLIP_SECONDS="5 8 11 14 17 20 24 30" EXTRA_SERVE="" (e.g. "--compute-type f16")
#        SOURCE_CLIP=tests/data/audio/jfk.wav (the 16 kHz PCM16 WAV the clips are cut from)
#        OUT=/tmp/hark-bench-batching WARMUP=$CONCURRENCY (the closed loop's requests before
#        the measured ones, in the same stream: they start at steady load, not as a burst)
#        EXTRA_FIELDS="" (more request fields, e.g. "sample_len=100 without_timestamps=true":
#        real-length decoding of one window a clip, where random weights otherwise decode
#        224 tokens a window and seek to random timestamps)
#        SERVERS="1 0" (the --max-batch values compared; 0 = batching)
#        RATES="" (open loop: requests per second, one run per rate, at most CONCURRENCY in
#        flight, latency from each arrival; empty = closed loop, CONCURRENCY clients
#        sending back to back)
#        DEVICES="$DEVICE" (several, e.g. "cuda:0 cuda:all", compares one GPU with all:
#        each device list is served in turn; with the default WARMUP (the concurrency) every
#        GPU has run before the timed part)
# rows/step: rows advanced per step, then "/" the rows computed per step (free rows within a
# step's span included; a recorded GPU step's span is rounded up to 16 rows).
# Synthetic weights never say end-of-text, so every window decodes its full 224 tokens
# (temperature 0, language given: no fallback, no detection): a decoding-heavy load.
set -euo pipefail
cd "$(dirname "$0")/.."
hark=${HARK:-build/bin/hark}
concurrency=${CONCURRENCY:-8}
requests=${REQUESTS:-32}
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
device=${DEVICE:-cpu}
devices=${DEVICES:-$device}
servers=${SERVERS:-1 0}
rates=${RATES:-closed}
warmup=${WARMUP:-$concurrency}
out=${OUT:-/tmp/hark-bench-batching}
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(synthetic:tiny synthetic:base)
mkdir -p "$out/clips"
extra_fields=()
for f in ${EXTRA_FIELDS:-}; do extra_fields+=(--field "$f"); done

# Clips of CLIP_SECONDS (default 5 to 30 s) cut from SOURCE_CLIP repeated (16 kHz mono
# PCM16; Python's wave module, as the GPU machine has no FFmpeg).
python3 scripts/cut-clips.py "${SOURCE_CLIP:-tests/data/audio/jfk.wav}" "$out/clips" ${CLIP_SECONDS:-5 8 11 14 17 20 24 30}

get() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"; }

serve() {  # model, max_batch → sets pid and port
  local log=$out/serve.log
  # shellcheck disable=SC2086
  "$hark" serve "$1" --device "$device" --threads "$threads" --port 0 --resident --max-batch "$2" \
    --log-level info ${EXTRA_SERVE:-} >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" 2>/dev/null | head -1 || true)
    [[ -n $port ]] && get "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "server did not start:"; cat "$log"; exit 1
}

printf '%-24s %-10s %-14s %5s %9s %8s %8s %8s %7s %6s %9s  %s\n' model device server round "audio_s/s" p50_ms p95_ms \
  p99_ms wall_s errors rows/step "scheduler seconds: step/gather/prefill/encode; ms per step; tokens fed back; requests per device"
for model in "${models[@]}"; do
  for round in $(seq 1 "$rounds"); do
    for device in $devices; do
      for max_batch in $servers; do
      for rate in $rates; do
        name=$([[ $max_batch == 1 ]] && echo one-at-a-time || echo batching)
        rate_args=()
        [[ $rate == closed ]] || { rate_args=(--rate "$rate"); name="$name@${rate}rps"; }
        serve "$model" "$max_batch"
        json=$out/${model//[:\/]/_}-${device//:/_}-$name-$round.json
        "$hark" bench --server "http://127.0.0.1:$port" --clips "$out/clips" --concurrency "$concurrency" \
          --requests "$requests" --warmup "$warmup" "${rate_args[@]}" --field language=en --field temperature=0 \
          --field response_format=json "${extra_fields[@]}" --json "$json" >/dev/null
        get "http://127.0.0.1:$port/metrics" | grep -E '^hark_(batch|encoder)_[a-z_]+_total ' >"${json%.json}.metrics" || true
        get "http://127.0.0.1:$port/stats" >"${json%.json}.stats" || true
        kill -TERM "$pid"
        wait "$pid" || true
        python3 - "$json" "$model" "$name" "$round" "$device" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
l = r["latency_ms"]
m = dict(line.split() for line in open(sys.argv[1][:-5] + ".metrics"))
steps = float(m.get("hark_batch_steps_total", 0))
rows = f"{float(m['hark_batch_rows_stepped_total']) / steps:.1f}" if steps else "-"
if steps and "hark_batch_rows_computed_total" in m:  # rows advanced / rows computed per step
    rows += f"/{float(m['hark_batch_rows_computed_total']) / steps:.0f}"
try:  # requests each GPU served (warm-up included), from /stats
    stats = json.load(open(sys.argv[1][:-5] + ".stats"))
    spread = " ".join(f"{d['device']}={d['requests']}" for d in stats.get("devices", []))
except (OSError, ValueError, KeyError):
    spread = ""
# Where the batching scheduler's thread spent its time (warm-up included; empty for --max-batch 1).
split = "/".join(f"{float(m.get(k, 0)):.1f}" for k in ("hark_batch_step_seconds_total", "hark_batch_gather_seconds_total",
                                                   "hark_batch_prefill_seconds_total", "hark_encoder_seconds_total"))
# Per step, and greedy tokens the scheduler fed back itself (the GPU fast path's greedy runs).
per_step = f"{1000 * float(m.get('hark_batch_step_seconds_total', 0)) / steps:.2f}ms" if steps else ""
fed = f"fed={int(float(m.get('hark_batch_tokens_fed_back_total', 0)))}" if steps else ""
# Windows per encoder call (the encoder's batch).
calls = float(m.get("hark_encoder_calls_total", 0))
enc = f"enc={float(m.get('hark_encoder_windows_total', 0)) / calls:.1f}/call" if steps and calls else ""
# Windows queued ahead while the window before decoded (runs without timestamps), and unused.
ahead_n = int(float(m.get("hark_encoder_windows_ahead_total", 0)))
if ahead_n:
    enc += f" ahead={ahead_n}/{int(float(m.get('hark_encoder_windows_ahead_unused_total', 0)))}"
# Open loop: the audio seconds per second offered, and requests sent late (every client busy).
offered = ""
if "open_loop" in r:
    o = r["open_loop"]
    offered = f"offered={o['offered_audio_per_second']:.0f}/s late={o['sent_late']}"
print(f"{sys.argv[2]:<24} {sys.argv[5]:<10} {sys.argv[3]:<14.14} {sys.argv[4]:>5} {r['rtfx']:9.2f} {l['p50']:8.0f} "
      f"{l['p95']:8.0f} {l['p99']:8.0f} {r['wall_seconds']:7.1f} {r['errors']:6d} {rows:>9}  {split if steps else ''} "
      f"{per_step} {fed} {enc} {spread} {offered}")
PY
      done
      done
    done
  done
done
