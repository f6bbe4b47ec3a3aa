#!/usr/bin/env bash
# Alternated server runs in one device call: `run-all.sh batching-bench` (the batching
# server alone, SERVERS=0) under each variant of SERVER_VARIANTS in turn, ROUNDS times
# (machines differ by ~20 % between calls, so only runs of one call are compared). A
# variant is "default" or switches joined by "+", e.g. "HARK_BATCH_PREFILL=passes" or
# "BATCH_COMPUTE=fp8+RATES=48". Prints each run's table row and keeps every run's
# results.md in $OUT/server-ab.md (the device tool brings back few files).
#   SERVER_VARIANTS="default HARK_BATCH_PREFILL=passes" ROUNDS=2 bash scripts/device/server-ab.sh
# Other env: BATCH_REQUESTS (default 512), EXTRA_FIELDS (default sample_len=100: real-length
# decoding), RATES (default closed), SOURCE_CLIP, and the rest of run-all.sh
# batching-bench's BATCH_* settings.
set -uo pipefail
OUT=${OUT:-/tmp/hark-device-out}
mkdir -p "$OUT"
export SERVERS=0 BATCH_REQUESTS=${BATCH_REQUESTS:-512} EXTRA_FIELDS=${EXTRA_FIELDS:-sample_len=100}
all=$OUT/server-ab.md
echo "# server-ab, $(date -u '+%Y-%m-%d %H:%M UTC'), $BATCH_REQUESTS requests, ${BATCH_CONCURRENCY:-64} in flight, fields: $EXTRA_FIELDS" | tee "$all"
nvidia-smi --query-gpu=name,memory.total,power.limit --format=csv,noheader | tee -a "$all"
for round in $(seq 1 "${ROUNDS:-1}"); do
  for variant in ${SERVER_VARIANTS:-default}; do
    switches=(HARK_AB_VARIANT="$variant")
    [[ $variant == default ]] || IFS=+ read -r -a switches <<<"$variant"
    run_out=/tmp/hark-server-ab-run
    rm -rf "$run_out"
    env "${switches[@]}" OUT="$run_out" bash scripts/device/run-all.sh batching-bench >/dev/null 2>&1
    echo "### $variant (round $round)" | tee -a "$all"
    grep -E "synthetic:" "$run_out/results.md" | tee -a "$all"
    cat "$run_out/results.md" >>"$all"
    # Latency by clip length (hark bench --server's latency_ms_by_clip) and the windows
    # encoded ahead, from the run's JSON and /metrics.
    mkdir -p "$run_out/x" "$OUT/runs" && tar xzf "$run_out/results.tar.gz" -C "$run_out/x" 2>/dev/null
    cp "$run_out/results.tar.gz" "$OUT/runs/${variant//[^A-Za-z0-9_.-]/_}-$round.tar.gz" 2>/dev/null
    find "$run_out/x" -name '*batching-1.json' | while read -r json; do
      python3 - "$json" "${json%.json}.metrics" <<'PY' | tee -a "$all"
import json, re, sys
d = json.load(open(sys.argv[1]))
l = d["latency_ms"]
print("    all: p50 %.0f p99 %.0f mean %.0f min %.0f (warm-up %s, after %s)" % (
    l["p50"], l["p99"], l["mean"], l.get("min", 0), d.get("warmup"), d.get("unmeasured_after")))
for c in d.get("latency_ms_by_clip", []):
    print("    %5.1f s: n %d p50 %.0f p99 %.0f max %.0f" % (c["seconds"], c["requests"], c["p50"], c["p99"], c["max"]))
try:
    for line in open(sys.argv[2]):
        if re.match(r"hark_encoder_(windows|windows_ahead|windows_ahead_unused|seconds)_total ", line):
            print("    " + line.strip())
except OSError:
    pass
PY
    done
  done
done
