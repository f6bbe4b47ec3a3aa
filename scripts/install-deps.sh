#!/usr/bin/env bash
# Installs every Debian 12 package hark needs to build, test and fuzz.
# Safe to run repeatedly; uses sudo only when not already root.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  clang libclang-rt-14-dev \
  libdnnl-dev libopenblas-dev libfftw3-dev zlib1g-dev \
  libavformat-dev libavcodec-dev libswresample-dev libavutil-dev ffmpeg \
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libspdlog-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libcurl4-openssl-dev libssl-dev portaudio19-dev \
  curl python3-numpy \
  chromium tmux >/dev/null
# chromium and tmux run the web page and terminal dictation tests (tests/server/web_page.sh,
# tests/cli/dictate_tmux.sh).
# nginx for the replicas test (tests/server/nginx_replicas.sh), which runs its own nginx on
# a free port: the package's service is kept from starting (policy-rc.d exit 101), so the
# install works where port 80 or IPv6 is unavailable and starts no web server here.
if ! dpkg -s nginx >/dev/null 2>&1; then
  guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    guard=1
  fi
  $SUDO apt-get install -y -qq --no-install-recommends nginx >/dev/null || { [ -z "$guard" ] || $SUDO rm -f /usr/sbin/policy-rc.d; exit 1; }
  [ -z "$guard" ] || $SUDO rm -f /usr/sbin/policy-rc.d
fi
# Node.js and npm (for the OpenAI SDK client tests) come with the machine image;
# Debian's nodejs conflicts with that install, so it is not requested here.
command -v node >/dev/null || $SUDO apt-get install -y -qq nodejs npm >/dev/null
