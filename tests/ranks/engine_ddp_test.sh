#!/usr/bin/env bash
# ctest engine_ddp_test (issue 21, section 1): our own data-parallel training, two ranks of
# libreyolo-engine on the CPU with Gloo, started as torchrun starts ranks (RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT; one working directory, one --project), then read as one run by
# `libreyolo profile summary <project>/prof/` (the reader that reads PyTorch's own DDP folders).
# Checks:
#   1. both ranks succeed, each in its own prof/rank<R>/ of the shared project; each
#      profile's config.data_parallel says gloo, its rank, world size 2, and a replica
#      divergence of 0 (DDP keeps the replicas identical: c10d's Reducer averaged the same
#      gradients into both);
#   2. each trace's distributedInfo has backend, rank and world size (what HTA and the folder
#      reader sort by);
#   3. the folder's cross-rank view has both ranks, the recorded steps, time in collectives
#      (Gloo's all-reduce spans) and all-reduce bytes of 4 x the trainable parameters per step
#      (each float32 gradient all-reduced once per step);
#   4. a rank slowed on purpose (--inject-dataload-delay DELAY_MS, ctest's
#      LIBREYOLO_TEST_DDP_DELAY_MS) is named the straggler, the others waiting >= DELAY_MS/2;
#   5. a rank whose peer never comes fails within --dist-timeout, naming the missing rank, with
#      exit code 2 (DEADLINE_EXCEEDED, as a job past its time limit);
#   6. a rank whose peer is killed (SIGKILL) mid-run fails at its next collective, well within
#      --dist-timeout, saying which rank it is (exit 1);
#   7. (issue 40.2) while the run is up, every TCP socket either rank listens on (rank 0's
#      TCPStore on the rendezvous port, the Gloo pairs) is bound to the loopback, none to every
#      interface (0.0.0.0, [::]): the store has no authentication; and rank 0 given an address
#      that is not this host's, or a port another program holds, fails at once (exit 2) naming
#      the address and what to do.
# Usage: engine_ddp_test.sh ENGINE CLI PYTHON WORK DELAY_MS
# Both runs are laid out in WORK/hta/{balanced,slow} with a run.txt recording the delay, for
# tests/ranks/check_ranks.py (ctest engine_ddp_hta).
set -euo pipefail
engine="$1"; cli="$2"; python="$3"; work="$4"; delay="${5:?DELAY_MS}"
rm -rf "$work" && mkdir -p "$work"
export OMP_WAIT_POLICY=PASSIVE
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
# Becomes the rank's process (exec): call it in the background or in a subshell, so that $! is
# the engine's own pid.
# RDV_ADDR, RDV_PORT and RANK_LOG (a log name) replace the rendezvous and the log.
run_rank() {  # rank, project, then extra flags
  local rank="$1" project="$2"; shift 2
  RANK="$rank" WORLD_SIZE=2 MASTER_ADDR="${RDV_ADDR:-127.0.0.1}" MASTER_PORT="${RDV_PORT:-$port}" \
    exec "$engine" run "${DATA:-synthetic:16}" --device cpu --imgsz 64 --batch 2 --steps 2 \
    --warmup 1 --workers 0 --threads 1 --dist-timeout 120 --project "$project" "$@" \
    > "$work/${RANK_LOG:-rank$rank}.log" 2>&1
}
# The TCP sockets a process listens on, one ADDRESS:PORT a line (IPv6 in brackets): its
# descriptors' socket inodes, found in /proc/net/tcp and tcp6 in state LISTEN (0A).
listening() {  # pid
  "$python" - "$1" <<'EOF_LISTEN'
import os, socket, struct, sys
pid = sys.argv[1]
inodes = set()
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        continue
    if link.startswith("socket:["):
        inodes.add(link[len("socket:["):-1])
for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
    try:
        rows = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
    except FileNotFoundError:
        continue
    for row in rows:
        f = row.split()
        if f[3] != "0A" or f[9] not in inodes:
            continue
        addr, port = f[1].split(":")
        # Each 32-bit word of the address is printed as the host reads it.
        raw = b"".join(struct.pack("=I", int(addr[i:i + 8], 16)) for i in range(0, len(addr), 8))
        host = socket.inet_ntop(family, raw)
        print(f"[{host}]" if family == socket.AF_INET6 else host, int(port, 16), sep=":")
EOF_LISTEN
}
run_rank 0 "$work/p" & pid0=$!
run_rank 1 "$work/p" & pid1=$!
rc0=0; rc1=0
wait "$pid0" || rc0=$?
wait "$pid1" || rc1=$?
if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ]; then
  echo "FAIL: ranks exited $rc0 and $rc1"; tail -20 "$work/rank0.log" "$work/rank1.log"; exit 1
fi
"$cli" profile summary "$work/p/prof" --json > "$work/ranks.json"

"$python" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
fails = []
def check(ok, what):
    if not ok:
        fails.append(what)
params = None
for rank in (0, 1):
    p = json.load(open(f"{work}/p/prof/rank{rank}/profile.json"))
    d = p["config"].get("data_parallel")
    check(d is not None, f"rank {rank}: config.data_parallel missing")
    if d is None:
        continue
    check(d["backend"] == "gloo" and d["rank"] == rank and d["world_size"] == 2,
          f"rank {rank}: data_parallel {d}")
    check(d["global_batch"] == 4, f"rank {rank}: global_batch {d['global_batch']}")
    check(d["replica_divergence"] == 0,
          f"rank {rank}: replicas diverged by {d['replica_divergence']}")
    check(d["buckets"] >= 1, f"rank {rank}: {d['buckets']} buckets")
    params = d["gradient_bytes"]
    t = json.load(open(f"{work}/p/prof/rank{rank}/profile_trace.json"))
    info = t.get("distributedInfo", {})
    check(info == {"backend": "gloo", "rank": rank, "world_size": 2},
          f"rank {rank}: distributedInfo {info}")
v = json.load(open(f"{work}/ranks.json"))
print(json.dumps({k: v.get(k) for k in ("world_size", "backend", "comm_ms", "allreduce_bytes",
                                        "comm_overlap_pct", "verdict")}, indent=1))
check(v.get("world_size") == 2 and v.get("backend") == "gloo",
      f"folder: {v.get('world_size')} {v.get('backend')}")
ranks = v.get("ranks", [])
check(len(ranks) == 2, f"folder: {len(ranks)} ranks")
for r in ranks:
    check(r.get("steps") == 2, f"folder rank {r.get('rank')}: {r.get('steps')} steps, not 2")
    check((r.get("comm_ms") or 0) > 0, f"folder rank {r.get('rank')}: no time in collectives")
check(v.get("allreduce_bytes") == params,
      f"folder: all-reduce bytes per step {v.get('allreduce_bytes')}, gradients {params}")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: two ranks, in sync, read as a folder")
EOF

# A straggler made on purpose: rank 1 sleeps $delay ms in every step's data loading. Our
# cross-rank analysis must name it (issue 21: "the slowed rank is named on our runs"), asserting
# only what the delay guarantees (the others wait at least half of it per step).
run_rank 0 "$work/slow" --steps 3 & pid0=$!
run_rank 1 "$work/slow" --steps 3 --inject-dataload-delay "$delay" & pid1=$!
rc0=0; rc1=0
wait "$pid0" || rc0=$?
wait "$pid1" || rc1=$?
[ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] || { echo "FAIL: slowed ranks exited $rc0, $rc1"; exit 1; }
"$cli" profile summary "$work/slow/prof" --json > "$work/slow.json"
"$python" - "$work" "$delay" <<'EOF2'
import json, sys
work, delay = sys.argv[1], int(sys.argv[2])
v = json.load(open(f"{work}/slow.json"))
p1 = json.load(open(f"{work}/slow/prof/rank1/profile.json"))["config"]
fails = []
if p1.get("injected_dataload_delay_ms") != delay:
    fails.append(f"rank 1's profile does not record its delay: {p1.get('injected_dataload_delay_ms')}")
if v.get("straggler") != 1:
    fails.append(f"straggler {v.get('straggler')}, not rank 1")
if (v.get("collective_wait_ms") or 0) < delay / 2:
    fails.append(f"the others wait {v.get('collective_wait_ms')} ms per step, "
                 f"not >= {delay / 2}")
if not (v.get("verdict") or "").startswith("rank 1 is a straggler: its dataload"):
    fails.append(f"verdict: {v.get('verdict')}")
print(f"straggler {v.get('straggler')}, wait {v.get('collective_wait_ms')} ms/step: {v.get('verdict')}")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: the slowed rank is named")
EOF2

# Both runs laid out as tests/ranks/check_ranks.py reads PyTorch's (one folder per run, one
# trace per rank, run.txt saying what was injected, as make_ddp_traces.py writes it): ctest
# engine_ddp_hta checks our traces against HTA there, as ranks_hta_agreement checks PyTorch's.
"$python" - "$work" "$delay" <<'EOF3'
import json, os, sys
work, delay = sys.argv[1], int(sys.argv[2])
grads = json.load(open(f"{work}/p/prof/rank0/profile.json"))["config"]["data_parallel"]["gradient_bytes"]
for name, project, slow_rank, delay_ms in (("balanced", "p", -1, 0), ("slow", "slow", 1, delay)):
    d = f"{work}/hta/{name}"
    os.makedirs(d, exist_ok=True)
    for rank in (0, 1):
        link = f"{d}/rank{rank}.json"
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(f"{work}/{project}/prof/rank{rank}/profile_trace.json", link)
    with open(f"{d}/run.txt", "w") as f:
        json.dump({"delay_ms": delay_ms, "slow_rank": slow_rank,
                   "allreduce_bytes_per_step": grads, "params": grads // 4}, f)
EOF3

# A rank alone: its peer never joins.
rc=0
start=$(date +%s)
(run_rank 0 "$work/alone" --dist-timeout 3) || rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" -ne 2 ] || ! grep -q "rank 1 never joined" "$work/rank0.log"; then
  echo "FAIL: a rank without its peer exited $rc:"; tail -5 "$work/rank0.log"; exit 1
fi
if [ "$took" -gt 60 ]; then echo "FAIL: the missing peer took ${took} s to notice"; exit 1; fi
grep "never joined" "$work/rank0.log"
echo "ok: the missing rank is named (exit 2)"

# A peer killed mid-run: rank 1 is killed once it is measuring.
DATA=synthetic:400 run_rank 0 "$work/killed" --steps 60 & pid0=$!
DATA=synthetic:400 run_rank 1 "$work/killed" --steps 60 & pid1=$!
for _ in $(seq 1 600); do
  grep -q '\[measuring\] 3/' "$work/rank1.log" 2>/dev/null && break
  sleep 0.1
done
# Both ranks are up (rank 0's store lives as long as its run): what they listen on.
socks0="$(listening "$pid0")"; socks1="$(listening "$pid1")"
echo "rank 0 listens on:" $socks0 "; rank 1 on:" $socks1
printf '%s\n' "$socks0" | grep -qx "127\.0\.0\.1:$port" || {
  echo "FAIL: rank 0 does not serve the rendezvous on 127.0.0.1:$port"; kill -9 "$pid0" "$pid1"
  exit 1; }
exposed="$(printf '%s\n' "$socks0" "$socks1" |
  grep -Ev '^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' | grep . || true)"
if [ -n "$exposed" ]; then
  echo "FAIL: the ranks listen beyond the loopback:" $exposed; kill -9 "$pid0" "$pid1"; exit 1
fi
echo "ok: the rendezvous and the ranks listen on the loopback only"
# Rank 0 ignores SIGPIPE (engine_tool.cc): whether its next socket call after the peer's death is
# a write (EPIPE) or a read (reset) is a race, and a write must not kill it without a word (141).
sigign="$(awk '/^SigIgn:/ {print $2}' "/proc/$pid0/status")"
if [ $(( (16#$sigign >> 12) & 1 )) -ne 1 ]; then
  echo "FAIL: rank 0 does not ignore SIGPIPE (SigIgn $sigign)"; kill -9 "$pid0" "$pid1"; exit 1
fi
kill -9 "$pid1"; wait "$pid1" 2>/dev/null || true
start=$(date +%s); rc=0
wait "$pid0" || rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" -ne 1 ] || ! grep -q "error: rank 0 of 2: " "$work/rank0.log" || [ "$took" -gt 60 ]; then
  echo "FAIL: rank 0 with its peer killed exited $rc after ${took} s:"; tail -3 "$work/rank0.log"
  exit 1
fi
grep "error:" "$work/rank0.log" | cut -c1-300
echo "ok: a killed peer fails the other rank in ${took} s"

# Rank 0 told to serve an address that is not this host's (TEST-NET-1, RFC 5737): refused before
# anything listens, naming the address (c10d alone would listen on every interface and wait).
rc=0
(RDV_ADDR=192.0.2.1 RANK_LOG=foreign run_rank 0 "$work/foreign" --dist-timeout 10) || rc=$?
want="cannot serve the rendezvous at 192.0.2.1:$port: 192.0.2.1 is not an address of this host"
if [ "$rc" -ne 2 ] || ! grep -qF "$want" "$work/foreign.log"; then
  echo "FAIL: rank 0 given a foreign address exited $rc:"; tail -3 "$work/foreign.log"; exit 1
fi
grep "error:" "$work/foreign.log" | cut -c1-300
# A rank torchrun's variables place outside the world: refused naming the variable, not a flag
# the user never typed.
rc=0
RANK=7 WORLD_SIZE=2 "$engine" run synthetic:16 --device cpu > "$work/outside.log" 2>&1 || rc=$?
if [ "$rc" -ne 2 ] || ! grep -qF '$RANK 7: must be in 0..1' "$work/outside.log"; then
  echo "FAIL: a rank outside the world exited $rc:"; tail -3 "$work/outside.log"; exit 1
fi
# Its port held by another program: refused, saying so.
rm -f "$work/held_port"
"$python" -c 'import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
out = sys.argv[1]
open(out + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(out + ".tmp", out)
time.sleep(300)' "$work/held_port" & holder=$!
for _ in $(seq 1 300); do [ -s "$work/held_port" ] && break; sleep 0.1; done
held="$(cat "$work/held_port")"
rc=0
(RDV_PORT="$held" RANK_LOG=held run_rank 0 "$work/held" --dist-timeout 10) || rc=$?
kill "$holder"; wait "$holder" 2>/dev/null || true
want="cannot serve the rendezvous at 127.0.0.1:$held: the port is in use"
if [ "$rc" -ne 2 ] || ! grep -qF "$want" "$work/held.log"; then
  echo "FAIL: rank 0 on a held port exited $rc:"; tail -3 "$work/held.log"; exit 1
fi
grep "error:" "$work/held.log" | cut -c1-300
echo "ok: an address not of this host and a held port are refused, named"
