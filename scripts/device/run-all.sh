#!/usr/bin/env bash
# Everything the GPU fast path is judged by, in one call on the GPU machine (one H200):
# the CUDA op tests, fp32 parity against the oracle goldens, the fast-path rules (f16 and
# bf16 against fp32, synthetic shapes and the bundled model), compute-sanitizer memcheck
# and racecheck, hark's benchmarks and transformers' beside them. Needs the bundle of
# scripts/device/bundle.sh (.device-carry/bundle.tar.xz, carried). Writes $OUT/results.md
# plus logs and JSON.
#   bash scripts/device/run-all.sh [quick|full|profile]
#     quick: tests on tiny + the bundled model, one f16 benchmark (no sanitizer, no peers)
#     check: compute-sanitizer (memcheck, racecheck) on the CUDA tests, and Nsight
#            Compute's duration of every kernel of a turbo f16 bench (encoder windows,
#            decoder steps) as CSV for scripts/device/kernel_table.py
#     toy:   the bundled model alone (its fast-path tests, batching tests, hark transcribe and
#            serve, bench toy_f16; TOY_TESTS the test filter, TOY_COMPUTES the bench's compute
#            types, default f16): the 46 MB checkpoint and the bundle fill the carry
#            limit, so this call carries only what it reads (scripts/device/slim-tree.sh toy;
#            where even that is over the limit, MODEL_XZ=1 slim-tree.sh toy and carry
#            .device-carry/model.safetensors.xz too: unpacked below)
#     (the bundled model travels only with slim-tree.sh toy; batching and multi-gpu read it
#      too: carry as for toy, and pass SOURCE_CLIP=tests/data/toy-eval/en-multi-07.wav to the
#      server benchmarks, whose default clip that carry leaves out)
#     batching: the batching scheduler on the GPU (hark_test_gpu's BatchingOnTheGpu:
#            concurrent requests against one at a time, f16 and f32)
#     batching-bench: the batching server against --max-batch 1 under 64 clients sending
#            10-60 s clips (scripts/bench-batching.sh, large-v3-turbo shape f16); env
#            BATCH_CONCURRENCY, BATCH_REQUESTS, BATCH_CLIPS ("30": offline-like 30 s windows),
#            BATCH_COMPUTE (the compute type, default f16), RATES (open loop: requests per
#            second, a run each; scripts/bench-batching.sh)
#     offline-bench: hark transcribe --manifest --parallel over many 30 s files (an archive
#            job, no server) against one file at a time; env OFFLINE_* (below)
#     multi-gpu: the batching server on one GPU against every GPU (--device cuda:0, then
#            cuda:all) under the same load (machine kind nvidia-h200-x2); env as batching-bench,
#            default 128 clients and 512 requests
#     ab:    large-v3-turbo f16 bench (batch 1, end to end) with the CUDA module of this
#            bundle against .device-carry/module-a.so.xz (an earlier build's
#            libhark_cuda.so; the Backend interface must be the same), alternating A B A B,
#            then this module under each measurement switch in AB_SWITCHES
#     focus: one change judged quickly: hark_test_cuda filtered by FOCUS_TESTS (default
#            *Attention*; "-" skips) under each of FOCUS_OPS_SWITCHES, hark_test_gpu by FOCUS_GPU_TESTS (default: the tiny fast-path
#            rules; "-" skips), the turbo f16 bench at FOCUS_BATCHES (default 1,32) under
#            each of FOCUS_SWITCHES ("default" = none; FOCUS_BENCH_ARGS added, e.g.
#            "--step-windows 48"; FOCUS_CLIP the e2e clip, default jfk.wav; FOCUS_COMPUTES the
#            compute types, default f16, e.g. "f16 fp8"), and with FOCUS_NCU_BATCHES set, Nsight
#            Compute's kernel table of one bench run at those encoder batches (FOCUS_NCU_ARGS
#            added, FOCUS_NCU_COMPUTE the compute type); FOCUS_GPU_ENV switches for the GPU
#            tests (HARK_PARITY_LARGE=1: base and turbo too); FOCUS_SANITIZE (a filter of the
#            CUDA op tests) runs them under memcheck and racecheck, FOCUS_SANITIZE_GPU (of the
#            GPU tests) under memcheck
#     backtrace: cuda-gdb's stacks at a host crash of the focus bench and of BT_GPU_TESTS (BT_ENV
#            the switches; bundle built with STRIP=0)
#     validate: the kernels behind switches (docs/gpu.md): the fast-path tests under each
#            switch, then focus with their op tests and the bench under each
#   (full runs everything but the check and batching parts; run each in a call of its own)
set -uo pipefail
mode=${1:-full}
OUT=${OUT:-/tmp/hark-device-out}
mkdir -p "$OUT"
root=$(pwd)
bundle=/tmp/hark-bundle/bundle
if [[ ! -x $bundle/bin/hark ]]; then
  mkdir -p /tmp/hark-bundle
  python3 -c "import tarfile; tarfile.open('.device-carry/bundle.tar.xz').extractall('/tmp/hark-bundle')" ||
    { echo "no bundle: run scripts/device/bundle.sh here first and carry .device-carry/bundle.tar.xz"; exit 1; }
fi
# The bundled model carried compressed (slim-tree.sh toy with MODEL_XZ=1, when the bundle
# and the model do not fit the carry limit side by side).
toy_weights=models/hark-toy-speech/model.safetensors
if [[ ! -f $toy_weights && -f .device-carry/model.safetensors.xz ]]; then
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
    .device-carry/model.safetensors.xz "$toy_weights" || { echo "could not unpack the bundled model"; exit 1; }
fi
# The binaries find test data and assets in the tree they were built from (/work/main, or
# the worktree bundle.sh ran in, which the bundle names in source_dir).
built_in=$(cat "$bundle/source_dir" 2>/dev/null || echo /work/main)
if [[ $root != "$built_in" && ! -e $built_in ]]; then mkdir -p "$(dirname "$built_in")" && ln -s "$root" "$built_in"; fi
cuda_lib=$(dirname "$(python3 -c 'import nvidia.cu13, os; print(os.path.join(nvidia.cu13.__path__[0], "lib", "x"))' 2>/dev/null || echo /usr/local/cuda/lib64/x)")
export LD_LIBRARY_PATH=$bundle/lib:/usr/local/cuda/lib64:$cuda_lib:${LD_LIBRARY_PATH:-}
export HARK_CUDA_MODULE=$bundle/bin/libhark_cuda.so
results=$OUT/results.md
# The device tool brings back at most 8 files: at exit everything is packed into
# results.tar.gz, with results.md beside it.
pack() {
  local tmp=/tmp/hark-results.tar.gz
  (cd "$OUT" && tar -czf "$tmp" --exclude=results.tar.gz . && find . -mindepth 1 -maxdepth 1 ! -name results.md -exec rm -rf {} +)
  mv "$tmp" "$OUT/results.tar.gz"
}
trap pack EXIT
hark=$bundle/bin/hark
section() { echo; echo "## $*" | tee -a "$results"; }
run() {  # name, timeout seconds, command...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "- \`$name\`: exit $rc, $((SECONDS - t0)) s" | tee -a "$results"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|tests ran|^\[toy fast path|^\[batching on the GPU|^(mel|encoder|decoder|window|end to end|cold start|model|transformers) ' "$OUT/$name.log" | head -60 | sed 's/^/    /' | tee -a "$results"
  return $rc
}
# compute-sanitizer's TOOL over a test binary, gtest FILTER ("" for every test), then any
# options of compute-sanitizer's own; its summary lines go to results.md.
sanitize() {  # name, tool, binary, filter, options...
  local name=$1 tool=$2 binary=$3 filter=$4
  shift 4
  local tests=()
  [[ -n $filter ]] && tests=(--gtest_filter="$filter")
  run "$name" 300 compute-sanitizer --tool "$tool" "$@" --error-exitcode 9 "$binary" "${tests[@]}"
  tail -3 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$results"
}
{
  echo "# hark on the GPU machine, $(date -u +%F' '%H:%M) UTC ($mode)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
  # The bundle's own record (bundle.sh): the device copy's git HEAD can lag behind it.
  echo "bundle built from: $(cat "$bundle/source_commit" 2>/dev/null || echo unknown)"
} | tee "$results"
# On Hopper GPUs (compute capability 9.0) the wgmma kernels must be there: a test that finds
# them unavailable fails instead of skipping (CudaOps.EncoderSelfAttention).
[[ $(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1) == 9.0 ]] && export HARK_EXPECT_WGMMA=1
missing=$(ldd "$hark" "$HARK_CUDA_MODULE" | grep 'not found' | sort -u)
[[ -n $missing ]] && { echo "missing libraries: $missing" | tee -a "$results"; exit 1; }

if [[ $mode == check ]]; then
  section "compute-sanitizer"
  sanitize memcheck memcheck "$bundle/tests/hark_test_cuda" "" --leak-check full
  sanitize racecheck racecheck "$bundle/tests/hark_test_cuda" '*/f16:-*Linear*:*Packed*'
  sanitize memcheck_graphs memcheck "$bundle/tests/hark_test_gpu" '*RecordedSteps*tiny_f16*:*BatchedWindows*tiny_f16*'
  [[ ${NCU:-1} == 0 ]] && { echo "done in $SECONDS s" | tee -a "$results"; exit 0; }
  section "kernel durations (ncu, large-v3-turbo f16: 2 encoder windows, decoder steps at batch 1 and 5)"
  for variant in gemv lt; do  # the few-row products through gemv.cu, then through cuBLASLt
    HARK_CUDA_GEMV=$variant ncu --clock-control none --graph-profiling node --csv --page raw \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      "$hark" bench --device cuda --model synthetic:large-v3-turbo --dtype f16 --compute-type f16 --runs 1 --tokens 3 \
      >"$OUT/ncu-$variant.csv" 2>"$OUT/ncu-$variant.err"
    echo "- ncu ($variant): exit $?, $(wc -l <"$OUT/ncu-$variant.csv") lines" | tee -a "$results"
  done
  tail -3 "$OUT/ncu.err" | sed 's/^/    /' | tee -a "$results"
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

if [[ $mode == batching ]]; then
  section "batching: concurrent requests against one at a time on the GPU"
  run batching_tests 540 "$bundle/tests/hark_test_gpu" --gtest_filter='*BatchingOnTheGpu*' \
    --gtest_output=xml:"$OUT/batching_tests.xml"
  grep -hoE 'name="[^"]+" value="[^"]+"' "$OUT/batching_tests.xml" 2>/dev/null | sed 's/^/    /' | tee -a "$results"
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi
if [[ $mode == batching-bench ]]; then
  section "batching server against --max-batch 1 (large-v3-turbo shape ${BATCH_COMPUTE:-f16}, ${BATCH_CONCURRENCY:-64} clients, ${BATCH_CLIPS:-10-60} s clips)"
  HARK=$hark DEVICE=cuda THREADS=4 CONCURRENCY=${BATCH_CONCURRENCY:-64} REQUESTS=${BATCH_REQUESTS:-128} ROUNDS=1 \
    CLIP_SECONDS=${BATCH_CLIPS:-"10 15 20 25 30 40 50 60"} EXTRA_SERVE="--compute-type ${BATCH_COMPUTE:-f16}" OUT="$OUT/bench-batching" \
    timeout 540 bash scripts/bench-batching.sh synthetic:large-v3-turbo 2>&1 | tee "$OUT/bench_batching.log" |
    sed 's/^/    /' | tee -a "$results"
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

# offline-bench: an archive job without a server: `hark transcribe --manifest` over
# OFFLINE_FILES 30 s files (default 2048, symlinks to one clip cut from SOURCE_CLIP) with
# --parallel for each of OFFLINE_PARALLEL (default "256 1"; 1 = one file at a time, over
# OFFLINE_FILES_ONE files, default 256), large-v3-turbo shape in OFFLINE_COMPUTE (default
# f16), real-length decoding as batching-bench's offline load (one window a file, text
# only, OFFLINE_TOKENS tokens, default 100; temperature 0 without fallback, language
# given), OFFLINE_MAX_BATCH rows (default 256) and OFFLINE_ENCODE_BATCH windows per
# encoder call (default 32). Reports the summary line, audio s/s without the model load, the
# steady rate (the scheduler's trace every 250 ms, HARK_BATCH_TRACE_MS: windows from the
# 400th to the last 250, past the batch's first filling and its drain) and the scheduler's
# counters; the log (offline-parallel-N.log) keeps the trace, without the per-file lines.
if [[ $mode == offline-bench ]]; then
  section "offline: transcribe --manifest --parallel (large-v3-turbo shape ${OFFLINE_COMPUTE:-f16}, 30 s files, ${OFFLINE_TOKENS:-100} tokens a window)"
  dir=/tmp/hark-offline
  rm -rf "$dir" && mkdir -p "$dir/clips"
  python3 scripts/cut-clips.py "${SOURCE_CLIP:-tests/data/audio/jfk.wav}" "$dir" 30
  files=${OFFLINE_FILES:-2048}
  for i in $(seq -w 1 "$files"); do ln -s ../clip-030.wav "$dir/clips/c$i.wav"; done
  for p in ${OFFLINE_PARALLEL:-256 1}; do
    n=$files
    [[ $p == 1 ]] && n=${OFFLINE_FILES_ONE:-256}
    ls "$dir"/clips/*.wav | head -n "$n" >"$dir/list-$p.txt"
    t0=$SECONDS
    HARK_BATCH_TRACE_MS=${HARK_BATCH_TRACE_MS:-250} timeout 500 "$hark" transcribe --manifest "$dir/list-$p.txt" \
      --output-dir "$dir/out-$p" --no-progress \
      --model synthetic:large-v3-turbo --device cuda --compute-type "${OFFLINE_COMPUTE:-f16}" --language en \
      --without-timestamps --sample-len "${OFFLINE_TOKENS:-100}" --temperature 0 --temperature-increment-on-fallback none \
      --parallel "$p" --max-batch "${OFFLINE_MAX_BATCH:-256}" --encode-batch "${OFFLINE_ENCODE_BATCH:-32}" \
      2> >(grep -v '] done ' >"$OUT/offline-parallel-$p.log") >/dev/null
    rc=$?
    sleep 1  # the log's filter finishes
    line=$(grep -o 'summary .*' "$OUT/offline-parallel-$p.log" | tail -1)
    echo "- --parallel $p, $n files: exit $rc, $((SECONDS - t0)) s; $line" | tee -a "$results"
    python3 - "$line" <<'PY' | tee -a "$results"
import re, sys
f = dict(re.findall(r"(\w+)=([0-9.]+)", sys.argv[1]))
if f:
    audio = float(f["audio_hours"]) * 3600
    print(f"    audio s/s without the model load: {audio / max(1e-9, float(f['wall_sec']) - float(f['load_sec'])):.0f}"
          f" ({audio:.0f} s of audio, load {f['load_sec']} s)")
PY
    python3 - "$OUT/offline-parallel-$p.log" <<'PY' | tee -a "$results"
import re, sys
points = []
for text in open(sys.argv[1], errors="replace"):
    if "batch-trace" in text:
        f = dict(re.findall(r"(\w+)=([0-9.]+)", text))
        points.append((float(f["t"]), int(f["windows"])))
if points:
    last = points[-1][1]
    inside = [p for p in points if 400 <= p[1] <= last - 250]
    if len(inside) >= 2 and inside[-1][0] > inside[0][0]:
        (t0, w0), (t1, w1) = inside[0], inside[-1]
        rate = (w1 - w0) / (t1 - t0)
        print(f"    steady: {rate:.1f} windows/s, {30 * rate:.0f} audio s/s (windows {w0}..{w1} over {t1 - t0:.2f} s)")
PY
    grep -h 'hark: batch ' "$OUT/offline-parallel-$p.log" | sed 's/^/    /' | tee -a "$results"
  done
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | sed 's/^/    after: /' | tee -a "$results"
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

# backtrace: where a host crash happens. cuda-gdb (the image has no gdb; it debugs host code
# too) runs the focus bench (default switches, BT_ENV added) and hark_test_gpu filtered by
# BT_GPU_TESTS (under BT_ENV too) and prints every thread's stack at the fault. Build the
# bundle with STRIP=0 so that the frames have names.
if [[ $mode == backtrace ]]; then
  section "backtraces at a crash (cuda-gdb)"
  gdb_bt=(cuda-gdb -q -batch -ex run -ex bt -ex "info registers rip" -ex "thread apply all bt 8" --args)
  IFS=+ read -r -a bt_env <<<"${BT_ENV:-HARK_BT=1}"
  run bt_bench 240 env "${bt_env[@]}" "${gdb_bt[@]}" "$hark" bench --device cuda --runs 2 --model synthetic:large-v3-turbo \
    --dtype f16 --compute-type f16 --batches "${FOCUS_BATCHES:-1,32}" --clip "${FOCUS_CLIP:-tests/data/audio/jfk.wav}" --e2e --e2e-tokens 30
  grep -E -A30 'SIGSEGV|SIGABRT|signal' "$OUT/bt_bench.log" | head -80
  if [[ -n ${BT_GPU_TESTS:-} ]]; then
    run bt_gpu_tests 240 env "${bt_env[@]}" "${gdb_bt[@]}" "$bundle/tests/hark_test_gpu" --gtest_filter="$BT_GPU_TESTS"
    grep -E -A30 'SIGSEGV|SIGABRT|signal' "$OUT/bt_gpu_tests.log" | head -80
  fi
  exit 0
fi
# validate: the kernels behind switches (docs/gpu.md; VALIDATE_SWITCHES, default the
# switches back from the newest defaults, HARK_CUDA_FLASH=wgmma and HARK_CUDA_L2_HINTS=0):
# their op tests, the fast-path tests with none
# (HARK_FOCUS_NONE=1) and under each switch, and the focus bench under each, alternating with the default.
if [[ $mode == validate ]]; then
  section "opt-in kernels: fast-path tests under each switch"
  for sw in HARK_FOCUS_NONE=1 ${VALIDATE_SWITCHES:-HARK_CUDA_FLASH=wgmma HARK_CUDA_L2_HINTS=0}; do
    run "fast_path_${sw//=/_}" 300 env "$sw" "$bundle/tests/hark_test_gpu" \
      --gtest_filter="${VALIDATE_GPU_TESTS:-*WithinTwoTokens*tiny*:*WithinTwoTokens*base*:*RecordedSteps*tiny*:*RecordedEncoder*:*BatchedWindows*:*GreedyAhead*tiny*:*EveryClipWithinTwoTokens*}"
  done
  mode=focus
  : "${FOCUS_TESTS:=*EncoderSelfAttention*:*FusedSelf*:*CachedAttention*:*OneRow*:*Gather*}"
  : "${FOCUS_GPU_TESTS:=-}"
  : "${FOCUS_SWITCHES:=default ${VALIDATE_SWITCHES:-HARK_CUDA_FLASH=wgmma HARK_CUDA_L2_HINTS=0} default ${VALIDATE_SWITCHES:-HARK_CUDA_FLASH=wgmma HARK_CUDA_L2_HINTS=0}}"
fi
if [[ $mode == focus ]]; then
  # Hopper's own matrix instructions in the module: HGMMA (wgmma) beside HMMA (mma.sync).
  echo "SASS of the CUDA module: $(cuobjdump --dump-sass "$HARK_CUDA_MODULE" 2>/dev/null | grep -c HGMMA) HGMMA," \
    "$(cuobjdump --dump-sass "$HARK_CUDA_MODULE" 2>/dev/null | grep -c HMMA) HMMA instructions" | tee -a "$results"
  section "focus: CUDA ops ${FOCUS_TESTS:-*Attention*}"
  if [[ ${FOCUS_TESTS:-} != - ]]; then
    # Under each of FOCUS_OPS_SWITCHES ("default" = none; "A=1+B=2" both at once).
    for variant in ${FOCUS_OPS_SWITCHES:-default}; do
      [[ $variant == default ]] && variant=HARK_FOCUS_NONE=1
      IFS=+ read -r -a variant_env <<<"$variant"
      echo "  under ${variant}:" | tee -a "$results"
      run "cuda_ops_${variant//=/_}" 300 env "${variant_env[@]}" "$bundle/tests/hark_test_cuda" \
        --gtest_filter="${FOCUS_TESTS:-*Attention*}"
      grep -E '^\[ wgmma' "$OUT/cuda_ops_${variant//=/_}.log" | head -12 | sed 's/^/    /' | tee -a "$results"
    done
  fi
  if [[ ${FOCUS_GPU_TESTS:-} != - ]]; then
    # FOCUS_GPU_ENV: switches for them, e.g. HARK_PARITY_LARGE=1 (the base and turbo shapes too).
    IFS=+ read -r -a gpu_env <<<"${FOCUS_GPU_ENV:-HARK_FOCUS_NONE=1}"
    run gpu_tests 300 env "${gpu_env[@]}" "$bundle/tests/hark_test_gpu" --gtest_filter="${FOCUS_GPU_TESTS:-*FastPath*tiny*}"
  fi
  # compute-sanitizer on the change's own tests: memcheck and racecheck over the CUDA op tests
  # of FOCUS_SANITIZE, memcheck over the GPU tests of FOCUS_SANITIZE_GPU (gtest filters).
  if [[ -n ${FOCUS_SANITIZE:-} ]]; then
    section "focus: compute-sanitizer on $FOCUS_SANITIZE ${FOCUS_SANITIZE_GPU:-}"
    sanitize focus_memcheck memcheck "$bundle/tests/hark_test_cuda" "$FOCUS_SANITIZE"
    sanitize focus_racecheck racecheck "$bundle/tests/hark_test_cuda" "$FOCUS_SANITIZE"
    [[ -n ${FOCUS_SANITIZE_GPU:-} ]] && sanitize focus_memcheck_gpu memcheck "$bundle/tests/hark_test_gpu" "$FOCUS_SANITIZE_GPU"
  fi
  section "focus: turbo bench under each switch, in each of FOCUS_COMPUTES (${FOCUS_COMPUTES:-f16})"
  reasons=clocks_event_reasons.active  # the older drivers' name below
  nvidia-smi --query-gpu=$reasons --format=csv >/dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  for compute in ${FOCUS_COMPUTES:-f16}; do
  for variant in ${FOCUS_SWITCHES:-default}; do
    [[ $variant == default ]] && variant=HARK_FOCUS_NONE=1
    [[ $compute == f16 ]] || variant="$variant+HARK_FOCUS_COMPUTE=$compute"  # names the logs
    # The SM clock, power and throttle reasons every 100 ms while the bench runs.
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,$reasons --format=csv,noheader \
      -lms 100 >"$OUT/smi_${variant//=/_}.csv" 2>/dev/null &
    smi=$!
    IFS=+ read -r -a variant_env <<<"$variant"  # "A=1+B=2": both switches in one run
    run "bench_${variant//=/_}" 300 env "${variant_env[@]}" "$hark" bench --device cuda --runs 10 \
      --model synthetic:large-v3-turbo --dtype f16 --compute-type "$compute" --batches "${FOCUS_BATCHES:-1,32}" \
      --clip "${FOCUS_CLIP:-tests/data/audio/jfk.wav}" --e2e --e2e-tokens 30 ${FOCUS_BENCH_ARGS:-} --json "$OUT/bench_${variant//=/_}.json"
    kill "$smi" 2>/dev/null
    python3 - "$OUT/smi_${variant//=/_}.csv" <<'PY' | sed 's/^/    /' | tee -a "$results"
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if l.count(",") >= 3]
busy = [(float(r[1].split()[0]), float(r[2].split()[0]), r[3].strip()) for r in rows
        if r[2].split()[0].replace(".", "").isdigit() and float(r[2].split()[0]) > 250]
if busy:
    clocks = sorted(c for c, _, _ in busy)
    print(f"under load ({len(busy)} samples > 250 W): SM clock min {clocks[0]:.0f} / median {clocks[len(clocks)//2]:.0f} MHz, "
          f"power max {max(p for _, p, _ in busy):.0f} W, reasons {sorted(set(r for _, _, r in busy))}")
else:
    print(f"{len(rows)} samples, none above 250 W")
PY
  done
  done
  if [[ -n ${FOCUS_NCU_BATCHES:-} ]]; then
    section "focus: kernel table (ncu, encoder batches $FOCUS_NCU_BATCHES, 3 steps)"
    ncu --clock-control none --graph-profiling node --csv --page raw \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      "$hark" bench --device cuda --model synthetic:large-v3-turbo --dtype f16 --compute-type "${FOCUS_NCU_COMPUTE:-f16}" --runs 1 \
      --tokens 3 --batches "$FOCUS_NCU_BATCHES" ${FOCUS_NCU_ARGS:-} >"$OUT/ncu-focus.csv" 2>"$OUT/ncu-focus.err"
    echo "- ncu: exit $?" | tee -a "$results"
    python3 scripts/device/kernel_table.py "$OUT/ncu-focus.csv" >"$OUT/ncu-focus-table.txt" 2>&1
    head -40 "$OUT/ncu-focus-table.txt" | sed 's/^/    /' | tee -a "$results"
  fi
  if [[ -n ${FOCUS_NCU_KERNEL:-} ]]; then
    # One kernel in detail (occupancy, memory throughput, warp stalls), e.g.
    # FOCUS_NCU_KERNEL=cross_split FOCUS_NCU_SKIP=60 FOCUS_NCU_ARGS="--step-windows 48";
    # FOCUS_NCU_KERNEL_BATCHES the encoder batch (default 1), FOCUS_NCU_ENV switches for it
    # ("A=1+B=2").
    section "focus: Nsight Compute details of ${FOCUS_NCU_KERNEL}"
    IFS=+ read -r -a ncu_env <<<"${FOCUS_NCU_ENV:-HARK_FOCUS_NONE=1}"
    env "${ncu_env[@]}" ncu --set full -k "regex:${FOCUS_NCU_KERNEL}" --launch-skip "${FOCUS_NCU_SKIP:-0}" --launch-count 2 \
      --page details "$hark" bench --device cuda --model synthetic:large-v3-turbo --dtype f16 \
      --compute-type f16 --runs 1 --tokens 3 --batches "${FOCUS_NCU_KERNEL_BATCHES:-1}" ${FOCUS_NCU_ARGS:-} \
      >"$OUT/ncu-details.txt" 2>"$OUT/ncu-details.err"
    echo "- ncu details: exit $?" | tee -a "$results"
    # Where the warps wait, and how busy each pipe is (the chart of the details page, as numbers).
    env "${ncu_env[@]}" ncu -k "regex:${FOCUS_NCU_KERNEL}" --launch-skip "${FOCUS_NCU_SKIP:-0}" --launch-count 1 --csv --page raw \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__cycles_elapsed.avg" \
      "$hark" bench --device cuda --model synthetic:large-v3-turbo --dtype f16 --compute-type f16 --runs 1 --tokens 3 \
      --batches "${FOCUS_NCU_KERNEL_BATCHES:-1}" ${FOCUS_NCU_ARGS:-} >"$OUT/ncu-stalls.csv" 2>"$OUT/ncu-stalls.err"
    echo "- ncu stalls: exit $?" | tee -a "$results"
    python3 - "$OUT/ncu-stalls.csv" <<'PY' | sed 's/^/    /' | tee -a "$results"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is not None and len(rows) > head + 2:
    names, units, vals = rows[head], rows[head + 1], rows[head + 2]
    for n, u, v in sorted(zip(names, units, vals), key=lambda x: x[0]):
        try:
            if float(v.replace(",", "")) == 0: continue
        except ValueError:
            pass
        print(f"{n} = {v} {u}")
PY
    grep -E "^  [a-z_:<>0-9, ]+\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Issue Slots Busy|One or More Eligible|L2 Hit Rate|Compute \(SM\) Throughput" \
      "$OUT/ncu-details.txt" | head -60 | sed 's/^/    /' | tee -a "$results"
  fi
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

if [[ $mode == ab ]]; then
  section "A/B: an earlier CUDA module (A) against this bundle's (B), large-v3-turbo f16"
  module_a=/tmp/hark-module-a.so
  python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" \
    .device-carry/module-a.so.xz "$module_a" || { echo "no .device-carry/module-a.so.xz" | tee -a "$results"; exit 1; }
  module_b=$HARK_CUDA_MODULE
  ab_bench() {  # name, env...
    local name=$1
    shift
    run "ab_$name" 300 env "$@" "$hark" bench --device cuda --runs 20 --model synthetic:large-v3-turbo --dtype f16 \
      --compute-type f16 --batches 1 --clip tests/data/audio/jfk.wav --e2e --e2e-tokens 30 --json "$OUT/ab_$name.json"
  }
  for round in 1 2; do
    ab_bench "A_$round" HARK_CUDA_MODULE=$module_a
    ab_bench "B_$round" HARK_CUDA_MODULE=$module_b
  done
  for variant in ${AB_SWITCHES:-}; do ab_bench "B_${variant//=/_}" "$variant"; done
  python3 - "$OUT" <<'PY' | tee -a "$results"
import glob, json, os, sys
print("| run | step b1, device choice | step b1, logits to host | step b5, device choice | e2e greedy (decoding) | encoder b1 |")
print("| --- | --- | --- | --- | --- | --- |")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab_*.json"))):
    r = json.load(open(f))
    sel, host, enc = r.get("decoder_select_ms_per_step", {}), r.get("decoder_ms_per_step", {}), r.get("encoder_ms_per_window", {})
    parts = r.get("e2e_greedy_ms_parts", {})
    print(f"| {os.path.basename(f)[3:-5]} | {sel.get('1', 0):.3f} ms | {host.get('1', 0):.3f} ms | {sel.get('5', 0):.3f} ms | "
          f"{r.get('e2e_greedy_ms', 0):.2f} ms ({parts.get('decode', 0):.2f}) | {enc.get('1', 0):.2f} ms |")
PY
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

if [[ $mode == multi-gpu ]]; then
  nvidia-smi -L | sed 's/^/    /' | tee -a "$results"
  section "an engine on the second GPU, used from other threads"
  run two_gpus 300 "$bundle/tests/hark_test_gpu" --gtest_filter='TwoGpus*' --gtest_output=xml:"$OUT/two_gpus.xml"
  section "batching server on one GPU against all GPUs (large-v3-turbo shape f16, 10-60 s clips)"
  conc=${BATCH_CONCURRENCY:-128}
  HARK=$hark DEVICES="cuda:0 cuda:all" SERVERS=0 WARMUP=$conc THREADS=4 CONCURRENCY=$conc \
    REQUESTS=${BATCH_REQUESTS:-512} ROUNDS=${BATCH_ROUNDS:-2} CLIP_SECONDS=${BATCH_CLIPS:-"10 15 20 25 30 40 50 60"} \
    EXTRA_SERVE="--compute-type f16" OUT="$OUT/bench-multi-gpu" \
    timeout 540 bash scripts/bench-batching.sh synthetic:large-v3-turbo 2>&1 | tee "$OUT/bench_multi_gpu.log" |
    sed 's/^/    /' | tee -a "$results"
  echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi

if [[ $mode == toy ]]; then
  section "the bundled model: fast path against fp32, batching against alone"
  run toy_tests 600 "$bundle/tests/hark_test_gpu" --gtest_filter="${TOY_TESTS:-*Toy*:*BatchingOnTheGpu*}" \
    --gtest_output=xml:"$OUT/toy_tests.xml"
  grep -hoE 'name="[^"]+" value="[^"]+"' "$OUT/toy_tests.xml" 2>/dev/null | sed 's/^/    /' | tee -a "$results"
fi
if [[ $mode != toy ]]; then
section "CUDA ops (f32, f16, bf16 against the CPU)"
run cuda_ops 300 "$bundle/tests/hark_test_cuda" --gtest_output=xml:"$OUT/cuda_ops.xml"
section "fp32 parity against transformers (goldens)"
large=()
[[ $mode == full ]] && large=(env HARK_PARITY_LARGE=1)
run parity 600 "${large[@]}" "$bundle/tests/hark_test_model" --gtest_filter='*ModelParity*cuda*:*BatchedDecode*' \
  --gtest_output=xml:"$OUT/parity.xml"
section "fast path against fp32 (synthetic shapes, bundled model)"
# The bundled model travels only in run-all.sh toy's call (slim-tree.sh toy): without it
# its tests are left to that call.
toy_filter=""
[[ -f models/hark-toy-speech/model.safetensors ]] || toy_filter=":*Toy*:TwoGpus*"
run fast_path 900 "${large[@]}" "$bundle/tests/hark_test_gpu" --gtest_filter="-*BatchingOnTheGpu*$toy_filter" \
  --gtest_output=xml:"$OUT/fast_path.xml"
grep -hoE 'name="[^"]+" value="[^"]+"' "$OUT/parity.xml" "$OUT/fast_path.xml" 2>/dev/null | sed 's/^/    /' | tee -a "$results"
fi

if [[ -f models/hark-toy-speech/model.safetensors ]]; then
section "the program on the GPU: hark transcribe and hark serve (bundled model)"
clip_toy=tests/data/toy-eval/en-single-01.wav
run transcribe 120 "$hark" transcribe "$clip_toy" --model models/hark-toy-speech --device cuda --format txt \
  --output-dir "$OUT/transcribe"
cat "$OUT"/transcribe/*.txt 2>/dev/null | sed 's/^/    text: /' | tee -a "$results"
serve_log=$OUT/serve.log
"$hark" serve models/hark-toy-speech --device cuda --port 0 --resident >"$serve_log" 2>&1 &
serve_pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$serve_log" 2>/dev/null | head -1 || true)
  [[ -n $port ]] && break
  sleep 0.2
done
python3 - "$port" "$clip_toy" <<'PY' 2>&1 | sed 's/^/    /' | tee -a "$results"
import sys, urllib.request, uuid
port, clip = sys.argv[1], sys.argv[2]
boundary = uuid.uuid4().hex
body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"clip.wav\"\r\n"
        "Content-Type: audio/wav\r\n\r\n").encode() + open(clip, "rb").read() + f"\r\n--{boundary}--\r\n".encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/audio/transcriptions", data=body,
                             headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
with urllib.request.urlopen(req, timeout=60) as r:
    print("hark serve (cuda):", r.status, r.read().decode()[:200])
PY
kill -TERM "$serve_pid" 2>/dev/null
wait "$serve_pid"
echo "    hark serve exited with $? after SIGTERM" | tee -a "$results"
fi

section "benchmarks (hark bench)"
clip=tests/data/audio/jfk.wav
bench() {  # name, args...
  local name=$1
  shift
  run "bench_$name" 600 "$hark" bench --device cuda --runs 10 --json "$OUT/bench_$name.json" "$@"
}
if [[ $mode == toy ]]; then
  for compute in ${TOY_COMPUTES:-f16}; do
    bench "toy_$compute" --model models/hark-toy-speech --compute-type "$compute" --batches 1,32 \
      --clip tests/data/toy-eval/en-single-01.wav --e2e
  done
  echo; echo "done in $SECONDS s" | tee -a "$results"
  exit 0
fi
bench turbo_f16 --model synthetic:large-v3-turbo --dtype f16 --compute-type f16 --batches 1,8,32 --clip $clip --e2e --e2e-tokens 30
if [[ $mode == quick || $mode == full ]]; then  # the measurement switches, one at a time (docs/gpu.md)
  for variant in HARK_CUDA_PDL=0 HARK_CUDA_GEMV=all HARK_CUDA_GEMV_ONE_ROW=0 HARK_CUDA_GEMV_ONE_ROW=narrow \
      HARK_GREEDY_LAG=0 HARK_PROMPT_ONE_PASS=0 HARK_PROMPT_SELECT=0 HARK_CUDA_FLASH=wide HARK_CUDA_FLASH=narrow; do
    batches=1
    [[ $variant == HARK_CUDA_FLASH=* ]] && batches=1,32  # an encoder switch: the batch-32 window too
    run "bench_turbo_f16_${variant//=/_}" 600 env "$variant" "$hark" bench --device cuda --runs 10 \
      --model synthetic:large-v3-turbo --dtype f16 --compute-type f16 --batches $batches --clip $clip --e2e --e2e-tokens 30
  done
fi
if [[ $mode == full ]]; then
  bench turbo_bf16 --model synthetic:large-v3-turbo --dtype f16 --compute-type bf16 --batches 1,8,32
  bench turbo_f32 --model synthetic:large-v3-turbo --dtype f16 --compute-type f32 --batches 1
  bench tiny_f16 --model synthetic:tiny --dtype f16 --compute-type f16 --batches 1,32 --clip $clip --e2e --e2e-tokens 30
  [[ -f models/hark-toy-speech/model.safetensors ]] &&
    for compute in ${TOY_COMPUTES:-f16}; do
    bench "toy_$compute" --model models/hark-toy-speech --compute-type "$compute" --batches 1,32 \
      --clip tests/data/toy-eval/en-single-01.wav --e2e
  done
  section "transformers fp16 + SDPA on the same machine"
  run transformers 600 python3 scripts/device/transformers_bench.py --size large-v3-turbo --out "$OUT/transformers.json"
fi
echo; echo "done in $SECONDS s" | tee -a "$results"
