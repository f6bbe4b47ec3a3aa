#!/usr/bin/env bash
# The README's main job: the bundled model transcribes the bundled clip, word for word,
# and CLI misuse fails with a clear message and the documented exit codes.
set -uo pipefail
hark=$1
err=$(mktemp)
root=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0
check() {  # name, condition result
  if [ "$2" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1"; fi
}

out=$("$hark" transcribe "$root/tests/data/toy-eval/en-single-01.wav" --model "$root/models/hark-toy-speech" 2>/dev/null)
text=$(printf '%s' "$out" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
[ "$text" = "We were surrounded by darkness." ]
check "main job text (got: '$text')" $?

"$hark" transcribe "$root/tests/data/toy-eval/en-single-01.wav" --model /nonexistent/model >/dev/null 2>"$err"
rc=$?
[ $rc -ne 0 ] && grep -q "hark: error" "$err"
check "missing model is a clear error (rc $rc)" $?

"$hark" transcribe /nonexistent.wav --model "$root/models/hark-toy-speech" >/dev/null 2>"$err"
rc=$?
[ $rc -ne 0 ] && grep -q "hark: error" "$err"
check "missing audio is a clear error (rc $rc)" $?

# A GPU compute type on the CPU is refused before anything loads, and says what to use.
"$hark" transcribe "$root/tests/data/toy-eval/en-single-01.wav" --model "$root/models/hark-toy-speech" \
  --device cpu --compute-type fp8 >/dev/null 2>"$err"
rc=$?
[ $rc -ne 0 ] && grep -q "GPU compute type" "$err" && grep -q "on the CPU use" "$err"
check "fp8 on the CPU is a clear error (rc $rc: $(head -c 200 "$err"))" $?
rm -f "$err"

"$hark" probe "$root/tests/data/audio/jfk.wav" >/dev/null 2>&1
check "probe runs" $?

echo "cli: $passed passed, $failed failed"
[ "$failed" = 0 ]
