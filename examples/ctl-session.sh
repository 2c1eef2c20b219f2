#!/bin/sh
# A session with the controller service, on loopback, without any switch: `inart serve` holds
# the switches' tables in memory (--switches memory), listens on a free port, and this
# script registers fig1, submits a job, reports a link down, shows the re-plan and stops.
#
#   sh examples/ctl-session.sh                  # with `inart` on PATH
#   INART="python -m control_plane.cli" sh examples/ctl-session.sh   # from a checkout
#
# With real switches, start them first (`inart switch`, docs/switches.md), drop
# --switches memory and give each switch's P4Runtime address to `ctl topology --switch`.
set -eu
INART=${INART:-inart}
WORK=$(mktemp -d)
SERVE_PID=
stop() {
    if [ -n "$SERVE_PID" ]; then
        kill "$SERVE_PID" 2>/dev/null || true
        wait "$SERVE_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap stop EXIT INT TERM

echo "== inart serve on a free loopback port"
$INART serve --switches memory --listen 127.0.0.1:0 --state "$WORK" >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
SERVER=
for _ in $(seq 1 120); do  # the service prints the address it took once it listens
    SERVER=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$WORK/serve.log")
    [ -n "$SERVER" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
    sleep 0.5
done
[ -n "$SERVER" ] || { echo "inart serve did not start: $WORK/serve.log" >&2; exit 1; }
echo "listening on $SERVER (inart serve, pid $SERVE_PID)"
ctl() { $INART ctl "$@" --address "$SERVER"; }

echo "== register fig1 (in-memory switches: the addresses are names, nothing is dialled)"
ctl topology fig1 --switch v1=127.0.0.1:9559,device=1 --switch v2=127.0.0.1:9560,device=2

echo "== submit a job: planned with InArt and installed (version 1)"
ctl submit --model-size 1e6 --name demo
ctl plan 1

echo "== the link w1 - v1 goes down: the service re-plans (version 2, w1 cut off)"
ctl event link-down w1 v1
ctl jobs
ctl plan 1

echo "== what the service did, as a watcher sees it"
ctl watch --since 0 --count 11 --timeout 15  # to version 1 removed from both switches

echo "== the link comes back: every worker again"
ctl event link-up w1 v1
ctl jobs
echo "== stop"
