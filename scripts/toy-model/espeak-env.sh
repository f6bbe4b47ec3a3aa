# Sourced by remake.sh and hark_eval.sh: unpacks the carried espeak-ng and codec .debs
# (scripts/toy-model/fetch-debs.sh) into /tmp/hark-espeak and points synth.py and
# augment.py at them. Only the synthesis workers get the library path (train.py passes
# it on): the Debian 12 libraries must not shadow the machine's own in the process that
# runs torch. The same path lets augment.py find libopus, libmp3lame and libmpg123 there.
prefix=/tmp/hark-espeak
mkdir -p "$prefix"
for f in .device-carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
export ESPEAK_LD_PATH=$lib:$prefix/lib/x86_64-linux-gnu:$lib/pulseaudio
export ESPEAK_LIB=$lib/libespeak-ng.so.1 ESPEAK_DATA=$lib ESPEAK_BIN=$prefix/usr/bin/espeak-ng
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0
