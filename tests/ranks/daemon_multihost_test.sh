#!/usr/bin/env bash
# ctest daemon_multihost_test (issue 21, section 3): one data-parallel run across two "hosts",
# each a libreyolod of its own (own state and store, two CPU slots) on this machine, joined by
# the rendezvous a scheduler would give (--nnodes 2, node ranks 0 and 1, MASTER_ADDR and
# MASTER_PORT): world size 4, Gloo over loopback. Checks:
#   1. both hosts' jobs succeed; host 0's client writes ranks 0 and 1, host 1's (its node rank,
#      address and port from the environment, as under Slurm or torchrun) ranks 2 and 3, each
#      rank's profile saying its global rank and world size 4, replicas equal; `jobs show` on
#      either host names the ranks it ran, the world and the group; the four ranks' folders
#      together read as one run of world size 4;
#   2. two hosts given the same node rank: neither job hangs, host 0's names the ranks that never
#      joined, host 1's the duplicate rank (or the port it could not serve).
set -euo pipefail
daemon="$1"; cli="$2"; python="$3"; work="$4"
rm -rf "$work" && mkdir -p "$work"
export OMP_WAIT_POLICY=PASSIVE
pids=()
start() {  # start NAME: a daemon with two CPU slots
  "$daemon" --listen "unix:$work/$1.sock" --device cpu --device cpu:1 --state-dir "$work/$1/state" \
    --store-dir "$work/$1/store" --threads 1 > "$work/$1.log" 2>&1 &
  pids+=($!)
}
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for h in a b; do echo "--- $h"; tail -15 "$work/$h.log"; done; exit 1; }
start a
start b
for h in a b; do
  for _ in $(seq 1 600); do
    "$cli" jobs list --remote "unix:$work/$h.sock" > /dev/null 2>&1 && break
    sleep 0.2
  done
done
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
job=(synthetic:32 --device cpu --imgsz 64 --batch 2 --steps 2 --warmup 1 --workers 0 --threads 1
     --no-probe-overhead --nproc 2 --nnodes 2)

# 1. World size 4 over two daemons.
rc_a=0; rc_b=0
"$cli" profile run "${job[@]}" --node-rank 0 --master-addr 127.0.0.1 --master-port "$port" \
  --remote "unix:$work/a.sock" --project "$work/pa" --json > "$work/a.json" 2> "$work/a.err" &
ca=$!
NODE_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$cli" profile run "${job[@]}" \
  --remote "unix:$work/b.sock" --project "$work/pb" --json > "$work/b.json" 2> "$work/b.err" &
cb=$!
wait "$ca" || rc_a=$?
wait "$cb" || rc_b=$?
[ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ] || {
  cat "$work/a.err" "$work/b.err"; fail "host 0 exited $rc_a, host 1 $rc_b"; }
mkdir -p "$work/all"
cp -r "$work/pa/prof/rank0" "$work/pa/prof/rank1" "$work/pb/prof/rank2" "$work/pb/prof/rank3" \
  "$work/all/"
"$cli" profile summary "$work/all/" --json > "$work/all.json"
"$python" - "$work" "$port" <<'EOF'
import json, os, sys
work, port = sys.argv[1], sys.argv[2]
fails = []
def check(ok, what):
    if not ok:
        fails.append(what)
for host, ranks in (("pa", (0, 1)), ("pb", (2, 3))):
    present = sorted(d for d in os.listdir(f"{work}/{host}/prof") if d.startswith("rank"))
    check(present == [f"rank{r}" for r in ranks], f"{host}/prof holds {present}")
grads = set()
for r in range(4):
    host = "pa" if r < 2 else "pb"
    p = f"{work}/{host}/prof/rank{r}/profile.json"
    if not os.path.isfile(p):
        fails.append(f"no {p}")
        continue
    dp = json.load(open(p))["config"].get("data_parallel") or {}
    check(dp.get("rank") == r and dp.get("world_size") == 4, f"rank {r}: data_parallel {dp}")
    check(dp.get("replica_divergence") == 0, f"rank {r}: replicas diverged")
    grads.add(dp.get("gradient_bytes"))
check(len(grads) == 1, f"gradient bytes differ between ranks: {grads}")
v = json.load(open(f"{work}/all.json"))
check(v.get("world_size") == 4 and len(v.get("ranks", [])) == 4,
      f"the four ranks together: world size {v.get('world_size')}, {len(v.get('ranks', []))} ranks")
# Each host's client summarises its first rank and says how to read the whole run.
for h, first in (("a", 0), ("b", 2)):
    s = json.load(open(f"{work}/{h}.json"))
    check(s.get("profile_path", "").endswith(f"rank{first}/profile.json"),
          f"host {h}'s summary is of {s.get('profile_path')}")
    err = open(f"{work}/{h}.err").read()
    check(f"this host ran ranks {first}..{first + 1} of 4" in err,
          f"host {h}'s client does not say which ranks it ran")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: world size 4 over two daemons; ranks 0-1 on host 0, 2-3 on host 1, replicas equal")
EOF
id_b="$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$work/b.json")"
"$cli" jobs show "$id_b" --remote "unix:$work/b.sock" > "$work/show.txt"
grep -q "^world     ranks 2-3 of 4, host 1 of 2, group 127.0.0.1:$port" "$work/show.txt" || {
  cat "$work/show.txt"; fail "jobs show on host 1"; }
echo "ok: jobs show on host 1: $(grep '^world' "$work/show.txt")"

# 2. Both hosts told they are node 0.
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
dup=("${job[@]}" --node-rank 0 --master-addr 127.0.0.1 --master-port "$port" --dist-timeout 5)
id_a="$("$cli" profile run "${dup[@]}" --remote "unix:$work/a.sock" --detach)"
for _ in $(seq 1 300); do
  "$cli" jobs show "$id_a" --remote "unix:$work/a.sock" --json 2>/dev/null \
    | grep -q '"JOB_STATE_RUNNING"' && break
  sleep 0.2
done
sleep 2  # host 0's ranks are in the rendezvous
id_b="$("$cli" profile run "${dup[@]}" --remote "unix:$work/b.sock" --detach)"
for h in a b; do
  id="id_$h"
  timeout 120 "$cli" jobs watch "${!id}" --remote "unix:$work/$h.sock" > /dev/null 2>&1 || true
  "$cli" jobs show "${!id}" --remote "unix:$work/$h.sock" > "$work/dup_$h.txt"
  grep -q "^state     failed" "$work/dup_$h.txt" || { cat "$work/dup_$h.txt"; fail "host $h: not failed"; }
done
grep -q "ranks 2, 3 never joined the rendezvous at 127.0.0.1:$port within 5 s" "$work/dup_a.txt" || {
  cat "$work/dup_a.txt"; fail "host 0 does not name the ranks that never joined"; }
grep -Eq "joined the rendezvous at 127.0.0.1:$port twice|cannot serve the rendezvous at 127.0.0.1:$port" \
  "$work/dup_b.txt" || { cat "$work/dup_b.txt"; fail "host 1 does not name the duplicate"; }
grep -h "^error" "$work/dup_a.txt" "$work/dup_b.txt" | cut -c1-240
echo "ok: one node rank given twice fails both hosts' jobs, each naming why"
