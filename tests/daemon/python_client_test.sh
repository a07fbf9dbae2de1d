#!/usr/bin/env bash
# Runs deploy/python/libreyolo_scheduler_client.py against a real libreyolod:
#   1. on a Unix socket: a tiny CPU infer job (imgsz 64, warmup 1, runs 2, threads 1) must
#      succeed, the health check must say SERVING and the printed summary must carry its
#      headline (verdict, source job:<id>, device cpu); then SIGTERM must stop the daemon with 0;
#   2. on loopback TCP (--insecure-tcp, a tokens file): the same job with the right token
#      succeeds; with a wrong token the client exits non-zero and says UNAUTHENTICATED; SIGTERM
#      again exits 0.
# Environment (set by tests/daemon/CMakeLists.txt; defaults for running it by hand from the
# source root): LIBREYOLOD, LIBREYOLO (the binaries), PYTHON (default /usr/bin/python3, which
# has Debian's python3-grpcio and python3-protobuf), and protoc on PATH.
set -euo pipefail

LIBREYOLOD=${LIBREYOLOD:-build-me/server/daemon/libreyolod}
LIBREYOLO=${LIBREYOLO:-build-me/client/libreyolo}
PYTHON=${PYTHON:-/usr/bin/python3}
CLIENT=deploy/python/libreyolo_scheduler_client.py
START_TIMEOUT=${START_TIMEOUT:-60}  # seconds for the daemon to answer
JOB_TIMEOUT=${JOB_TIMEOUT:-120}     # seconds for one job
unset LIBREYOLO_TOKEN LIBREYOLO_REMOTE  # the test names both explicitly

for f in "$LIBREYOLOD" "$LIBREYOLO"; do
  [ -x "$f" ] || { echo "FAIL: $f is not an executable (set LIBREYOLOD/LIBREYOLO)"; exit 1; }
done
[ -f "$CLIENT" ] || { echo "FAIL: run from the source root ($CLIENT not found)"; exit 1; }
if ! "$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null; then
  echo "FAIL: $PYTHON lacks grpc/protobuf (install python3-grpcio python3-protobuf)"; exit 1
fi
command -v protoc >/dev/null || { echo "FAIL: protoc not on PATH (protobuf-compiler)"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/lypy.XXXXXX")
DAEMON_PID="" WATCHDOG_PID="" CLIENT_PID=""
cleanup() {
  local rc=$?
  if [ -n "$CLIENT_PID" ]; then kill -TERM "$CLIENT_PID" 2>/dev/null || true; fi
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  if [ -n "$WATCHDOG_PID" ]; then kill "$WATCHDOG_PID" 2>/dev/null || true; fi
  if [ "$rc" != 0 ]; then
    for log in "$TMP"/daemon*.log; do
      [ -f "$log" ] && { echo "---- $log"; tail -n 40 "$log"; }
    done
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok:   $*"; }

# start_daemon <name> <libreyolod flags...>: starts it in the background (DAEMON_PID).
start_daemon() {
  local name=$1
  shift
  mkdir -p "$TMP/$name"
  "$LIBREYOLOD" --state-dir "$TMP/$name/state" --store-dir "$TMP/$name/store" --threads 1 "$@" \
    >"$TMP/daemon-$name.log" 2>&1 &
  DAEMON_PID=$!
  # If this script is killed outright (SIGKILL, no trap), the daemon must not outlive it.
  if [ -n "$WATCHDOG_PID" ]; then kill "$WATCHDOG_PID" 2>/dev/null || true; fi
  (
    trap - EXIT INT TERM
    while kill -0 "$DAEMON_PID" 2>/dev/null; do
      kill -0 $$ 2>/dev/null || { kill -KILL "$DAEMON_PID" 2>/dev/null; sleep 1; rm -rf "$TMP"; break; }
      sleep 1
    done
  ) </dev/null >/dev/null 2>&1 &
  WATCHDOG_PID=$!
}

# wait_ready <libreyolo jobs list flags...>: polls until the daemon answers, or fails.
wait_ready() {
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$LIBREYOLO" jobs list "$@" >/dev/null 2>"$TMP/poll.err"; do
    kill -0 "$DAEMON_PID" 2>/dev/null || fail "libreyolod exited before answering"
    [ "$SECONDS" -lt "$deadline" ] ||
      fail "libreyolod did not answer within ${START_TIMEOUT}s: $(cat "$TMP/poll.err")"
    sleep 0.2
  done
}

# stop_daemon: SIGTERM, and the daemon must exit 0.
stop_daemon() {
  kill -TERM "$DAEMON_PID"
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=""
  kill "$WATCHDOG_PID" 2>/dev/null || true
  WATCHDOG_PID=""
  [ "$rc" = 0 ] || fail "libreyolod exited $rc after SIGTERM"
  ok "libreyolod exited 0 after SIGTERM"
}

JOB=(--imgsz 64 --warmup 1 --runs 2 --threads 1 --timeout "$JOB_TIMEOUT" --label test=python_client)

# check_run <name> <out> <err>: the job succeeded and the summary has its headline.
check_run() {
  local name=$1 out=$2 err=$3
  grep -qx 'health: SERVING' "$out" || fail "$name: no 'health: SERVING' line in stdout"
  local id
  id=$(sed -n 's/^submitted job \([^ ]*\) .*/\1/p' "$out")
  [ -n "$id" ] || fail "$name: no 'submitted job ID' line"
  grep -q "^job $id: SUCCEEDED in " "$out" || fail "$name: no 'job $id: SUCCEEDED' line"
  grep -q '^verdict: ' "$out" || fail "$name: the summary has no 'verdict:' headline"
  grep -Eq "^  source +job:$id \(profile, inference\)$" "$out" ||
    fail "$name: the summary's source line does not name job:$id (profile, inference)"
  grep -Eq '^  device +cpu' "$out" || fail "$name: the summary's device is not cpu"
  grep -Eq '^  latency \(mean\) +[0-9.]+ ' "$out" || fail "$name: no latency (mean) line"
  ok "$name: job $id SUCCEEDED, health SERVING, summary headline present"
}

# run_client <name> <client flags...>: runs the Python client, stdout/stderr to files, its exit
# status in RC. In the background so that a signal to this script is handled at once.
run_client() {
  local name=$1
  shift
  "$PYTHON" "$CLIENT" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  CLIENT_PID=$!
  RC=0
  wait "$CLIENT_PID" || RC=$?
  CLIENT_PID=""
}

# ---- 1. Unix socket --------------------------------------------------------------------------
SOCK="$TMP/d.sock"
start_daemon unix --listen "unix:$SOCK"
wait_ready --remote "unix:$SOCK"
ok "libreyolod answers on unix:$SOCK"

run_client unix --target "unix:$SOCK" "${JOB[@]}"
rc=$RC
[ "$rc" = 0 ] || { cat "$TMP/unix.out" "$TMP/unix.err"; fail "unix: client exited $rc"; }
check_run unix "$TMP/unix.out" "$TMP/unix.err"

run_client health --target "unix:$SOCK" --health-only
rc=$RC
[ "$rc" = 0 ] && grep -qx 'health: SERVING' "$TMP/health.out" ||
  { cat "$TMP/health.out" "$TMP/health.err"; fail "--health-only: exit $rc"; }
ok "--health-only: SERVING, exit 0"
stop_daemon

# ---- 2. loopback TCP with a tokens file -------------------------------------------------------
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TOKEN="pytest-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && printf '# test tokens\n%s alice\n' "$TOKEN" >"$TMP/tokens")
chmod 600 "$TMP/tokens"
printf '%s\n' "$TOKEN" >"$TMP/good.token"
printf 'wrong-%s\n' "$TOKEN" >"$TMP/bad.token"
chmod 600 "$TMP/good.token" "$TMP/bad.token"

start_daemon tcp --listen "127.0.0.1:$PORT" --insecure-tcp --tokens-file "$TMP/tokens"
wait_ready --remote "127.0.0.1:$PORT" --insecure --token-file "$TMP/good.token"
ok "libreyolod answers on 127.0.0.1:$PORT"

run_client tcp --target "127.0.0.1:$PORT" --insecure --token-file "$TMP/good.token" "${JOB[@]}"
rc=$RC
[ "$rc" = 0 ] || { cat "$TMP/tcp.out" "$TMP/tcp.err"; fail "tcp: client exited $rc"; }
check_run tcp "$TMP/tcp.out" "$TMP/tcp.err"

run_client badtoken --target "127.0.0.1:$PORT" --insecure --token-file "$TMP/bad.token" \
  "${JOB[@]}"
rc=$RC
[ "$rc" != 0 ] || fail "wrong token: the client exited 0"
grep -q 'UNAUTHENTICATED' "$TMP/badtoken.err" ||
  { cat "$TMP/badtoken.err"; fail "wrong token: no UNAUTHENTICATED in the message"; }
if grep -q "$TOKEN" "$TMP/badtoken.out" "$TMP/badtoken.err"; then
  fail "wrong token: the client printed a token"
fi
ok "wrong token: exit $rc, $(grep -m1 UNAUTHENTICATED "$TMP/badtoken.err")"

run_client notoken --target "127.0.0.1:$PORT" --insecure "${JOB[@]}"
rc=$RC
[ "$rc" != 0 ] || fail "no token: the client exited 0"
ok "no token on TCP: exit $rc"
stop_daemon

echo "PASS"
