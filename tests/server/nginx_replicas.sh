#!/usr/bin/env bash
# Replicas behind nginx with the shipped deploy/nginx/hark.conf: two `hark serve`
# instances (hark1, hark2) on loopback with the bundled model, nginx in front of them on a
# free port with its files in a temporary prefix, and node/replicas.mjs driving the OpenAI
# SDK and streaming sessions through nginx while hark1 gets SIGTERM. Then: hark1 exited 0
# having cancelled nothing, nginx retried at least one request on hark2, and no
# transcription failed.
# Usage: bash tests/server/nginx_replicas.sh path/to/hark
# Skips (exit 0, "SKIPPED: ...") without nginx, node or the bundled model.
set -euo pipefail
HARK=${1:?usage: nginx_replicas.sh path/to/hark}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$ROOT/models/hark-toy-speech
CLIPS=$ROOT/tests/data/toy-eval
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
skip() { echo "SKIPPED: $*"; exit 0; }
fail() {
  echo "FAILED: $*"
  for f in hark1.log hark2.log nginx-error.log access.log; do
    [[ -f $WORK/$f ]] && { echo "--- $f"; tail -25 "$WORK/$f"; }
  done
  exit 1
}

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || skip "nginx is not installed (apt-get install nginx)"
command -v node >/dev/null || skip "node is not installed"
[[ -d $MODEL ]] || skip "no bundled model at $MODEL"

# A clip longer than one 30 s window (two windows, so SSE has events to spread out), starting
# with CLIP_A: three times CLIP_A, CLIP_B and the two-sentence clip (2.7 + 2.8 + 6.9 s), 37.3 s.
CLIP_A=$CLIPS/en-single-01.wav CLIP_B=$CLIPS/en-single-05.wav CLIP_MULTI=$CLIPS/en-multi-07.wav
python3 - "$WORK/long.wav" "$CLIP_A" "$CLIP_B" "$CLIP_MULTI" "$CLIP_A" "$CLIP_B" "$CLIP_MULTI" \
  "$CLIP_A" "$CLIP_B" "$CLIP_MULTI" <<'EOF' || fail "long.wav: see above"
import sys, wave
out = wave.open(sys.argv[1], "wb")
for i, name in enumerate(sys.argv[2:]):
    with wave.open(name) as w:
        if i == 0:
            out.setparams(w.getparams())
        out.writeframes(w.readframes(w.getnframes()))
seconds = out.getnframes() / out.getframerate()
out.close()
sys.exit(0 if seconds > 30 else f"long.wav is {seconds:.1f} s, not longer than one 30 s window")
EOF

start_hark() {  # name → sets PORT_<name> and PID_<name>
  "$HARK" serve "$MODEL" --port 0 --instance-id "$1" --resident --drain-timeout 120 --threads 1 >"$WORK/$1.log" 2>&1 &
  local pid=$! port=""
  PIDS+=("$pid")
  for _ in $(seq 1 300); do
    # The log may not exist yet (the background shell creates it): no port yet, not an error.
    port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\).*|\1|p' "$WORK/$1.log" 2>/dev/null | head -1 || true)
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || fail "hark serve $1 exited at startup"
    sleep 0.05
  done
  [[ -n $port ]] || fail "hark serve $1 did not report its port"
  eval "PORT_$1=$port PID_$1=$pid"
}
start_hark hark1
start_hark hark2

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The shipped config with this test's addresses; nginx's own files stay in $WORK.
start_nginx() {
  NGINX_PORT=$(free_port)
  sed -e "s|listen 80;|listen 127.0.0.1:$NGINX_PORT;|" -e "s|127.0.0.1:8081|127.0.0.1:$PORT_hark1|g" \
      -e "s|127.0.0.1:8082|127.0.0.1:$PORT_hark2|g" -e "s|/var/log/nginx/hark.access.log|$WORK/access.log|" \
      "$ROOT/deploy/nginx/hark.conf" >"$WORK/hark.conf"
  for want in "listen 127.0.0.1:$NGINX_PORT;" "server 127.0.0.1:$PORT_hark1;" "server 127.0.0.1:$PORT_hark2;" "$WORK/access.log"; do
    grep -qF "$want" "$WORK/hark.conf" || fail "deploy/nginx/hark.conf changed shape: no '$want' after templating"
  done
  mkdir -p "$WORK/tmp"
  cat >"$WORK/nginx.conf" <<EOF
user $(id -un) $(id -gn);
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log info;
events { worker_connections 256; }
http {
  client_body_temp_path $WORK/tmp/body;
  proxy_temp_path $WORK/tmp/proxy;
  fastcgi_temp_path $WORK/tmp/fastcgi;
  uwsgi_temp_path $WORK/tmp/uwsgi;
  scgi_temp_path $WORK/tmp/scgi;
  access_log off;
  include $WORK/hark.conf;
}
EOF
  "$NGINX" -t -q -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" >"$WORK/nginx-t.log" 2>&1 ||
    fail "nginx -t rejects the config: $(cat "$WORK/nginx-t.log")"
  "$NGINX" -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" -g 'daemon off;' 2>>"$WORK/nginx-error.log" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/v1/models" && return 0
    kill -0 "$NGINX_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
start_nginx || start_nginx || fail "nginx did not start"  # a second port if the first was taken meanwhile

NODE_DIR=$ROOT/tests/server/node
if [[ ! -d $NODE_DIR/node_modules/openai ]]; then
  (cd "$NODE_DIR" && { npm ci --no-audit --no-fund || npm install --no-audit --no-fund; }) >"$WORK/npm.log" 2>&1 ||
    fail "npm could not install the openai package: $(tail -5 "$WORK/npm.log")"
fi
NGINX_URL=http://127.0.0.1:$NGINX_PORT HARK1_URL=http://127.0.0.1:$PORT_hark1 HARK1_PID=$PID_hark1 \
  CLIP_A=$CLIP_A CLIP_B=$CLIP_B LONG_CLIP=$WORK/long.wav \
  node "$NODE_DIR/replicas.mjs" || fail "node/replicas.mjs"

# hark1 drained: exit status 0, nothing cancelled, its accepted requests answered 200.
for _ in $(seq 1 600); do kill -0 "$PID_hark1" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID_hark1" 2>/dev/null && fail "hark1 still runs 60 s after SIGTERM"
wait "$PID_hark1" && RC=0 || RC=$?
[[ $RC == 0 ]] || fail "hark1 exited with $RC after SIGTERM"
grep -q "drained cancelled=0" "$WORK/hark1.log" || fail "hark1 did not report a clean drain"
# nginx retried on hark2 what hark1 refused (503 while draining, or a refused connection after).
RETRIED=$(grep -cE 'upstream_status=50[23], 200' "$WORK/access.log" || true)
[[ $RETRIED -ge 1 ]] || fail "no request was retried on the other instance"
BAD=$(grep -E '"POST /v1/audio/transcriptions' "$WORK/access.log" | grep -vc '" 200 ' || true)
[[ $BAD == 0 ]] || fail "$BAD transcription(s) did not end 200 through nginx"

# hark2: SIGTERM twice while it transcribes the two-window clip. The second signal ends the
# drain at once: the job is cancelled at its next window, answered 503 drain_timeout, and
# hark exits 75. (Should the job have finished first, the answer is 200 and the status 0:
# either way the status must match the answer.)
curl -s -o "$WORK/cut.json" -w '%{http_code}' "http://127.0.0.1:$PORT_hark2/v1/audio/transcriptions" \
  -F file=@"$WORK/long.wav" >"$WORK/cut.status" &
CURL_PID=$!
for _ in $(seq 1 1000); do
  [[ $(curl -s "http://127.0.0.1:$PORT_hark2/stats" | sed -n 's/.*"in_flight":\([0-9]*\).*/\1/p') -ge 2 ]] && break
  sleep 0.01
done
kill -TERM "$PID_hark2"; sleep 0.05; kill -TERM "$PID_hark2"
wait "$CURL_PID" || true
wait "$PID_hark2" && RC=0 || RC=$?
CUT=$(cat "$WORK/cut.status")
if [[ $CUT == 503 ]]; then
  grep -q '"code":"drain_timeout"' "$WORK/cut.json" || fail "cut job: $(cat "$WORK/cut.json")"
  [[ $RC == 75 ]] || fail "hark2 exited $RC after cancelling a job (want 75)"
else
  [[ $CUT == 200 && $RC == 0 ]] || fail "hark2: answer $CUT and exit status $RC do not match"
fi
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || true
PIDS=()
echo "PASSED: nginx + 2 instances; $RETRIED request(s) retried on hark2 while hark1 drained; hark2 stopped by two signals: answer $CUT, exit $RC"
