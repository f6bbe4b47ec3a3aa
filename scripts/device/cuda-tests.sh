#!/usr/bin/env bash
# Builds the core + model libraries with the CUDA backend on the GPU machine and runs
# their tests there (CUDA op tests, model parity on the GPU, compute-sanitizer).
# The GPU machine has CUDA, cmake and a compiler but not Debian's libraries: the few the
# core needs travel as .deb files in .device-carry/cudadebs (see docs/parity.md) and are
# unpacked into a private prefix.
set -uo pipefail
P=/tmp/hark-deps
mkdir -p "$P"
for f in .device-carry/cudadebs/*.deb; do dpkg -x "$f" "$P"; done
lib=$P/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_SYSROOT_DIR=$P PKG_CONFIG_PATH=$lib/openblas-pthread/pkgconfig
export LD_LIBRARY_PATH=$lib/openblas-pthread:$lib:${LD_LIBRARY_PATH:-}
ln -sf libopenblasp-r0.3.21.so "$lib/openblas-pthread/libopenblas.so.0"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHARK_CORE_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH="$P/usr" -DZLIB_INCLUDE_DIR="$P/usr/include" -DZLIB_LIBRARY="$lib/libz.a" \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >"$OUT/cmake.log" 2>&1 \
  || { tail -40 "$OUT/cmake.log"; exit 1; }
cmake --build build-gpu -j 16 >"$OUT/build.log" 2>&1 || { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./build-gpu/tests/hark_test_cuda 2>&1 | tail -15
HARK_PARITY_LARGE=1 ./build-gpu/tests/hark_test_model --gtest_filter='*cuda*' --gtest_output=xml:"$OUT/parity.xml" 2>&1 | tail -12
grep -E 'property name' "$OUT/parity.xml"
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --leak-check full ./build-gpu/tests/hark_test_cuda 2>&1 | tail -6
  compute-sanitizer --tool memcheck ./build-gpu/tests/hark_test_model --gtest_filter='*tiny_cuda*' 2>&1 | tail -4
fi
