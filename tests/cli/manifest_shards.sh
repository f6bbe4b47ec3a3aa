#!/usr/bin/env bash
# hark transcribe --manifest --shard K/N --resume with the bundled model: N shards cover
# every file of a manifest exactly once (duplicates and comments skipped, bad files
# failed and reported with exit status 6), a shard killed mid-run completes with
# --resume without redoing the files it had finished, and --parallel (files at once,
# batched) writes what one at a time writes.
# Usage: bash tests/cli/manifest_shards.sh path/to/hark
set -uo pipefail
HARK=${1:?usage: manifest_shards.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
CLIPS=$ROOT/tests/data/toy-eval
WORK=$(mktemp -d)
BG=""
cleanup() {
  [[ -n $BG ]] && kill -KILL "$BG" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; exit 1; }
[[ -d $MODEL ]] || { echo "SKIPPED: no bundled model at $MODEL"; exit 0; }

# Three inputs in two folders, the same name in both (links to clips whose text the toy
# model gets right), plus a duplicate, a comment, a blank line, a missing file and a
# file that is not audio.
cd "$WORK"
mkdir -p in/a in/b
declare -A WANT=([in/a/1]=darkness [in/a/2]=difference [in/b/1]=attempt)
ln -s "$CLIPS/en-single-01.wav" in/a/1.wav
ln -s "$CLIPS/en-single-05.wav" in/a/2.wav
ln -s "$CLIPS/en-multi-07.wav" in/b/1.wav
echo "not audio" >in/b/notes.wav
cat >list.txt <<'EOF'
# a test archive
in/a/1.wav
./in/a/1.wav
in/missing.wav

in/b/1.wav
in/b/notes.wav
in/a/2.wav
EOF
ALL=${#WANT[@]}

transcribe() { "$HARK" transcribe -m "$MODEL" --manifest list.txt --no-progress "$@"; }
summary_field() { sed -n "s/.*summary .*\b$2=\([0-9.]*\).*/\1/p" "$1"; }

# 1. Three shards, run side by side.
N=3
for k in $(seq 0 $((N - 1))); do transcribe --shard $k/$N -o out >"shard$k.out" 2>"shard$k.log" & eval "PID$k=$!"; done
failed_total=0 done_total=0
for k in $(seq 0 $((N - 1))); do
  eval "wait \$PID$k"; rc=$?
  f=$(summary_field "shard$k.log" failed); d=$(summary_field "shard$k.log" done)
  [[ -n $f && -n $d ]] || fail "shard $k printed no summary: $(tail -3 "shard$k.log")"
  expect_rc=0; [[ $f -gt 0 ]] && expect_rc=6
  [[ $rc == "$expect_rc" ]] || fail "shard $k exited $rc with failed=$f (want $expect_rc): $(cat "shard$k.log")"
  failed_total=$((failed_total + f)) done_total=$((done_total + d))
done
[[ $done_total == "$ALL" && $failed_total == 2 ]] || fail "shards did $done_total files and failed $failed_total (want $ALL and 2)"
# Every input done by exactly one shard; the failures named with their reason.
for input in "${!WANT[@]}"; do
  n=$(grep -h "done $input.wav " shard*.log | wc -l)
  [[ $n == 1 ]] || fail "$input.wav was done by $n shards"
done
grep -q "failed in/missing.wav: .*no such file" shard*.log || fail "the missing file is not reported"
grep -q "failed in/b/notes.wav: " shard*.log || fail "the non-audio file is not reported"
# Outputs mirror the inputs, one each, with the right text, and no temporary files.
want_files=$(for i in "${!WANT[@]}"; do echo "out/$i.txt"; done | sort)
have_files=$(find out -type f | sort)
[[ $have_files == "$want_files" ]] || fail "outputs: $(echo $have_files) (want $(echo $want_files))"
for input in "${!WANT[@]}"; do
  tr '[:upper:]' '[:lower:]' <"out/$input.txt" | grep -q "${WANT[$input]}" || fail "out/$input.txt: $(cat "out/$input.txt")"
done

# 2. One shard over everything, killed after its first output, then --resume.
transcribe -o out2 >/dev/null 2>kill.log &
BG=$!
for _ in $(seq 1 3000); do
  [[ -n $(find out2 -name '*.txt' 2>/dev/null | head -1) ]] && break
  kill -0 $BG 2>/dev/null || break
  sleep 0.01
done
kill -KILL $BG 2>/dev/null
wait $BG 2>/dev/null
BG=""
finished=$(find out2 -name '*.txt' | sort)
n_finished=$(echo "$finished" | grep -c .)
[[ $n_finished -ge 1 ]] || fail "the killed run wrote nothing: $(cat kill.log)"
declare -A INODE
for f in $finished; do INODE[$f]=$(stat -c %i "$f"); done
transcribe -o out2 --resume >/dev/null 2>resume.log
rc=$?
[[ $rc == 6 ]] || fail "the resumed run exited $rc (want 6: two inputs fail): $(cat resume.log)"
[[ $(summary_field resume.log skipped) == "$n_finished" ]] || fail "resume skipped $(summary_field resume.log skipped), want $n_finished: $(cat resume.log)"
[[ $(summary_field resume.log done) == $((ALL - n_finished)) ]] || fail "resume did $(summary_field resume.log done) files, want $((ALL - n_finished))"
for f in $finished; do
  [[ $(stat -c %i "$f") == "${INODE[$f]}" ]] || fail "$f was rewritten by --resume"
  grep -q "done ${f#out2/}" resume.log && fail "$f was transcribed again"
done
[[ $(find out2 -name '*.txt' | sort) == "$(echo "$want_files" | sed 's|^out/|out2/|')" ]] || fail "after --resume: $(find out2 -type f)"

# 3. Every file at once (--parallel 3: one engine batching their windows and decoder steps):
# the same outputs as one at a time (fp32 on the CPU decodes each row as it would alone).
transcribe -o out3 --parallel 3 >/dev/null 2>parallel.log
rc=$?
[[ $rc == 6 ]] || fail "--parallel 3 exited $rc (want 6: two inputs fail): $(cat parallel.log)"
[[ $(summary_field parallel.log done) == "$ALL" && $(summary_field parallel.log failed) == 2 ]] ||
  fail "--parallel 3: $(tail -1 parallel.log)"
for input in "${!WANT[@]}"; do
  cmp -s "out/$input.txt" "out3/$input.txt" ||
    fail "--parallel 3 wrote other text for $input: '$(cat "out3/$input.txt")' against '$(cat "out/$input.txt")'"
done
[[ $(find out3 -type f | wc -l) == "$ALL" ]] || fail "--parallel 3 left: $(find out3 -type f)"

# 4. Misuse is a clear error with status 2.
"$HARK" transcribe -m "$MODEL" --parallel 2 "$CLIPS/en-single-01.wav" 2>err.log; rc=$?
[[ $rc == 2 ]] && grep -q "work with --manifest" err.log || fail "--parallel without --manifest: rc $rc, $(cat err.log)"
"$HARK" transcribe -m "$MODEL" --manifest list.txt --parallel -1 -o x 2>err.log; rc=$?
[[ $rc == 2 ]] && grep -q "parallel" err.log || fail "--parallel -1: rc $rc, $(cat err.log)"
"$HARK" transcribe -m "$MODEL" --manifest list.txt --shard 3/3 -o x 2>err.log; rc=$?
[[ $rc == 2 ]] && grep -q "K must be 0..2" err.log || fail "--shard 3/3: rc $rc, $(cat err.log)"
"$HARK" transcribe -m "$MODEL" --manifest list.txt 2>err.log; rc=$?
[[ $rc == 2 ]] && grep -q "needs --output-dir" err.log || fail "no --output-dir: rc $rc, $(cat err.log)"
"$HARK" transcribe -m "$MODEL" --manifest nonexistent.txt -o x 2>err.log; rc=$?
[[ $rc == 3 ]] && grep -q "cannot open manifest" err.log || fail "missing manifest: rc $rc, $(cat err.log)"
echo "PASSED: $N shards covered $ALL files once each; a killed shard resumed after $n_finished finished file(s)"
