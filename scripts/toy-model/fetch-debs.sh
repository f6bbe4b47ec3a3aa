#!/usr/bin/env bash
# Downloads (does not install) espeak-ng and its libraries from Debian 12 into
# .device-carry/debs/, the folder remake.sh unpacks on the GPU machine (carry it there).
# Run on the development machine, from the repository root.
set -euo pipefail
mkdir -p .device-carry/debs
cd .device-carry/debs
apt-get download espeak-ng libespeak-ng1 espeak-ng-data libpcaudio0 libsonic0 libasound2 \
  libpulse0 libasyncns0 libsndfile1 libdbus-1-3 libsystemd0 libapparmor1 libflac12 \
  libvorbisenc2 libvorbis0a libogg0 libopus0 libmpg123-0 libmp3lame0 libx11-6 libx11-xcb1 \
  libxcb1 libxau6 libxdmcp6 libbsd0 libmd0
ls -l
