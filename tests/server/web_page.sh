#!/usr/bin/env bash
# End to end: the web page of `hark serve` in Debian's headless Chromium, driven by
# playwright-core (browser/voice_page.mjs), with Chromium's fake microphone playing one
# of the bundled model's English clips: hold to talk, release, and the text box must hold
# the one-shot transcription of the clip; then the upload form returns an srt. The
# screenshot is kept as a test artifact in BUILD/test-artifacts/web-page.png.
# Usage: bash tests/server/web_page.sh path/to/hark
# Skips (exit 0, "SKIPPED: ...") without Chromium (scripts/install-deps.sh installs it)
# or without the bundled model.
set -euo pipefail

HARK=${1:?usage: web_page.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
# The clip whose transcript stayed the same through Chromium's fake-microphone path
# (resampled to 44.1 kHz by Chromium, back to 16 kHz by the page) in repeated runs.
CLIP=${HARK_WEB_CLIP:-$ROOT/tests/data/toy-eval/en-single-02.wav}
CHROMIUM=${HARK_CHROMIUM:-/usr/bin/chromium}
ARTIFACTS=$(cd "$(dirname "$HARK")/.." && pwd)/test-artifacts
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAILED: $*"; [[ -f $WORK/server.log ]] && tail -20 "$WORK/server.log"; exit 1; }

[[ -x $CHROMIUM ]] || skip "no Chromium at $CHROMIUM (apt-get install chromium)"
[[ -d $MODEL ]] || skip "no bundled model at $MODEL"

# The fake microphone loops its file: half a second of silence before the clip and one
# after it make the take's edges quiet whatever the capture's start-up latency.
ffmpeg -v error -i "$CLIP" -af "adelay=500:all=1,apad=pad_dur=1" -ar 16000 -ac 1 -c:a pcm_s16le "$WORK/mic.wav" ||
  fail "ffmpeg could not pad the clip"
seconds=$("$HARK" probe "$WORK/mic.wav" | sed -n 's/^duration: *\([0-9.]*\) s/\1/p')
hold_ms=$(awk -v s="$seconds" 'BEGIN { printf "%d", (s - 0.4) * 1000 }')

"$HARK" serve "$MODEL" --port 0 --idle-unload 600 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 200); do
  PORT=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$WORK/server.log" | head -1)
  [[ -n $PORT ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "hark serve exited at startup"
  sleep 0.05
done
[[ -n $PORT ]] || fail "hark serve did not report its port"
URL=http://127.0.0.1:$PORT
expect=$(curl -sf "$URL/v1/audio/transcriptions" -F file=@"$WORK/mic.wav" -F response_format=text) ||
  fail "one-shot transcription of the clip"

# playwright-core, installed on first use (node_modules is not committed).
NODE_DIR=$ROOT/tests/server/browser
if [[ ! -d $NODE_DIR/node_modules/playwright-core ]]; then
  (cd "$NODE_DIR" && { npm ci --no-audit --no-fund || npm install --no-audit --no-fund; }) >"$WORK/npm.log" 2>&1 ||
    fail "npm could not install playwright-core: $(tail -5 "$WORK/npm.log")"
fi
HARK_URL=$URL/ HARK_MIC_WAV=$WORK/mic.wav HARK_HOLD_MS=$hold_ms HARK_EXPECT="$expect" HARK_CHROMIUM=$CHROMIUM \
  HARK_SCREENSHOT=$ARTIFACTS/web-page.png node "$NODE_DIR/voice_page.mjs" || fail "the page in Chromium"
