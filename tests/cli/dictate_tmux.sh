#!/usr/bin/env bash
# `hark dictate` on a real terminal (tmux): the prompt, Enter starts a take, the status
# line shows the time, a level meter and the partial text, a tap of Space stops it, the
# transcript is printed and matches a one-shot transcription; with --repeat the prompt
# comes back and q quits. The microphone is a file played at real-time pace (--input).
# Usage: bash tests/cli/dictate_tmux.sh path/to/hark
set -uo pipefail

HARK=${1:?usage: dictate_tmux.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
CLIP=$ROOT/tests/data/toy-eval/en-single-01.wav  # 2.7 s, "We were surrounded by darkness."
WORD=darkness  # a word of CLIP that the preview must show while recording
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed"; exit 0; }
# The key decoding and hold-to-talk logic run under the sanitizers in hark_test_dictate;
# this test (which waits out a real-time take) runs in the release build only.
[[ -z ${HARK_SANITIZED:-} ]] || { echo "SKIPPED: the sanitizer build (HARK_SANITIZED)"; exit 0; }
[[ -d $MODEL ]] || { echo "SKIPPED: no bundled model at $MODEL"; exit 0; }

WORK=$(mktemp -d)
TMUX_CMD=(tmux -L "hark-test-$$" -f /dev/null)
cleanup() {
  "${TMUX_CMD[@]}" kill-server 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  echo "--- pane:"
  "${TMUX_CMD[@]}" capture-pane -p -t dictate 2>/dev/null
  exit 1
}
pane() { "${TMUX_CMD[@]}" capture-pane -p -t dictate; }
wait_for() {  # seconds, fixed string that the pane must show
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    pane | grep -qF -- "$2" && return 0
    sleep 0.1
  done
  return 1
}
one_line() { tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }

ref=$("$HARK" transcribe "$CLIP" --model "$MODEL" 2>/dev/null | one_line)
[[ -n $ref ]] || fail "the one-shot transcription is empty"

"${TMUX_CMD[@]}" new-session -d -s dictate -x 150 -y 10 \
  "'$HARK' dictate --model '$MODEL' --input '$CLIP' --repeat; echo EXIT=\$?; sleep 600"
wait_for 60 "Hold Space to talk" || fail "no prompt"
"${TMUX_CMD[@]}" send-keys -t dictate Enter

# Record until the clip has played (the file source then delivers silence, as a
# microphone would) and a preview has shown, watching the status line. Previews take
# seconds each in the sanitizer build, so the take may run on past the clip.
seen_meter=0 seen_partial=0 deadline=$((SECONDS + 90))
while ((SECONDS < deadline)); do
  line=$(pane | grep -E '^REC +[0-9.]+ s' | tail -1)
  [[ $line =~ \[#+\.*\] ]] && seen_meter=1
  [[ $line == *"$WORD"* ]] && seen_partial=1
  secs=$(sed -n 's/^REC *\([0-9]*\)\..*/\1/p' <<<"$line")
  [[ -n $secs ]] && ((secs >= 5 && seen_partial)) && break
  sleep 0.1
done
[[ -n ${secs:-} ]] && ((secs >= 5)) || fail "the take did not run 5 s"
((seen_meter)) || fail "the level meter never moved"
((seen_partial)) || fail "no partial text while recording"

"${TMUX_CMD[@]}" send-keys -t dictate Space
wait_for 60 "$ref" || fail "the transcript '$ref' was not printed"
wait_for 10 "Hold Space to talk" || fail "--repeat did not prompt for the next take"
"${TMUX_CMD[@]}" send-keys -t dictate q
wait_for 10 "EXIT=" || fail "q did not quit"
pane | grep -qx "EXIT=0" || fail "exit status is not 0"
[[ $(pane | grep -cF "$ref") == 1 ]] || fail "the transcript should be printed once"
echo "PASSED: terminal dictation printed '$ref'"
