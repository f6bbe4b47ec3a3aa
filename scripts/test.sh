#!/usr/bin/env bash
# Builds hark and runs the whole test suite twice: an optimised build (with the CUDA
# backend compiled when nvcc is present; GPU tests skip without a GPU), then an
# AddressSanitizer + UndefinedBehaviorSanitizer build; finally each libFuzzer target for a
# bounded time. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${HARK_FUZZ_SECONDS:-60}

echo "== release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHARK_BUILD_TESTS=ON -DHARK_BENCH=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== address + undefined-behaviour sanitizers"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHARK_CUDA=OFF -DHARK_BUILD_TESTS=ON \
  -DHARK_SANITIZE="address;undefined" >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

if [ -f tests/fuzz/CMakeLists.txt ] && command -v clang++ >/dev/null; then
  echo "== fuzzers (${fuzz_seconds}s each)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHARK_CUDA=OFF \
    -DHARK_NATIVE=OFF -DHARK_BUILD_TESTS=ON -DHARK_FUZZ=ON -DHARK_SANITIZE="address;undefined" >/dev/null
  cmake --build build-fuzz -j "$jobs" --target hark_fuzzers
  for f in build-fuzz/tests/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    corpus="tests/fuzz/corpus/$(basename "$f")"
    mkdir -p "build-fuzz/corpus-$(basename "$f")"
    "$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=10 "build-fuzz/corpus-$(basename "$f")" \
      $( [ -d "$corpus" ] && echo "$corpus" ) 2>&1 | tail -n 3
  done
fi
echo "== all tests passed"
