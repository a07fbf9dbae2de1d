#!/usr/bin/env bash
#SBATCH --job-name=libreyolo-profile
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --gres=gpu:1
#SBATCH --time=00:30:00
#SBATCH --output=libreyolo-profile-%j.out
#
# Profiles a short training run on the GPU that Slurm gave this job, through the node's
# libreyolod, and prints the summary. The daemon does the work; this job only holds the GPU
# allocation (so nothing else is scheduled on it meanwhile) and follows the progress.
#
#   sbatch deploy/slurm/sbatch-profile.sh [DATA] [more `libreyolo profile run` flags]
#   sbatch deploy/slurm/sbatch-profile.sh coco128 --batch 16 --steps 20 --imgsz 640
#
# Every daemon job it submits carries the label slurm_job_id=$SLURM_JOB_ID, so epilog.sh cancels
# what is left when the Slurm job ends early (scancel, time limit).
#
# Environment (all optional):
#   LIBREYOLO             client binary (default: libreyolo on PATH)
#   LIBREYOLO_PORT        the daemon's port (default 50051)
#   LIBREYOLO_TOKEN       the token itself; else LIBREYOLO_TOKEN_FILE (default ~/.libreyolo/token)
#   LIBREYOLO_TLS_CA      CA of the daemon's certificate (default /etc/libreyolo/ca.crt if present)
#   LIBREYOLO_DEVICE      device index for the daemon (default: the first GPU in SLURM_JOB_GPUS)
set -euo pipefail

: "${SLURM_JOB_ID:?submit this script with sbatch}"
client=${LIBREYOLO:-libreyolo}
data=${1:-coco128}
if [ $# -gt 0 ]; then shift; fi

# The daemon on this node, by the name its TLS certificate carries.
conn=(--remote "$(hostname):${LIBREYOLO_PORT:-50051}")
if [ -z "${LIBREYOLO_TOKEN:-}" ]; then
  conn+=(--token-file "${LIBREYOLO_TOKEN_FILE:-$HOME/.libreyolo/token}")
fi
if [ -z "${LIBREYOLO_TLS_CA:-}" ] && [ -r /etc/libreyolo/ca.crt ]; then
  conn+=(--tls-ca /etc/libreyolo/ca.crt)
fi

# SLURM_JOB_GPUS holds the node's GPU indices (PCI order, as the daemon numbers them with
# CUDA_DEVICE_ORDER=PCI_BUS_ID); CUDA_VISIBLE_DEVICES inside the job would be renumbered from 0.
gpus=${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-0}}
device=${LIBREYOLO_DEVICE:-${gpus%%,*}}

echo "libreyolo: profiling '$data' on $(hostname) device $device (Slurm job $SLURM_JOB_ID)"
set +e
"$client" profile run "$data" "${conn[@]}" --device "$device" \
  --label "slurm_job_id=$SLURM_JOB_ID" "$@"
rc=$?
set -e

# The daemon job of this Slurm job: the newest one with our label.
job_id=$("$client" jobs list "${conn[@]}" --label "slurm_job_id=$SLURM_JOB_ID" --json |
  python3 -c '
import json, sys
doc = json.load(sys.stdin)
jobs = doc.get("jobs", []) if isinstance(doc, dict) else doc
if jobs:
    print(jobs[0].get("id") or jobs[0].get("job_id") or jobs[0].get("jobId") or "")
')
if [ -z "$job_id" ]; then
  echo "libreyolo: no daemon job labelled slurm_job_id=$SLURM_JOB_ID (profile run exited $rc)" >&2
  exit "$(( rc == 0 ? 1 : rc ))"
fi

if [ "$rc" -ne 0 ]; then
  # 3: the run produced no profile (the dataset cannot fill the window); 2: bad arguments.
  echo "libreyolo: profile run exited $rc; the daemon's record of job $job_id:" >&2
  "$client" jobs show "$job_id" "${conn[@]}" >&2 || true
  exit "$rc"
fi

echo "libreyolo: summary of job:$job_id"
"$client" profile summary "job:$job_id" "${conn[@]}"
"$client" profile summary "job:$job_id" "${conn[@]}" --json >"libreyolo-summary-$SLURM_JOB_ID.json"
echo "libreyolo: JSON summary in libreyolo-summary-$SLURM_JOB_ID.json;" \
  "other readers: libreyolo profile kernels|ops|phases job:$job_id --remote ..."
