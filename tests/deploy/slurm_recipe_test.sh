#!/usr/bin/env bash
# ctest slurm_recipe_test (issue 21, section 3): deploy/slurm's recipes under a real Slurm, not
# a shell check. The test starts a one-node cluster of its own (munged, slurmctld and slurmd on
# this machine, ports it picks, ProctrackType=proctrack/linuxproc, TaskPlugin=task/none) with
# deploy/slurm/prolog.sh and epilog.sh as its Prolog and Epilog, and two libreyolods standing
# for two hosts (two CPU slots each). Checks:
#   1. `sbatch deploy/slurm/sbatch-ddp.sh` with two tasks on the one node (each task one "host",
#      LIBREYOLO_REMOTE={node} picking its daemon) runs one data-parallel run of world size 4:
#      both tasks succeed, $PROJECT/prof/ holds ranks 0..3 and reads as one run; slurmd ran the
#      Prolog and the Epilog for the job, and the Prolog found the daemon healthy;
#   2. a Slurm job cancelled mid-run (scancel): the Epilog cancels the daemon job it left.
# Needs root (slurmd) and Debian's slurm-wlm and munge (scripts/install-deps.sh installs them);
# where either is missing, or the cluster does not come up, it says why and skips (exit 77).
set -euo pipefail
daemon="$(realpath "$1")"; cli="$(realpath "$2")"; python="$3"; work="$4"; src="$(realpath "$5")"
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "slurmd needs root"
for b in munged mungekey slurmctld slurmd sbatch srun scancel squeue; do
  command -v "$b" > /dev/null || skip "no $b (Debian's slurm-wlm and munge: scripts/install-deps.sh)"
done
rm -rf "$work" && mkdir -p "$work"/{state,spool,log,run}
# munged wants every directory above its socket searchable by all, which a checkout under a
# private home is not: its key and socket live in a directory of their own under /tmp.
munge="$(mktemp -d /tmp/libreyolo-munge.XXXXXX)"
chmod 755 "$munge"
export OMP_WAIT_POLICY=PASSIVE
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$munge"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/log/*.log "$work"/d0.log "$work"/d1.log; do
    [ -f "$f" ] && { echo "--- $f"; tail -12 "$f"; }
  done
  exit 1
}
free_port() {
  "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The daemons: "host" 0 and 1.
for n in 0 1; do
  "$daemon" --listen "unix:$work/d$n.sock" --device cpu --device cpu:1 --state-dir "$work/d$n/state" \
    --store-dir "$work/d$n/store" --threads 1 > "$work/d$n.log" 2>&1 &
  pids+=($!)
done

# The cluster.
mungekey -c -f -k "$munge/munge.key" > /dev/null 2>&1 || skip "mungekey failed"
munged --key-file="$munge/munge.key" --socket="$munge/munge.sock" \
  --pid-file="$munge/munged.pid" --log-file="$munge/munged.log" \
  --seed-file="$munge/seed" --foreground > "$work/log/munged.out" 2>&1 &
pids+=($!)
host="$(hostname -s)"
# slurmd runs the Prolog and Epilog as root with its own environment: wrappers point the
# recipes at host 0's daemon and note that they ran.
for stage in prolog epilog; do
  cat > "$work/$stage.sh" <<EOF
#!/usr/bin/env bash
export LIBREYOLO="$cli" LIBREYOLOD_REMOTE="unix:$work/d0.sock"
"$src/deploy/slurm/$stage.sh" 2>> "$work/$stage.err"
rc=\$?
echo "\$SLURM_JOB_ID \$rc" >> "$work/$stage.ran"
exit \$rc
EOF
  chmod 755 "$work/$stage.sh"
done
cat > "$work/slurm.conf" <<EOF
ClusterName=libreyolotest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
Prolog=$work/prolog.sh
Epilog=$work/epilog.sh
PrologFlags=Alloc
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -f "$SLURM_CONF" > "$work/log/ctld.out" 2>&1 &
pids+=($!)
sleep 1
slurmd -D -f "$SLURM_CONF" > "$work/log/d.out" 2>&1 &
pids+=($!)
up=""
deadline=$((SECONDS + 30))  # a cluster that is not up in 30 s will not be
while [ "$SECONDS" -lt "$deadline" ]; do
  if timeout 5 sinfo -h -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 0.2
done
[ -n "$up" ] || { tail -n 5 "$work/log/ctld.out" "$work/log/d.out"; skip "the one-node Slurm did not come up"; }
for n in 0 1; do
  for _ in $(seq 1 600); do
    "$cli" jobs list --remote "unix:$work/d$n.sock" > /dev/null 2>&1 && break
    sleep 0.2
  done
done
echo "ok: a one-node Slurm ($host) and two daemons are up"

# 1. The recipe, two tasks standing for two hosts.
port="$(free_port)"
run=(synthetic:32 --imgsz 64 --batch 2 --steps 2 --warmup 1 --workers 0 --threads 1
     --no-probe-overhead)
rc=0
( cd "$work" && MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" LIBREYOLO="$cli" \
    LIBREYOLO_REMOTE="unix:$work/d{node}.sock" LIBREYOLO_NPROC=2 LIBREYOLO_DEVICE=cpu \
    PROJECT="$work/proj" timeout 240 sbatch --wait --nodes 1 --ntasks-per-node 2 --gres=none \
    --output "$work/ddp.out" "$src/deploy/slurm/sbatch-ddp.sh" "${run[@]}" ) > "$work/sbatch.txt" \
  2>&1 || rc=$?
cat "$work/sbatch.txt"
[ "$rc" -eq 0 ] || { cat "$work/ddp.out"; fail "sbatch sbatch-ddp.sh exited $rc"; }
slurm_job="$(grep -o 'Submitted batch job [0-9]*' "$work/sbatch.txt" | grep -o '[0-9]*$')"
"$cli" profile summary "$work/proj/prof/" --json > "$work/all.json"
"$python" - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
v = json.load(open(f"{work}/all.json"))
ranks = sorted(d for d in os.listdir(f"{work}/proj/prof") if d.startswith("rank"))
fails = []
if ranks != ["rank0", "rank1", "rank2", "rank3"]:
    fails.append(f"prof/ holds {ranks}")
if v.get("world_size") != 4 or len(v.get("ranks", [])) != 4:
    fails.append(f"world size {v.get('world_size')}, {len(v.get('ranks', []))} ranks")
for n in (0, 1):
    s = json.load(open(f"{work}/proj.node{n}.json"))
    if not s.get("job_id"):
        fails.append(f"node {n}: no job in its summary")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: sbatch-ddp.sh ran one run of world size 4 over two daemons")
EOF
grep -q "^$slurm_job 0$" "$work/prolog.ran" 2>/dev/null || fail "the Prolog did not run (or failed) for job $slurm_job"
grep -q "^$slurm_job 0$" "$work/epilog.ran" 2>/dev/null || {
  for _ in $(seq 1 50); do grep -q "^$slurm_job 0$" "$work/epilog.ran" 2>/dev/null && break; sleep 0.2; done
  grep -q "^$slurm_job 0$" "$work/epilog.ran" 2>/dev/null || fail "the Epilog did not run for job $slurm_job"
}
if grep -q "not healthy" "$work/prolog.err" 2>/dev/null; then
  cat "$work/prolog.err"; fail "the Prolog found the daemon unhealthy"
fi
echo "ok: slurmd ran the Prolog and the Epilog for job $slurm_job"

# 2. A Slurm job cancelled mid-run: the Epilog cancels the daemon job it left running.
port="$(free_port)"
long=(synthetic:2000 --imgsz 64 --batch 2 --steps 200 --warmup 1 --workers 0 --threads 1
      --no-probe-overhead)
slurm_job="$(cd "$work" && MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" LIBREYOLO="$cli" \
  LIBREYOLO_REMOTE="unix:$work/d{node}.sock" LIBREYOLO_NPROC=2 LIBREYOLO_DEVICE=cpu \
  PROJECT="$work/long" sbatch --parsable --nodes 1 --ntasks-per-node 2 --gres=none \
  --output "$work/long.out" "$src/deploy/slurm/sbatch-ddp.sh" "${long[@]}")"
job=""
for _ in $(seq 1 300); do
  job="$("$cli" jobs list --remote "unix:$work/d0.sock" --label "slurm_job_id=$slurm_job" --json 2>/dev/null \
    | "$python" -c 'import json,sys; d=json.load(sys.stdin); j=[x for x in d.get("jobs", []) if x.get("state")=="JOB_STATE_RUNNING"]; print(j[0]["id"] if j else "")' 2>/dev/null || true)"
  [ -n "$job" ] && break
  sleep 0.2
done
[ -n "$job" ] || fail "no running daemon job labelled slurm_job_id=$slurm_job"
scancel --signal=KILL --full "$slurm_job"  # the clients die; their daemon jobs stay
state=""
for _ in $(seq 1 300); do
  state="$("$cli" jobs show "$job" --remote "unix:$work/d0.sock" --json 2>/dev/null \
    | "$python" -c 'import json,sys; print(json.load(sys.stdin).get("state",""))' 2>/dev/null || true)"
  [ "$state" = JOB_STATE_CANCELLED ] && break
  sleep 0.2
done
[ "$state" = JOB_STATE_CANCELLED ] || fail "daemon job $job is $state after scancel (the Epilog should cancel it)"
grep -q "^$slurm_job " "$work/epilog.ran" || fail "no Epilog for job $slurm_job"
echo "ok: scancel of Slurm job $slurm_job: the Epilog cancelled daemon job $job"
