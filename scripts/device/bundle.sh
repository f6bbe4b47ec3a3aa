#!/usr/bin/env bash
# Builds hark for the GPU machine on this (Debian 12) machine and gathers what it needs
# into .device-carry/bundle.tar.xz (git-ignored; the device tool carries it; 17 MB where
# the files are 70 MB, most of it OpenBLAS):
#   bin/    hark and the CUDA module libhark_cuda.so
#   tests/  the test binaries that run there (CUDA ops, model parity, fast path)
#   lib/    every shared library they load that a bare CUDA host lacks (not glibc,
#           libstdc++ or CUDA's own libraries, which the host has in newer versions)
# The build leaves FFmpeg out (-DHARK_FFMPEG=OFF: WAV input only; that host has no
# FFmpeg), uses OpenBLAS for CPU products (oneDNN's library alone is 40 MB), targets
# x86-64-v3 instead of this CPU, and compiles the kernels for sm_90a (H100/H200, wgmma included).
#   bash scripts/device/bundle.sh            then, on the device:  bash scripts/device/run-all.sh
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/../.."
build=build-device
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHARK_FFMPEG=OFF -DHARK_GEMM=openblas -DHARK_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS="-march=x86-64-v3" -DCMAKE_C_FLAGS="-march=x86-64-v3" -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DHARK_BUILD_TESTS=ON >/dev/null
# BUNDLE_BINS: the programs carried (default all four). The toy call's carry holds the 46 MB
# bundled model beside the bundle, and the whole bundle does not fit with it: there
# BUNDLE_BINS="hark_test_gpu hark" (run-all.sh toy's tests, transcribe and bench). Only these
# are built.
bins=${BUNDLE_BINS:-"hark hark_test_cuda hark_test_gpu hark_test_model"}
# shellcheck disable=SC2086  # the list is split on purpose
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target hark_cuda_module $bins
out=.device-carry/bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/tests" "$out/lib"
pwd >"$out/source_dir"  # the binaries look for test data and models there (run-all.sh links it)
# What the binaries were built from: the commit, and whether the tree differed from it.
{ git rev-parse --short HEAD; git diff --quiet HEAD -- src include CMakeLists.txt cmake || echo "(with uncommitted changes)"; } \
  | paste -sd' ' >"$out/source_commit"
cp "$build/bin/libhark_cuda.so" "$out/bin/"
for b in $bins; do
  case $b in
    hark) cp "$build/bin/hark" "$out/bin/" ;;
    hark_test_*) cp "$build/tests/$b" "$out/tests/" ;;
    *) echo "bundle.sh: unknown program $b in BUNDLE_BINS"; exit 2 ;;
  esac
done
# STRIP=0 keeps the symbols (a backtrace under cuda-gdb names the functions; run-all.sh backtrace).
[[ ${STRIP:-1} == 0 ]] || strip --strip-unneeded "$out"/bin/* "$out"/tests/*
for f in "$out"/bin/* "$out"/tests/*; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
du -sh "$out" "$out"/*
tar -C .device-carry -cf - bundle | xz -T2 -9e >.device-carry/bundle.tar.xz
rm -rf "$out"
ls -l .device-carry/bundle.tar.xz
