#!/usr/bin/env bash
#SBATCH --job-name=libreyolo-ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --exclusive
#SBATCH --time=00:30:00
#SBATCH --output=libreyolo-ddp-%j.out
#
# Profiles one data-parallel training run across every node of this allocation: srun starts one
# task per node, each submits its part of the run to its own node's libreyolod (the node's GPUs,
# --nproc of them), and the nodes' ranks meet at the rendezvous this script gives them, on the
# first node (issue 21, docs/cli.md "Across hosts"). Placement is Slurm's: the daemons only join
# the rendezvous.
#
#   sbatch deploy/slurm/sbatch-ddp.sh [DATA] [more `libreyolo profile run` flags]
#   sbatch --nodes 4 deploy/slurm/sbatch-ddp.sh coco128 --batch 16 --steps 20
#
# Each task is one host of the run: its node rank is SLURM_PROCID and the host count SLURM_NTASKS
# (with one task per node, SLURM_NODEID and SLURM_NNODES);
# the group id is slurm-$SLURM_JOB_ID on every node, and each daemon job carries the label
# slurm_job_id=$SLURM_JOB_ID (epilog.sh cancels what is left when the Slurm job ends early).
# Each node writes its ranks under $PROJECT/prof/rank<R>/: on a shared file system the folder
# holds the whole run (`libreyolo profile summary $PROJECT/prof/`).
#
# Environment (all optional; the daemon connection as in sbatch-profile.sh):
#   LIBREYOLO             client binary (default: libreyolo on PATH)
#   LIBREYOLO_PORT        the daemons' port (default 50051)
#   LIBREYOLO_REMOTE      the daemon of each task instead of $(hostname):$LIBREYOLO_PORT;
#                         {node} becomes the task's node rank (unix:/run/d{node}.sock)
#   LIBREYOLO_TOKEN / LIBREYOLO_TOKEN_FILE, LIBREYOLO_TLS_CA
#   LIBREYOLO_NPROC       ranks per node (default: the node's GPUs, SLURM_GPUS_ON_NODE)
#   LIBREYOLO_DEVICE      --device for every node's ranks (default 0; `cpu` for CPU slots)
#   MASTER_PORT           the rendezvous port on the first node (default 29500 + job id % 20000)
#   PROJECT               output root (default runs/profile/slurm-$SLURM_JOB_ID)
set -euo pipefail

: "${SLURM_JOB_ID:?submit this script with sbatch}"
client=${LIBREYOLO:-libreyolo}
data=${1:-coco128}
if [ $# -gt 0 ]; then shift; fi

# The first node's name is the rendezvous host: its rank 0 serves the TCPStore there.
MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
MASTER_PORT=${MASTER_PORT:-$((29500 + SLURM_JOB_ID % 20000))}
export MASTER_ADDR MASTER_PORT
export LIBREYOLO_DATA="$data" LIBREYOLO_CLIENT="$client"
export PROJECT=${PROJECT:-runs/profile/slurm-$SLURM_JOB_ID}
export LIBREYOLO_NPROC=${LIBREYOLO_NPROC:-${SLURM_GPUS_ON_NODE:-1}}
mkdir -p "$(dirname "$PROJECT")"
echo "libreyolo: ${SLURM_NTASKS:-$SLURM_NNODES} hosts x $LIBREYOLO_NPROC ranks, rendezvous $MASTER_ADDR:$MASTER_PORT"

# One task per node (the allocation's tasks: --ntasks-per-node=1 above), each one host of the run.
srun --kill-on-bad-exit=1 bash -c '
  set -euo pipefail
  node=$SLURM_PROCID
  conn=(--remote "$(hostname):${LIBREYOLO_PORT:-50051}")
  if [ -n "${LIBREYOLO_REMOTE:-}" ]; then conn=(--remote "${LIBREYOLO_REMOTE//\{node\}/$node}"); fi
  if [ -z "${LIBREYOLO_TOKEN:-}" ] && [ -r "${LIBREYOLO_TOKEN_FILE:-$HOME/.libreyolo/token}" ]; then
    conn+=(--token-file "${LIBREYOLO_TOKEN_FILE:-$HOME/.libreyolo/token}")
  fi
  if [ -z "${LIBREYOLO_TLS_CA:-}" ] && [ -r /etc/libreyolo/ca.crt ]; then
    conn+=(--tls-ca /etc/libreyolo/ca.crt)
  fi
  exec "$LIBREYOLO_CLIENT" profile run "$LIBREYOLO_DATA" "${conn[@]}" \
    --device "${LIBREYOLO_DEVICE:-0}" --nproc "$LIBREYOLO_NPROC" --nnodes "$SLURM_NTASKS" \
    --node-rank "$node" --label "slurm_job_id=$SLURM_JOB_ID" --project "$PROJECT" \
    --json "$@" > "$PROJECT.node$node.json"
' bash "$@"
echo "libreyolo: done; node K's summary is $PROJECT.node<K>.json; the ranks are in $PROJECT/prof/"
