#!/usr/bin/env bash
# End to end: the web page of `hark serve` in Debian's headless Chromium, driven by
# playwright-core (browser/voice_page.mjs), with Chromium's fake microphone playing one
# of the bundled model's clips: hold to talk, release, and the text box must hold
# the one-shot transcription of the clip; then the upload form returns an srt; then the
# messages for a needed API key, a missing model and a denied microphone. The screenshot
# is kept as a test artifact in BUILD/test-artifacts/web-page.png.
# Usage: bash tests/server/web_page.sh path/to/hark
# Skips (exit 0, "SKIPPED: ...") without Chromium (scripts/install-deps.sh installs it),
# without the bundled model, or with HARK_SANITIZED set (the sanitizer build sets it).
set -euo pipefail

HARK=${1:?usage: web_page.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
# es-multi-18 (6.2 s, two sentences): long enough for previews while the button is held,
# and no near-tie in its decoding (the oracle's smallest top-2 logit gap 1.38; en-multi-07's
# 0.10 flipped a word between the browser's audio and the file's).
CLIP=${HARK_WEB_CLIP:-$ROOT/tests/data/toy-eval/es-multi-18.wav}
CHROMIUM=${HARK_CHROMIUM:-/usr/bin/chromium}
ARTIFACTS=$(cd "$(dirname "$HARK")/.." && pwd)/test-artifacts
WORK=$(mktemp -d)
SERVER_PID="" LOCKED_PID=""
cleanup() {
  for pid in $SERVER_PID $LOCKED_PID; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAILED: $*"; [[ -f $WORK/server.log ]] && tail -20 "$WORK/server.log"; exit 1; }

# The page's JavaScript is what this test is about; the server routes it calls run under
# the sanitizers in hark_test_serve, so the sanitizer build skips it.
[[ -z ${HARK_SANITIZED:-} ]] || skip "the sanitizer build (HARK_SANITIZED) leaves the browser test to the release build"
[[ -x $CHROMIUM ]] || skip "no Chromium at $CHROMIUM (apt-get install chromium)"
[[ -d $MODEL ]] || skip "no bundled model at $MODEL"

# Chromium's fake microphone runs at 44.1 kHz and converts other files with a resampler
# that costs the signal about 15 dB of SNR, enough to change a word of the toy model's
# transcript from run to run; so the file is made at 44.1 kHz here, with FFmpeg's
# resampler set like hark's own. It loops: half a second of silence before the clip and
# two after it keep the take's edges quiet whatever the capture's start-up latency.
ffmpeg -v error -i "$CLIP" -af "adelay=500:all=1,apad=pad_dur=2,aresample=44100:filter_size=64:phase_shift=12:cutoff=0.97" \
  -ac 1 -c:a pcm_s16le "$WORK/mic.wav" || fail "ffmpeg could not prepare the clip"
seconds=$("$HARK" probe "$WORK/mic.wav" | sed -n 's/^duration: *\([0-9.]*\) s/\1/p')
hold_ms=$(awk -v s="$seconds" 'BEGIN { printf "%d", (s - 1.5) * 1000 }')

port_of() {  # log file, pid
  for _ in $(seq 1 200); do
    local port
    port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1" 2>/dev/null | head -1 || true)
    [[ -n $port ]] && { echo "$port"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
"$HARK" serve "$MODEL" --port 0 --idle-unload 600 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
URL=http://127.0.0.1:$(port_of "$WORK/server.log" "$SERVER_PID") || fail "hark serve did not start"
# The second server wants a key and serves a model that is not on disk (an empty home).
mkdir -p "$WORK/home"
HOME=$WORK/home HARK_HOME=$WORK/home XDG_CACHE_HOME=$WORK/home HF_HOME=$WORK/home HF_HUB_CACHE=$WORK/home \
  WHISPER_CPP_MODELS=$WORK/home "$HARK" serve tiny --port 0 --api-key sesame >"$WORK/locked.log" 2>&1 &
LOCKED_PID=$!
LOCKED_URL=http://127.0.0.1:$(port_of "$WORK/locked.log" "$LOCKED_PID") || fail "the second hark serve did not start"
expect=$(curl -sf "$URL/v1/audio/transcriptions" -F file=@"$WORK/mic.wav" -F response_format=text) ||
  fail "one-shot transcription of the clip"

# playwright-core, installed on first use (node_modules is not committed).
NODE_DIR=$ROOT/tests/server/browser
if [[ ! -d $NODE_DIR/node_modules/playwright-core ]]; then
  (cd "$NODE_DIR" && { npm ci --no-audit --no-fund || npm install --no-audit --no-fund; }) >"$WORK/npm.log" 2>&1 ||
    fail "npm could not install playwright-core: $(tail -5 "$WORK/npm.log")"
fi
HARK_DOC_SCREENSHOT=${HARK_DOC_SCREENSHOT:+$(realpath -m "$HARK_DOC_SCREENSHOT")} HARK_URL=$URL/ HARK_LOCKED_URL=$LOCKED_URL/ HARK_LOCKED_KEY=sesame HARK_MIC_WAV=$WORK/mic.wav HARK_HOLD_MS=$hold_ms HARK_EXPECT="$expect" HARK_CHROMIUM=$CHROMIUM \
  HARK_SCREENSHOT=$ARTIFACTS/web-page.png node "$NODE_DIR/voice_page.mjs" || fail "the page in Chromium"
