#!/usr/bin/env bash
# What the open GPU issues still owe, in one device call (168 s on an H100 on 2026-12-07,
# all three parts, part 3 then with 512 requests; 2 048 took 31 s alone; docs/benchmarks.md,
# "Speech-length windows in the closed loop"; what is left is part 1 on an H200: PARTS=offline,
# and part 3 there too),
# so that a session that gets a machine spends it on one command:
#   1. issue 14's archive job (4 096 × 30 s, large-v3-turbo shape f16, `--parallel 256`),
#      twice (offline-ab.sh): the H200 figure against the ≥ 5 000 audio s/s target;
#   2. the bundled model's GPU tests (run-all.sh toy), which confirm the toy fast-path
#      guard that counts the greedy runs (tests/unit/gpu/toy_fast_path_test.cc);
#   3. a closed loop of 64 clients sending 10–60 s clips (2 048 requests, after a warm-up of one
#      request a client in the same stream: the steady state, docs/benchmarks.md "The closed
#      loop in steady state") with `sample_len=100` and `without_timestamps=true`
#      (run-all.sh batching-bench, the batching server alone): every window moves on 30 s,
#      as speech's windows nearly do, where random weights with timestamps move them ~18 s;
#   4. ("ahead") the same closed loop with and without HARK_ENCODE_AHEAD=1, alternated, twice
#      (server-ab.sh): whether queueing a run's next window while the current one decodes
#      shortens the two-window clips' tail (docs/batching.md, "The next window, encoded
#      ahead"); its default rounds are part 3 again.
# Carry as for the toy call (the tree slimmed, the model compressed):
#   BUNDLE_BINS="hark_test_gpu hark" bash scripts/device/bundle.sh
#   MODEL_XZ=1 bash scripts/device/slim-tree.sh toy
#   device run: bash scripts/device/pending.sh
#     carry [".device-carry/bundle.tar.xz", ".device-carry/model.safetensors.xz"]
#   bash scripts/device/slim-tree.sh off
# Each part's results go under $OUT (offline-ab.md, toy/, closed/) and its headline lines
# to stdout. PARTS (default "offline ahead": part 2 passed on 2026-12-07, part 4 holds part 3)
# picks the parts.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/hark-device-out}
mkdir -p "$OUT"
# The toy carry leaves jfk.wav out; the clips of the server and archive loads are cut from
# one of the bundled model's clips instead (random weights: the audio only sets lengths).
export SOURCE_CLIP=${SOURCE_CLIP:-tests/data/toy-eval/en-multi-07.wav}
for part in ${PARTS:-offline ahead}; do
  case $part in
    offline)
      OUT=$OUT OFFLINE_VARIANTS=default ROUNDS=${ROUNDS:-2} bash scripts/device/offline-ab.sh >/dev/null 2>&1
      grep -E "^#|audio s/s|steady" "$OUT/offline-ab.md"
      ;;
    toy)
      OUT=$OUT/toy bash scripts/device/run-all.sh toy >"$OUT/toy.log" 2>&1
      echo "toy: exit $?"
      grep -E "FAILED|judged|identical" "$OUT/toy/results.md" | head -20
      ;;
    closed)
      OUT=$OUT/closed SERVERS=0 BATCH_REQUESTS=2048 EXTRA_FIELDS="sample_len=100 without_timestamps=true" \
        bash scripts/device/run-all.sh batching-bench >"$OUT/closed.log" 2>&1
      echo "closed loop without timestamps: exit $?"
      grep -E "synthetic:" "$OUT/closed/results.md"
      ;;
    ahead)
      OUT=$OUT/ahead SERVER_VARIANTS="default HARK_ENCODE_AHEAD=1" ROUNDS=2 BATCH_REQUESTS=2048 \
        EXTRA_FIELDS="sample_len=100 without_timestamps=true" bash scripts/device/server-ab.sh >"$OUT/ahead.log" 2>&1
      echo "closed loop, the next window encoded ahead or not: exit $?"
      grep -E "^###|synthetic:|all:| s: n |ahead" "$OUT/ahead/server-ab.md"
      ;;
    *) echo "pending.sh: unknown part $part (offline, toy, closed, ahead)"; exit 2 ;;
  esac
done
