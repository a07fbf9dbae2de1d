#!/usr/bin/env bash
# Issue 36 §6: a command that arrives while the private libreyolod is stopping waits for it,
# as docs/cli.md ("Private daemon") promises, instead of failing "state_dir ... in use".
#
# A daemon that stops drains its jobs (up to --drain-timeout, 10 s for a private one) with its
# state_dir lock held (server/daemon/store/dir_lock.h: an flock on <state>/state/libreyolod.lock
# with its pid written in), and nothing answers on the socket any more. Made deterministic here:
# a process holds that lock exactly as DirLock does (flock(1) takes the same flock(2)) and lets
# it go after 2 s, with no socket. The command (`jobs list`: it needs the private daemon) must
# say once that it waits, then start a fresh daemon once the lock is free and succeed.
# Before the fix it failed at once, exit 2, "libreyolod exited at start ... state_dir ... is in
# use by another libreyolod".
# A holder that outlasts the bound (LIBREYOLO_DAEMON_STOP_WAIT_S, default 30 s; 1 s here) fails
# after it, naming the pid that holds the lock and the ways out.
#   private_daemon_stopping_test.sh <libreyolo> <libreyolod>
set -u
cli="$(realpath "$1")"
daemon="$(realpath "$2")"
tmp="$(mktemp -d)"
fail=0
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }
ok() { echo "ok:   $1"; }
bad() { echo "FAIL: $1"; fail=1; }
cleanup() {
  # A daemon this test started and that is still there (a failure half way).
  if [ -f "$tmp/run/libreyolo/libreyolod.pid" ]; then
    kill -9 "$(cat "$tmp/run/libreyolo/libreyolod.pid")" 2>/dev/null
  fi
  [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
  [ -f "$tmp/sleeper" ] && kill "$(cat "$tmp/sleeper")" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

export XDG_RUNTIME_DIR="$tmp/run" HOME="$tmp/home" XDG_STATE_HOME="$tmp/home/state"
export LIBREYOLO_STATE_DIR="$tmp/st" LIBREYOLOD="$daemon"
unset LIBREYOLO_DAEMON_STOP_WAIT_S
mkdir -p "$XDG_RUNTIME_DIR" "$HOME" "$LIBREYOLO_STATE_DIR/state" "$LIBREYOLO_STATE_DIR/store"
lock="$LIBREYOLO_STATE_DIR/state/libreyolod.lock"

# hold_lock <seconds>: a stopping daemon's state_dir lock, its pid in the file; $tmp/held once
# it is taken. Sets $holder.
hold_lock() {
  rm -f "$tmp/held"
  # -o: only flock(1) itself holds the lock (its pid, $PPID in the command, goes in the file).
  flock -o -x "$lock" -c "echo \$PPID > '$lock'; echo \$\$ > '$tmp/sleeper'; touch '$tmp/held'; exec sleep $1" &
  holder=$!
  for _ in $(seq 100); do [ -f "$tmp/held" ] && return 0; sleep 0.05; done
  bad "the lock holder did not start"
  exit 1
}

# 1. Held for 2 s: the command waits, says so once, and succeeds on a fresh daemon.
hold_lock 2
holder_pid="$(tr -d '\n' <"$lock")"
start=$(now_ms)
"$cli" jobs list >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed=$(( $(now_ms) - start ))
if [ "$rc" == 0 ]; then ok "jobs list exits 0 after the stopping daemon is gone"; else
  bad "jobs list exit $rc (want 0)"; fi
if grep -q "in use" "$tmp/err"; then bad "it failed 'in use'"; else ok "no 'in use' error"; fi
n=$(grep -c "waiting" "$tmp/err")
if [ "$n" == 1 ]; then ok "one line says it waits"; else bad "$n lines say it waits (want 1)"; fi
if grep "waiting" "$tmp/err" | grep -q "pid $holder_pid"; then
  ok "the wait names the holder's pid ($holder_pid)"
else bad "the wait does not name the holder's pid ($holder_pid)"; fi
if [ "$elapsed" -ge 1500 ]; then ok "it waited (${elapsed} ms)"; else
  bad "it returned after ${elapsed} ms, before the holder let go"; fi
if [ "$rc" != 0 ] || [ "$n" != 1 ]; then
  echo "--- stderr ---"; cat "$tmp/err"
  echo "--- daemon log ---"; cat "$LIBREYOLO_STATE_DIR/libreyolod.log" 2>/dev/null | tail -20
fi
wait "$holder" 2>/dev/null
holder=

# 2. Held beyond the bound: the command fails after it with the holder's pid and the ways out,
#    exit 2, and starts no daemon.
export LIBREYOLO_DAEMON_STOP_WAIT_S=1
hold_lock 20
holder_pid="$(tr -d '\n' <"$lock")"
start=$(now_ms)
"$cli" jobs list >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed=$(( $(now_ms) - start ))
if [ "$rc" == 2 ]; then ok "held past the bound: exit 2"; else bad "held past the bound: exit $rc (want 2)"; fi
if grep -q "pid $holder_pid" "$tmp/err" && grep -q "LIBREYOLO_STATE_DIR" "$tmp/err"; then
  ok "the error names pid $holder_pid and LIBREYOLO_STATE_DIR"
else bad "the error does not name pid $holder_pid and LIBREYOLO_STATE_DIR"; cat "$tmp/err"; fi
if [ "$elapsed" -lt 10000 ]; then ok "it gave up after ${elapsed} ms"; else
  bad "it took ${elapsed} ms with a 1 s bound"; fi
kill "$holder" "$(cat "$tmp/sleeper")" 2>/dev/null
wait "$holder" 2>/dev/null
holder=

[ "$fail" == 0 ] && echo "PASS" || echo "FAILED"
exit "$fail"
