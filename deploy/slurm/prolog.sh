#!/usr/bin/env bash
# Slurm Prolog for nodes that run libreyolod: checks, before a job starts, that the node's
# daemon answers. slurmd runs it as root on every allocated node, so it talks to the daemon
# over its Unix socket (uid 0 is an admin there; no token needed).
#
# slurm.conf:   Prolog=/etc/slurm/libreyolo-prolog.sh   (or a file in a Prolog= directory)
#
# A failing Prolog makes Slurm drain the node and requeue the job, which is too much for an
# unhealthy profiler on most clusters: by default a failed check is only logged (syslog tag
# libreyolo-prolog). Set LIBREYOLO_PROLOG_STRICT=1 (e.g. in slurmd's environment) to fail the
# Prolog instead.
#
# Environment (all optional):
#   LIBREYOLO               client binary (default /usr/local/bin/libreyolo)
#   LIBREYOLOD_REMOTE       the daemon (default unix:/run/libreyolod/libreyolod.sock)
#   LIBREYOLO_PROLOG_TIMEOUT seconds for the check (default 10)
#   LIBREYOLO_PROLOG_STRICT 1 = exit 1 when the daemon does not answer
set -u

client=${LIBREYOLO:-/usr/local/bin/libreyolo}
remote=${LIBREYOLOD_REMOTE:-unix:/run/libreyolod/libreyolod.sock}
limit=${LIBREYOLO_PROLOG_TIMEOUT:-10}
strict=${LIBREYOLO_PROLOG_STRICT:-0}

log() {
  logger -t libreyolo-prolog -- "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null ||
    echo "libreyolo-prolog: job ${SLURM_JOB_ID:-?}: $*" >&2
}

unhealthy() {
  log "libreyolod is not healthy: $*"
  if [ "$strict" = 1 ]; then
    exit 1
  fi
  exit 0
}

[ -x "$client" ] || unhealthy "client $client is not installed"

err=$(mktemp) || unhealthy "mktemp failed"
trap 'rm -f "$err"' EXIT

# `jobs list` needs the daemon up, its store readable and the caller identified: a fair health
# check with the client alone (grpcurl's grpc.health.v1 check is the alternative).
timeout "$limit" "$client" jobs list --limit 1 --remote "$remote" --json >/dev/null 2>"$err"
rc=$?
if [ "$rc" -eq 0 ]; then
  exit 0
fi
if [ "$rc" -eq 124 ]; then
  unhealthy "no answer from $remote within ${limit}s"
fi
unhealthy "'libreyolo jobs list --remote $remote' exited $rc: $(head -c 300 "$err" | tr '\n' ' ')"
