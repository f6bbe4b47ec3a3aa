#!/usr/bin/env bash
# Alternated archive-job runs in one device call: `run-all.sh offline-bench` under each
# variant of OFFLINE_VARIANTS in turn, ROUNDS times (machines differ by ~20 % between
# calls, so only runs of one call are compared). A variant is "default" or switches joined
# by "+", e.g. "HARK_BATCH_MEL=cpu" or "OFFLINE_COMPUTE=fp8+HARK_BATCH_PREFILL=each".
# Prints each run's rate, steady rate and the scheduler's counters line, and keeps every
# run's results.md in $OUT/offline-ab.md (the device tool brings back few files).
#   OFFLINE_VARIANTS="default HARK_BATCH_MEL=cpu" ROUNDS=2 bash scripts/device/offline-ab.sh
# Other env: OFFLINE_FILES (default 4096: the ramp is ~2 s of the run), OFFLINE_PARALLEL
# (default 256), and the rest of run-all.sh offline-bench's OFFLINE_* settings.
set -uo pipefail
OUT=${OUT:-/tmp/hark-device-out}
mkdir -p "$OUT"
export OFFLINE_FILES=${OFFLINE_FILES:-4096} OFFLINE_PARALLEL=${OFFLINE_PARALLEL:-256}
all=$OUT/offline-ab.md
echo "# offline-ab, $(date -u '+%Y-%m-%d %H:%M UTC'), $OFFLINE_FILES files, --parallel $OFFLINE_PARALLEL" | tee "$all"
nvidia-smi --query-gpu=name,memory.total,power.limit --format=csv,noheader | tee -a "$all"
for round in $(seq 1 "${ROUNDS:-1}"); do
  for variant in ${OFFLINE_VARIANTS:-default}; do
    switches=(HARK_AB_VARIANT="$variant")
    [[ $variant == default ]] || IFS=+ read -r -a switches <<<"$variant"
    run_out=/tmp/hark-offline-ab-run
    rm -rf "$run_out"
    env "${switches[@]}" OUT="$run_out" bash scripts/device/run-all.sh offline-bench >/dev/null 2>&1
    echo "### $variant (round $round)" | tee -a "$all"
    grep -E -- "--parallel|audio s/s|steady|hark: batch" "$run_out/results.md" | tee -a "$all"
    cat "$run_out/results.md" >>"$all"
  done
done
