#!/usr/bin/env bash
# The device tool carries at most 64 MiB: the tracked tree (72 MB with the shipped model
# and the test data) plus the carried folders. A training run needs only
# scripts/toy-model/ and two assets; `on` takes every other tracked file out of git's
# index for the time of the calls (the files stay on disk, ignored through
# .git/info/exclude), `off` puts everything back. Never commit while slimmed: `git status`
# shows the paths as deleted. Prints the size that will travel (tracked + carried).
#   bash scripts/toy-model/slim-for-training.sh on|off|size
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
carried=(.device-carry/debs .device-carry/corpus .device-carry/state)
size() {
  local tracked extra
  tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  extra=$({ du -cb "${carried[@]}" 2>/dev/null || true; } | tail -1 | cut -f1)
  echo "tracked $((tracked / 1024)) KiB + carried $((extra / 1024)) KiB = $(((tracked + extra) / 1048576)) MiB (limit 64)"
}
case "${1:-}" in
  on)
    mapfile -t drop < <(git ls-files | awk -F/ '
      $1 == "scripts" && $2 != "toy-model" { print $1 "/" $2; next }
      $1 == "scripts" && $3 == "results" { print $1 "/" $2 "/" $3; next }
      $1 == "assets" { if ($2 != "multilingual.tiktoken" && $2 != "mel_filters.npz") print $0; next }
      $1 != "scripts" && $1 != "assets" { print $1 }' | sort -u)
    git rm -r -q --cached -- "${drop[@]}"
    { echo "# slim-for-training begin"; printf '/%s\n' "${drop[@]}"; echo "# slim-for-training end"; } >>"$exclude"
    size
    ;;
  off)
    sed -i '/^# slim-for-training begin$/,/^# slim-for-training end$/d' "$exclude"
    git reset -q
    size
    ;;
  size) size ;;
  *) echo "usage: slim-for-training.sh on|off|size"; exit 2 ;;
esac
