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
# tests/cli/dictate_tmux.sh). Node.js and npm (for the OpenAI SDK and playwright-core)
# come with the machine image; Debian's nodejs conflicts with that install, so it is not
# requested here.
command -v node >/dev/null || $SUDO apt-get install -y -qq nodejs npm >/dev/null
