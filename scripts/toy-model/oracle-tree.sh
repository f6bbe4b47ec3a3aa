#!/usr/bin/env bash
# Between a training run's last call and the oracle call that a shipped checkpoint needs,
# on the development machine, in the seconds the GPU machine stays warm (it goes back
# after 30 s idle, and a fresh one costs minutes of device time or may not come at all):
# takes the training slim off, puts the run's checkpoint into models/hark-toy-speech/ and
# slims the tree to what the oracle reads. Then run, as the next device call:
#   python3 scripts/oracle/toy_eval.py --out $OUT > $OUT/toy_eval.log 2>&1;
#   GOLDEN_DIR=$OUT/g OUT=$OUT bash scripts/oracle/run_all.sh decoding
# and afterwards `bash scripts/device/slim-tree.sh off`. Whether the checkpoint ships is
# decided later, on hark's own evaluation (NEXT.md); the goldens are what shipping needs
# from the GPU. Not shipping it: `git checkout models/hark-toy-speech/`.
#   bash scripts/toy-model/oracle-tree.sh PARTS_DIR    # the last call's state.tar.part-*
#   bash scripts/toy-model/oracle-tree.sh MODEL_DIR    # or a checkpoint folder (model.safetensors,
#                                                      # e.g. average.py's output)
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:?usage: oracle-tree.sh PARTS_DIR|MODEL_DIR (the state.tar.part-* the last training call returned, or a checkpoint folder)}
unpacked=""
if [[ ! -f $src/model.safetensors ]]; then  # a state's parts: unpack them first
  unpacked=$(mktemp -d /tmp/hark-oracle-model.XXXXXX)
  /usr/bin/python3 scripts/toy-model/runstate.py unpack "$src" "$unpacked" >/dev/null
fi
model=${unpacked:-$src}
bash scripts/toy-model/slim-for-training.sh off >/dev/null
rm -f /tmp/SLIMMED
for f in model.safetensors config.json generation_config.json training-state.json; do
  cp "$model/$f" models/hark-toy-speech/
done
[[ -z $unpacked ]] || rm -rf "$unpacked"
echo "models/hark-toy-speech now holds the checkpoint of $src; bytes tracked for the oracle call (limit 64 MiB):"
bash scripts/device/slim-tree.sh oracle
