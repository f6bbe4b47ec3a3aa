#!/usr/bin/env bash
# End-to-end: `hark serve` with the bundled checkpoint under models/, driven by curl
# (multipart and JSON bodies) and by the official OpenAI Node.js SDK (node/test.mjs; the
# release build only: see below),
# then SIGTERM must drain and exit 0.
# Usage: bash tests/server/openai_sdk.sh path/to/hark
# Skips (exit 0, "SKIPPED: ...") when no model is bundled or the server cannot transcribe.
set -euo pipefail

HARK=${1:?usage: openai_sdk.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# The bundled toy model only understands its own synthesized speech (models/*/MODEL_CARD.md),
# so the default clip is one of its held-out English clips.
AUDIO=${HARK_TEST_AUDIO:-$ROOT/tests/data/toy-eval/en-single-01.wav}
EXPECT=${HARK_TEST_EXPECT:-"we were surrounded by darkness"}
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAILED: $*"; [[ -f $WORK/server.log ]] && tail -20 "$WORK/server.log"; exit 1; }

MODEL=${HARK_TEST_MODEL:-}
if [[ -z $MODEL ]]; then
  MODEL=$(find "$ROOT/models" -mindepth 1 -maxdepth 1 \( -type d -o -name '*.bin' \) 2>/dev/null | sort | head -1)
fi
[[ -n $MODEL ]] || skip "no bundled checkpoint under models/ (set HARK_TEST_MODEL to use another)"

"$HARK" serve "$MODEL" --port 0 --log-format json --idle-unload 600 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$WORK/server.log" 2>/dev/null | head -1 || true)
  [[ -n $PORT ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "hark serve exited at startup"
  sleep 0.1
done
[[ -n $PORT ]] || fail "hark serve did not report its port"
URL=http://127.0.0.1:$PORT

# Can this build transcribe at all? (no engine or decoder yet → skip, not fail)
STATUS=$(curl -s -o "$WORK/probe.json" -w '%{http_code}' "$URL/v1/audio/transcriptions" -F file=@"$AUDIO")
[[ $STATUS == 200 ]] || skip "hark serve cannot transcribe with $MODEL yet (HTTP $STATUS: $(head -c 300 "$WORK/probe.json"))"

check_contains() {  # file, what
  tr '[:upper:]' '[:lower:]' <"$1" | grep -q "$EXPECT" || fail "$2: transcript lacks '$EXPECT': $(head -c 300 "$1")"
}

# curl: multipart with each response format, and a JSON body with base64 audio.
for format in json verbose_json text srt vtt; do
  curl -sf -D "$WORK/headers" -o "$WORK/out.$format" "$URL/v1/audio/transcriptions" \
    -F file=@"$AUDIO" -F model=whisper-1 -F response_format=$format || fail "curl multipart $format"
  check_contains "$WORK/out.$format" "curl $format"
  grep -qi '^x-hark-language: en' "$WORK/headers" || fail "curl $format: no x-hark-language header"
done
grep -q '^WEBVTT' "$WORK/out.vtt" || fail "vtt body does not start with WEBVTT"
grep -q -- '-->' "$WORK/out.srt" || fail "srt body has no cues"
printf '{"file":"%s","response_format":"verbose_json","timestamp_granularities":["word"]}' "$(base64 -w0 "$AUDIO")" >"$WORK/body.json"
curl -sf -o "$WORK/out.b64" "$URL/v1/audio/transcriptions" -H 'content-type: application/json' \
  --data-binary @"$WORK/body.json" || fail "curl JSON body"
check_contains "$WORK/out.b64" "curl JSON body"
grep -q '"words"' "$WORK/out.b64" || fail "curl JSON body: no words for timestamp_granularities=word"

# The official SDK (installed on first use; node_modules is not committed). Not in the
# sanitizer build (HARK_SANITIZED), where each transcription takes seconds: its 15 requests
# check the protocol as the SDK sees it, which the release build does; the C++ they reach
# runs under ASan in hark_test_serve (translations, formats, word timestamps and sessions on
# a real engine in BatchingServerOutput; streaming, vocabulary and VAD requests) and the
# decode tests. The sanitizer build keeps the curl requests above and the drain below:
# `hark serve` with the bundled model, exiting 0 (leak-checked) on SIGTERM.
NODE_DIR=$ROOT/tests/server/node
if [[ -z ${HARK_SANITIZED:-} ]]; then
  if [[ ! -d $NODE_DIR/node_modules/openai ]]; then
    (cd "$NODE_DIR" && { npm ci --no-audit --no-fund || npm install --no-audit --no-fund; }) >"$WORK/npm.log" 2>&1 ||
      fail "npm could not install the openai package: $(tail -5 "$WORK/npm.log")"
  fi
  HARK_URL=$URL HARK_AUDIO=$AUDIO HARK_EXPECT="$EXPECT" node "$NODE_DIR/test.mjs" || fail "OpenAI SDK checks"
fi

# SIGTERM drains and exits cleanly.
kill -TERM "$SERVER_PID"
for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && fail "hark serve did not exit within 10 s of SIGTERM"
wait "$SERVER_PID" && RC=0 || RC=$?
SERVER_PID=""
[[ $RC == 0 ]] || fail "hark serve exited with $RC after SIGTERM"
if [[ -z ${HARK_SANITIZED:-} ]]; then echo "PASSED: curl and the OpenAI SDK against $MODEL"; else echo "PASSED: curl against $MODEL"; fi
