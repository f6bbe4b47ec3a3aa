#!/usr/bin/env bash
# Downloads (does not install) the Debian 12 packages the toy-model corpus is made from,
# and apt's translated package descriptions (Translation-en/de/fr/es), into ignored
# folders of the repository. Run on the development machine (it needs apt), from the
# repository root; then build the corpus with corpus/build.py (standard library only).
#   .device-carry/corpus-debs/      the .deb files (~52 MB)
#   .device-carry/corpus-indexes/   Translation-LL.xz (+ .version: the Release date)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
debs=.device-carry/corpus-debs
indexes=.device-carry/corpus-indexes
mkdir -p "$debs" "$indexes"
packages=$(cd "$here" && /usr/bin/python3 -c 'import sources; print(" ".join(sources.packages()))')
(cd "$debs" && apt-get download $packages)
# The translations: a private apt state folder, so the machine's own lists (and their
# "no translations" setting) stay as they are.
lists=$(mktemp -d)
mkdir -p "$lists/partial"
apt-get update -qq -o Dir::State::Lists="$lists" -o 'Acquire::Languages=' \
  -o Acquire::Languages::=en -o Acquire::Languages::=de -o Acquire::Languages::=fr -o Acquire::Languages::=es
release=$(ls "$lists"/*_dists_bookworm_InRelease | head -1)
date=$(grep -m1 '^Date:' "$release" | cut -d' ' -f2-)
for lang in en de fr es; do
  src=$(ls "$lists"/*_dists_bookworm_main_i18n_Translation-$lang* | head -1)
  /usr/lib/apt/apt-helper cat-file "$src" | xz -6 > "$indexes/Translation-$lang.xz"
  echo "bookworm main, Release of $date" > "$indexes/Translation-$lang.xz.version"
done
rm -rf "$lists"
ls -l "$debs" "$indexes"
