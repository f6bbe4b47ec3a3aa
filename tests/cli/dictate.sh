#!/usr/bin/env bash
# `hark dictate --input FILE` (a file played as the microphone) against a one-shot
# transcription of the same file: through a running `hark serve` at real-time pace and as
# fast as possible, --copy/--type through stand-in helpers, in-process (--model). Then the
# failures: the server stopped halfway through a take (the take is saved whole, exit code
# non-zero, one clear line), a server that is not there, no microphone.
# Usage: bash tests/cli/dictate.sh path/to/hark
set -uo pipefail

HARK=${1:?usage: dictate.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
SHORT=$ROOT/tests/data/toy-eval/en-single-05.wav   # 2.8 s, one sentence
LONG=$ROOT/tests/data/toy-eval/en-multi-07.wav     # 6.9 s, two sentences (must stay > 6.25 s: see 4.)
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

[[ -d $MODEL ]] || { echo "SKIPPED: no bundled model at $MODEL"; exit 0; }
passed=0 failed=0
check() {  # name, then a command that must succeed
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
one_line() { tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
contains() { grep -qF -- "$2" "$1" || { echo "  '$1' lacks '$2':"; head -c 600 "$1"; echo; return 1; }; }

start_server() {
  "$HARK" serve "$MODEL" --port 0 --idle-unload 600 >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$WORK/server.log" 2>/dev/null | head -1 || true)
    [[ -n $PORT ]] && return 0
    sleep 0.05
  done
  echo "FAILED: hark serve did not start: $(tail -5 "$WORK/server.log")"
  exit 1
}

start_server
URL=http://127.0.0.1:$PORT
# References: one-shot transcriptions of the same files.
short_ref=$(curl -sf "$URL/v1/audio/transcriptions" -F file=@"$SHORT" -F response_format=text | one_line)
check "the one-shot reference is not empty" test -n "$short_ref"
# The sanitizer build (HARK_SANITIZED), where each transcription takes seconds, keeps the
# runs that exercise different C++ paths: streaming at real-time pace, in-process, the
# server going away, the failures. The helpers are unit-tested there (hark_test_dictate).
full=1
[[ -z ${HARK_SANITIZED:-} ]] || full=""

# 1. Through the server, at real-time pace (the take streams in 0.5 s chunks).
"$HARK" dictate --server "$URL" --input "$SHORT" </dev/null >"$WORK/server.out" 2>"$WORK/server.err"
rc=$?
got=$(one_line <"$WORK/server.out")
check "dictate --server exits 0 (rc $rc: $(head -c 300 "$WORK/server.err"))" test "$rc" = 0
check "dictate --server text '$got' = one-shot '$short_ref'" test "$got" = "$short_ref"
if [[ -n $full ]]; then
  long_ref=$(curl -sf "$URL/v1/audio/transcriptions" -F file=@"$LONG" -F response_format=text | one_line)
  "$HARK" dictate --server "$URL/v1" --input "$LONG" --realtime off </dev/null >"$WORK/server2.out" 2>/dev/null
  got=$(one_line <"$WORK/server2.out")
  check "dictate --server (two sentences, as fast as possible) '$got' = '$long_ref'" test -n "$long_ref" -a "$got" = "$long_ref"

  # 2. --copy and --type through stand-ins for wl-copy and xdotool that record their input.
  mkdir -p "$WORK/bin"
  printf '#!/bin/sh\ncat > "%s/clipboard"\n' "$WORK" >"$WORK/bin/wl-copy"
  printf '#!/bin/sh\necho "$*" > "%s/typed.args"\ncat > "%s/typed"\n' "$WORK" "$WORK" >"$WORK/bin/xdotool"
  chmod +x "$WORK/bin/wl-copy" "$WORK/bin/xdotool"
  fast=(--server "$URL" --input "$SHORT" --realtime off)
  PATH="$WORK/bin:$PATH" WAYLAND_DISPLAY=test-0 "$HARK" dictate "${fast[@]}" --copy </dev/null >"$WORK/copy.out" 2>"$WORK/copy.err"
  check "--copy exits 0 ($(head -c 200 "$WORK/copy.err"))" test $? = 0
  check "--copy puts the transcript on the clipboard" test "$(cat "$WORK/clipboard" 2>/dev/null)" = "$short_ref"
  check "--copy prints nothing on stdout" test ! -s "$WORK/copy.out"
  env -u WAYLAND_DISPLAY PATH="$WORK/bin:$PATH" DISPLAY=:99 "$HARK" dictate "${fast[@]}" --type </dev/null >/dev/null \
    2>"$WORK/type.err"
  check "--type exits 0 ($(head -c 200 "$WORK/type.err"))" test $? = 0
  check "--type types the transcript" test "$(cat "$WORK/typed" 2>/dev/null)" = "$short_ref"
  check "--type uses xdotool type reading stdin" test "$(cat "$WORK/typed.args" 2>/dev/null)" = "type --clearmodifiers --file -"
  env -u WAYLAND_DISPLAY -u DISPLAY "$HARK" dictate "${fast[@]}" --copy </dev/null >"$WORK/nocopy.out" 2>"$WORK/nocopy.err"
  rc=$?
  check "--copy without a desktop: rc non-zero ($rc)" test "$rc" != 0
  check "--copy without a desktop: clear message" contains "$WORK/nocopy.err" "needs a graphical session"
  check "--copy without a desktop: the transcript is printed instead" test "$(one_line <"$WORK/nocopy.out")" = "$short_ref"
fi

# 3. In this process (--model), as fast as possible.
"$HARK" dictate --model "$MODEL" --input "$SHORT" --realtime off </dev/null >"$WORK/local.out" 2>"$WORK/local.err"
rc=$?
got=$(one_line <"$WORK/local.out")
check "dictate --model exits 0 (rc $rc: $(head -c 300 "$WORK/local.err"))" test "$rc" = 0
check "dictate --model text '$got' = one-shot '$short_ref'" test "$got" = "$short_ref"

if [[ -n $full ]]; then
  # 4. Without a terminal, SIGINT stops the take (a desktop shortcut's way): what was
  #    recorded until then is transcribed.
  "$HARK" dictate --server "$URL" --input "$LONG" --save "$WORK/interrupted.wav" </dev/null >"$WORK/int.out" 2>"$WORK/int.err" &
  dictate_pid=$!
  sleep 2.5
  kill -INT "$dictate_pid"
  wait "$dictate_pid"
  rc=$?
  check "SIGINT: exit 0 (rc $rc: $(head -c 300 "$WORK/int.err"))" test "$rc" = 0
  check "SIGINT: a transcript is printed" test -s "$WORK/int.out"
  #    Stopped at 2.5 s, the take holds between 1 s and 6.25 s (16000 and 100000 samples),
  #    which tells an early stop apart only while LONG is longer than 6.25 s.
  samples=$("$HARK" probe "$WORK/interrupted.wav" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\).*/\1/p')
  long_samples=$("$HARK" probe "$LONG" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\).*/\1/p')
  check "SIGINT: the take stopped early (${samples:-no} samples of ${long_samples:-?})" \
    test "${samples:-0}" -gt 16000 -a "${samples:-0}" -lt 100000 -a "${long_samples:-0}" -gt 100000
fi

# 5. The server goes away halfway through a take: the take is kept whole.
(sleep 1.5; kill -TERM "$SERVER_PID") &
killer=$!
"$HARK" dictate --server "$URL" --input "$SHORT" --save-dir "$WORK/takes" </dev/null >"$WORK/gone.out" 2>"$WORK/gone.err"
rc=$?
wait "$killer"
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=""
check "server gone: exit code non-zero (rc $rc)" test "$rc" != 0
check "server gone: one line on stderr" test "$(wc -l <"$WORK/gone.err")" = 1
check "server gone: says what to do" contains "$WORK/gone.err" "with \`hark serve\`, or transcribe in this process"
saved=$(ls "$WORK"/takes/take-*.wav 2>/dev/null | head -1)
check "server gone: the take is saved" test -n "$saved"
check "server gone: the message names the file" contains "$WORK/gone.err" "saved in $saved"
if [[ -n $saved ]]; then
  "$HARK" probe "$saved" >"$WORK/saved.probe" 2>&1
  "$HARK" probe "$SHORT" >"$WORK/short.probe" 2>&1
  check "server gone: the saved take is the whole clip" \
    test "$(grep '^samples' "$WORK/saved.probe")" = "$(grep '^samples' "$WORK/short.probe")"
fi

# 6. A server that is not there: nothing was recorded, so nothing is saved.
"$HARK" dictate --server "$URL" --input "$SHORT" --save-dir "$WORK/none" </dev/null >/dev/null 2>"$WORK/down.err"
rc=$?
check "no server: rc non-zero ($rc)" test "$rc" != 0
check "no server: clear message" contains "$WORK/down.err" "cannot reach hark serve at $URL"
check "no server: no take saved" test ! -e "$WORK/none"

# 7. No microphone (this machine has none; skipped where one exists).
if ! "$HARK" dictate --list-devices >/dev/null 2>&1; then
  "$HARK" dictate --model "$MODEL" </dev/null >/dev/null 2>"$WORK/mic.err"
  rc=$?
  check "no microphone: rc non-zero ($rc)" test "$rc" != 0
  check "no microphone: says what to do" contains "$WORK/mic.err" "no microphone found: connect one"
  check "no microphone: one line" test "$(wc -l <"$WORK/mic.err")" = 1
fi

echo "dictate: $passed passed, $failed failed"
[[ $failed == 0 ]]
