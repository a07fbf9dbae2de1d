#!/usr/bin/env bash
# Runs the installed-style binary as a user would: exit codes, and that readers keep stdout for
# results and stderr for diagnostics.
set -u
bin="$1"
fixtures="$2"
trace="$fixtures/traces/trace_filter.json.gz"
fail=0
check() {  # check <expected-code> <description> <command...>
  local want="$1" what="$2"
  shift 2
  "$@" >/tmp/libreyolo_smoke_out.$$ 2>/tmp/libreyolo_smoke_err.$$
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; cat /tmp/libreyolo_smoke_err.$$; fail=1
  else
    echo "ok:   $what (exit $got)"
  fi
}
check 0 "profile lists subcommands" "$bin" profile
check 0 "summary on a real trace" "$bin" profile summary "$trace"
[ -s /tmp/libreyolo_smoke_err.$$ ] && { echo "FAIL: summary wrote to stderr"; fail=1; }
check 2 "missing file" "$bin" profile summary /nonexistent.json
[ -s /tmp/libreyolo_smoke_out.$$ ] && { echo "FAIL: an error wrote to stdout"; fail=1; }
check 2 "key=value" "$bin" profile kernels "$trace" top=3
check 2 "unknown metric" "$bin" profile get "$trace" nope
check 0 "version" "$bin" --version
check 0 "report writes a page" "$bin" profile report "$trace" -o /tmp/libreyolo_smoke_report.$$.html
head -c 15 /tmp/libreyolo_smoke_report.$$.html | grep -q '<!DOCTYPE html>' ||
  { echo "FAIL: report is not an HTML page"; fail=1; }
check 2 "report -o in a missing folder" "$bin" profile report "$trace" -o /nonexistent/r.html
rm -f /tmp/libreyolo_smoke_report.$$.html
rm -f /tmp/libreyolo_smoke_out.$$ /tmp/libreyolo_smoke_err.$$
exit $fail
