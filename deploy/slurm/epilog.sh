#!/usr/bin/env bash
# Slurm Epilog for nodes that run libreyolod: when a Slurm job ends (normally, cancelled or
# timed out), cancels the daemon jobs it left queued or running, found by the label that
# sbatch-profile.sh puts on them: slurm_job_id=$SLURM_JOB_ID.
#
# slurm.conf:   Epilog=/etc/slurm/libreyolo-epilog.sh
#
# slurmd runs it as root: over the Unix socket uid 0 is an admin, so it sees every user's jobs.
# A failing Epilog drains the node, so this script always exits 0 and logs problems (syslog tag
# libreyolo-epilog). Cancelling is idempotent: a job that finished meanwhile is left as it is.
#
# Environment (all optional):
#   LIBREYOLO                client binary (default /usr/local/bin/libreyolo)
#   LIBREYOLOD_REMOTE        the daemon (default unix:/run/libreyolod/libreyolod.sock)
#   LIBREYOLO_EPILOG_TIMEOUT seconds per client call (default 20)
#   LIBREYOLO_EPILOG_MATCH_OWNER 1 = cancel only jobs whose owner is $SLURM_JOB_USER (when
#                            the daemon's user names are the cluster's login names)
set -u

client=${LIBREYOLO:-/usr/local/bin/libreyolo}
remote=${LIBREYOLOD_REMOTE:-unix:/run/libreyolod/libreyolod.sock}
limit=${LIBREYOLO_EPILOG_TIMEOUT:-20}
owner=""
if [ "${LIBREYOLO_EPILOG_MATCH_OWNER:-0}" = 1 ]; then
  owner=${SLURM_JOB_USER:-}
fi

log() {
  logger -t libreyolo-epilog -- "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null ||
    echo "libreyolo-epilog: job ${SLURM_JOB_ID:-?}: $*" >&2
}

[ -n "${SLURM_JOB_ID:-}" ] || exit 0
if [ ! -x "$client" ]; then
  log "client $client is not installed; nothing cancelled"
  exit 0
fi

err=$(mktemp) || exit 0
trap 'rm -f "$err"' EXIT
json=$(timeout "$limit" "$client" jobs list --label "slurm_job_id=$SLURM_JOB_ID" \
  --state queued --state running --limit 500 --json --remote "$remote" 2>"$err")
rc=$?
if [ "$rc" -ne 0 ]; then
  log "could not list daemon jobs (exit $rc): $(head -c 300 "$err" | tr '\n' ' ')"
  exit 0
fi

# The ids of the jobs still queued or running (checked again here). Reads the ListJobs response
# as JSON ({"jobs": [...]}, or a bare array), states as "JOB_STATE_RUNNING", "running" or 2.
if ! ids=$(printf '%s' "$json" | OWNER="$owner" python3 -c '
import json, os, sys
try:
    doc = json.load(sys.stdin)
except ValueError as e:
    sys.exit("unparseable jobs list: %s" % e)
jobs = doc.get("jobs", []) if isinstance(doc, dict) else doc
owner = os.environ.get("OWNER", "")
for job in jobs or []:
    state = str(job.get("state", "")).upper().replace("JOB_STATE_", "")
    if state not in ("QUEUED", "RUNNING", "1", "2"):
        continue
    if owner and job.get("owner") != owner:
        continue
    job_id = job.get("id") or job.get("job_id") or job.get("jobId")
    if job_id:
        print(job_id)
' 2>&1); then
  log "$ids"
  exit 0
fi

for id in $ids; do
  if out=$(timeout "$limit" "$client" jobs cancel "$id" --remote "$remote" 2>&1); then
    log "cancelled libreyolod job $id"
  else
    log "could not cancel libreyolod job $id: $(printf '%s' "$out" | head -c 300 | tr '\n' ' ')"
  fi
done
exit 0
