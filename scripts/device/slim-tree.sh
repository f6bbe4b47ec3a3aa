#!/usr/bin/env bash
# The device tool carries the working tree (tracked files included) up to 64 MiB, and the
# repository's test data alone comes close. `slim-tree.sh on` takes the data the GPU run
# does not read out of git's index for the time of a call (the files stay on disk,
# ignored through .git/info/exclude); `slim-tree.sh off` puts everything back. Never
# commit while slimmed: `git status` shows the paths as deleted. `slim-tree.sh toy` keeps
# only what `run-all.sh toy` reads (the bundled model, its clips, two assets, the scripts);
# `slim-tree.sh oracle` what the bundled model's oracle goldens need (docs: scripts/toy-model/NEXT.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
# models/: the bundled model (46 MB) and the bundle do not fit together beside the test
# data; it has its own call (`toy` below, run-all.sh toy), and run-all.sh skips it here.
paths=(models tests/data/vad tests/data/ggml tests/data/golden/loaders tests/data/golden/decoding tests/data/golden/mel
  tests/data/golden/vad tests/data/golden/tokenizer tests/fuzz/corpus scripts/toy-model/results
  tests/data/audio/silero-test.wav tests/data/audio/aepyx-8k.wav tests/data/audio/ls-test.f32.npy)
exclude=.git/info/exclude
[[ -f .git ]] && exclude=$(git rev-parse --git-path info/exclude)
case "${1:-}" in
  on)
    git rm -r -q --cached "${paths[@]}"
    { echo "# slim-tree.sh begin"; printf '/%s\n' "${paths[@]}"; echo "# slim-tree.sh end"; } >>"$exclude"
    ;;
  toy)  # run-all.sh toy: only what the bundled model's GPU tests read travel (the model is 46 MB)
    mapfile -t drop < <(git ls-files | awk -F/ '
      $1 == "models" || ($1 == "scripts" && $2 == "device") || $0 == "scripts/bench-batching.sh" || $0 == "scripts/cut-clips.py" { next }
      $1 == "tests" && $2 == "data" && $3 == "toy-eval" { next }
      $0 == "assets/multilingual.tiktoken" || $0 == "assets/mel_filters.npz" { next }
      { print }')
    # MODEL_XZ=1: the model's weights travel xz-compressed as .device-carry/model.safetensors.xz
    # (41 of 46 MB; carry it beside the bundle), which run-all.sh unpacks: the bundle of
    # hark and hark_test_gpu (18.6 MB since 2026-12-06) and the model no longer fit together.
    if [[ ${MODEL_XZ:-0} == 1 ]]; then
      weights=models/hark-toy-speech/model.safetensors
      mkdir -p .device-carry
      xz -T2 -6 -c "$weights" >.device-carry/model.safetensors.xz
      git rm -q --cached -- "$weights"
      drop+=("$weights")
    fi
    printf '%s\0' "${drop[@]}" | xargs -0 git rm -q --cached --ignore-unmatch --
    { echo "# slim-tree.sh begin"; printf '/%s\n' "${drop[@]}"; echo "# slim-tree.sh end"; } >>"$exclude"
    ;;
  oracle)  # the bundled model's oracle goldens (scripts/oracle toy_eval.py, run_all.sh decoding)
    mapfile -t drop < <(git ls-files | awk -F/ '
      $1 == "models" || ($1 == "scripts" && $2 == "oracle") { next }
      $1 == "tests" && $2 == "data" && $3 == "toy-eval" { next }
      $0 == "tests/data/audio/jfk.wav" || $1 == "assets" { next }
      { print }')
    printf '%s\0' "${drop[@]}" | xargs -0 git rm -q --cached --
    { echo "# slim-tree.sh begin"; printf '/%s\n' "${drop[@]}"; echo "# slim-tree.sh end"; } >>"$exclude"
    ;;
  off)
    sed -i '/^# slim-tree.sh begin$/,/^# slim-tree.sh end$/d' "$exclude"
    git reset -q
    ;;
  *) echo "usage: slim-tree.sh on|toy|oracle|off"; exit 2 ;;
esac
git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1
