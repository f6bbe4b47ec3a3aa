#!/usr/bin/env bash
# deploy/systemd/hark@.service: `systemd-analyze verify` accepts it (with ExecStart pointing
# at the hark under test), its offline security exposure stays at or below 3.0 ("OK"), its
# TimeoutStopSec leaves room for the --drain-timeout it passes plus hark's own 20 s grace,
# and the flags in ExecStart are ones `hark serve` accepts.
# Usage: bash tests/server/systemd_unit.sh path/to/hark
# Skips (exit 0, "SKIPPED: ...") where systemd-analyze is not installed.
set -euo pipefail
HARK=$(cd "$(dirname "${1:?usage: systemd_unit.sh path/to/hark}")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
UNIT=$ROOT/deploy/systemd/hark@.service
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
command -v systemd-analyze >/dev/null || { echo "SKIPPED: systemd-analyze is not installed"; exit 0; }

sed "s|/usr/local/bin/hark|$HARK|" "$UNIT" >"$WORK/hark@hark1.service"
grep -q "ExecStart=$HARK serve" "$WORK/hark@hark1.service" || fail "ExecStart no longer starts /usr/local/bin/hark serve"
(cd "$WORK" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify ./hark@hark1.service) >"$WORK/verify.log" 2>&1 ||
  fail "systemd-analyze verify: $(cat "$WORK/verify.log")"
[[ ! -s $WORK/verify.log ]] || fail "systemd-analyze verify warns: $(cat "$WORK/verify.log")"
(cd "$WORK" && systemd-analyze security --offline=true --threshold=30 ./hark@hark1.service) >"$WORK/security.log" 2>&1 ||
  fail "exposure above 3.0: $(tail -3 "$WORK/security.log")"

# The drain bound: hark exits at most 20 s after --drain-timeout, systemd must wait longer.
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
drain=$(sed -n 's/.*--drain-timeout \([0-9]*\).*/\1/p' <<<"$exec_start")
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$UNIT")
[[ -n $drain && -n $stop ]] || fail "no --drain-timeout in ExecStart or no TimeoutStopSec"
((stop > drain + 20)) || fail "TimeoutStopSec=$stop does not exceed --drain-timeout $drain + 20 s"
grep -q '^KillSignal=SIGTERM$' "$UNIT" || fail "KillSignal is not SIGTERM"

# Every flag ExecStart passes is a `hark serve` flag.
for flag in $(grep -o -- '--[a-z-]*' <<<"$exec_start"); do
  "$HARK" serve --help | grep -q -- "$flag" || fail "hark serve has no $flag"
done
echo "PASSED: systemd-analyze verify; $(grep -o 'Overall exposure level.*' "$WORK/security.log")"
