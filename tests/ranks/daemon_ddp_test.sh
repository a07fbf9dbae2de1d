#!/usr/bin/env bash
# ctest daemon_ddp_test (issue 21, section 1): `libreyolo profile run --nproc 2` on a libreyolod
# with two CPU slots (cpu, cpu:1): one rank per slot's engine worker, Gloo on loopback, run as
# one gang. Checks:
#   1. the job succeeds; the client puts each rank's files in <project>/prof/rank<R>/ and prints
#      the cross-rank summary of that folder (world size 2, gloo, both ranks, all-reduce bytes
#      per step = the gradients' bytes); the job's record names both slots;
#   2. more ranks than the daemon has slots is refused at submission, naming the slots it has
#      (exit 2, nothing queued);
#   3. a rank whose worker is killed (SIGKILL) mid-run fails the whole job, naming that rank,
#      its slot and the signal; the daemon replaces the worker and the next gang succeeds;
#   4. a rank whose worker hangs (SIGSTOP) mid-run fails the whole job within a bounded time
#      (its peer's all-reduce times out at --dist-timeout, the stopped worker is killed at the
#      cancel grace), naming the stopped rank, not the peer that waited for it; the next gang
#      succeeds.
set -euo pipefail
daemon="$1"; cli="$2"; python="$3"; work="$4"
rm -rf "$work" && mkdir -p "$work"
sock="$work/d.sock"
export OMP_WAIT_POLICY=PASSIVE
"$daemon" --listen "unix:$sock" --device cpu --device cpu:1 --state-dir "$work/state" \
  --store-dir "$work/store" --threads 1 --cancel-grace 3 > "$work/daemon.log" 2>&1 &
dpid=$!
cleanup() { kill -TERM "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -20 "$work/daemon.log"; exit 1; }
for _ in $(seq 1 600); do
  "$cli" jobs list --remote "unix:$sock" > /dev/null 2>&1 && break
  kill -0 "$dpid" 2>/dev/null || fail "libreyolod exited before answering"
  sleep 0.2
done
# Waits until job $1 is into its steps: its first warmup step's event (both ranks through the
# rendezvous and one all-reduce), rather than a fixed 3 s that a loaded box may not reach.
into_steps() {
  grep -q -m1 '"stage":"warmup"' < <(timeout 120 "$cli" jobs watch "$1" --remote "unix:$sock" \
    --json 2>/dev/null) || fail "job $1 never reached its warmup step"
}
job=(synthetic:16 --device cpu --imgsz 64 --batch 2 --steps 2 --warmup 1 --workers 0
     --threads 1 --no-probe-overhead --remote "unix:$sock")

# 1. Two ranks, end to end.
rc=0
"$cli" profile run "${job[@]}" --nproc 2 --project "$work/p" --json > "$work/run.json" \
  2> "$work/run.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$work/run.err"; fail "profile run --nproc 2 exited $rc"; }
"$python" - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
fails = []
def check(ok, what):
    if not ok:
        fails.append(what)
v = json.load(open(f"{work}/run.json"))
check(v.get("world_size") == 2 and v.get("backend") == "gloo",
      f"summary: world size {v.get('world_size')}, backend {v.get('backend')}")
check(len(v.get("ranks", [])) == 2, f"summary: {len(v.get('ranks', []))} ranks")
grads = None
for rank in (0, 1):
    d = f"{work}/p/prof/rank{rank}"
    for f in ("profile.json", "profile_trace.json"):
        check(os.path.isfile(f"{d}/{f}"), f"no {d}/{f}")
    if not os.path.isfile(f"{d}/profile.json"):
        continue
    dp = json.load(open(f"{d}/profile.json"))["config"].get("data_parallel") or {}
    check(dp.get("rank") == rank and dp.get("world_size") == 2,
          f"rank {rank}: data_parallel {dp}")
    check(dp.get("replica_divergence") == 0, f"rank {rank}: replicas diverged")
    grads = dp.get("gradient_bytes")
check(grads is not None and v.get("allreduce_bytes") == grads,
      f"all-reduce bytes per step {v.get('allreduce_bytes')}, gradients {grads}")
# The job's profile (rank 0's) carries the cross-rank analysis the daemon made of both ranks'
# traces: the same figures, to the bit, as the folder reader's of the fetched prof/ folder.
job = json.load(open(f"{work}/p/prof/rank0/profile.json")).get("ranks")
check("ranks" not in json.load(open(f"{work}/p/prof/rank1/profile.json")),
      "rank 1's profile has a `ranks` too")
if not isinstance(job, dict):
    fails.append(f"the job's profile.json has no `ranks` object: {job!r}")
else:
    for k, x in v.items():
        # The job's fields `run --json` puts before the view's (WithJobFields: the job, its
        # files and the Python tool's keys), not part of the cross-rank analysis.
        if k in ("source", "threads", "ranks", "job_id", "profile_path", "profile", "trace",
                 "img_per_s_std", "img_per_s_n"):
            continue
        check(job.get(k) == x, f"profile.json ranks.{k} = {job.get(k)!r}, the folder's {x!r}")
    check(len(job.get("ranks", [])) == 2, f"profile.json ranks: {job.get('ranks')}")
    for mine, theirs in zip(job.get("ranks", []), v.get("ranks", [])):
        for k, x in theirs.items():
            if k == "trace":
                continue
            check(mine.get(k) == x, f"rank {theirs.get('rank')} {k}: {mine.get(k)!r} vs {x!r}")
    check([r.get("trace") for r in job.get("ranks", [])] ==
          ["profile_trace.json", "rank1.profile_trace.json"],
          f"traces named {[r.get('trace') for r in job.get('ranks', [])]}")
    with open(f"{work}/job_ranks.json", "w") as f:
        json.dump(job, f, sort_keys=True)
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: two ranks through the daemon, read as one run")
EOF
id="$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$work/run.json")"
"$cli" jobs show "$id" --remote "unix:$sock" > "$work/show.txt"
grep -q "^device    cpu, cpu:1 (2 ranks)" "$work/show.txt" || { cat "$work/show.txt"; fail "jobs show"; }
echo "ok: job $id ran on cpu, cpu:1"
# summary job:<id> (the daemon's copy) shows the job's ranks; --json has the profile's object.
"$cli" profile summary "job:$id" --remote "unix:$sock" > "$work/summary.txt"
grep -q "^the job's ranks: job:$id: 2 ranks (gloo)" "$work/summary.txt" ||
  { cat "$work/summary.txt"; fail "summary job:<id> shows no ranks"; }
"$cli" profile summary "job:$id" --remote "unix:$sock" --json > "$work/summary.json"
"$python" -c '
import json, sys
got = json.load(open(sys.argv[1])).get("ranks")
want = json.load(open(sys.argv[2]))
sys.exit(0 if got == want else f"summary --json ranks {got} != the profile'"'"'s {want}")
' "$work/summary.json" "$work/job_ranks.json"
echo "ok: the job's profile carries both ranks' table and the run's figures"
# The job record's headline: the run's global throughput (the ranks' img/s summed) and the
# slowest rank's step.
"$cli" jobs show "$id" --remote "unix:$sock" --json > "$work/show.json"
"$python" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
job = json.load(open(f"{work}/show.json"))
ranks = [json.load(open(f"{work}/p/prof/rank{r}/profile.json")) for r in (0, 1)]
total = sum(p["img_per_s"] for p in ranks)
slowest = max(p["step_ms"] for p in ranks)
got_ips = float(job.get("imgPerS", job.get("img_per_s", 0)))
got_ms = float(job.get("stepMs", job.get("step_ms", 0)))
if abs(got_ips - total) > 1e-3 * total or abs(got_ms - slowest) > 1e-3 * slowest:
    print(f"FAIL: the job record says {got_ips} img/s, {got_ms} ms; the ranks sum to {total} "
          f"img/s, the slowest step is {slowest} ms")
    sys.exit(1)
print(f"ok: the job's {got_ips:.2f} img/s is both ranks' together, {got_ms:.2f} ms the slowest")
EOF

# 2. More ranks than slots.
rc=0
"$cli" profile run "${job[@]}" --nproc 3 --project "$work/p3" > /dev/null 2> "$work/three.err" || rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "3 ranks, but this daemon has 2 CPU slots (cpu, cpu:1)" "$work/three.err"; then
  cat "$work/three.err"; fail "--nproc 3 on two slots exited $rc"
fi
echo "ok: --nproc 3 on two slots refused (exit 2)"

# 3. Rank 1's worker killed mid-run.
id="$("$cli" profile run synthetic:400 --device cpu --imgsz 64 --batch 2 --steps 80 --warmup 1 \
  --workers 0 --threads 1 --no-probe-overhead --remote "unix:$sock" --nproc 2 --detach)"
worker=""
for _ in $(seq 1 600); do
  if "$cli" jobs show "$id" --remote "unix:$sock" --json 2>/dev/null | grep -q '"JOB_STATE_RUNNING"'; then
    worker="$(pgrep -P "$dpid" -f -- "--device cpu:1" | head -1 || true)"
    [ -n "$worker" ] && break
  fi
  sleep 0.2
done
[ -n "$worker" ] || fail "rank 1's worker not found"
into_steps "$id"
kill -9 "$worker"
rc=0
timeout 120 "$cli" jobs watch "$id" --remote "unix:$sock" > /dev/null 2>&1 || rc=$?
"$cli" jobs show "$id" --remote "unix:$sock" > "$work/killed.txt"
grep -q "^state     failed" "$work/killed.txt" || { cat "$work/killed.txt"; fail "killed rank: not failed"; }
grep -Eq "rank 1 of 2 \(cpu:1\): the engine worker for cpu:1 \(pid $worker\) (was )?killed by signal 9" \
  "$work/killed.txt" || { cat "$work/killed.txt"; fail "killed rank: the error does not name it"; }
grep "^error" "$work/killed.txt" | cut -c1-240
rc=0
"$cli" profile run "${job[@]}" --nproc 2 --project "$work/again" > /dev/null 2> "$work/again.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$work/again.err"; fail "the gang after the killed rank exited $rc"; }
echo "ok: a killed rank fails the job, naming it; the next gang succeeds"

# 4. Rank 1's worker stopped mid-run (a hung rank): rank 0 waits for it in the all-reduce.
id="$("$cli" profile run synthetic:400 --device cpu --imgsz 64 --batch 2 --steps 80 --warmup 1 \
  --workers 0 --threads 1 --no-probe-overhead --remote "unix:$sock" --nproc 2 --dist-timeout 5 \
  --detach)"
worker=""
for _ in $(seq 1 600); do
  if "$cli" jobs show "$id" --remote "unix:$sock" --json 2>/dev/null | grep -q '"JOB_STATE_RUNNING"'; then
    worker="$(pgrep -P "$dpid" -f -- "--device cpu:1" | head -1 || true)"
    [ -n "$worker" ] && break
  fi
  sleep 0.2
done
[ -n "$worker" ] || fail "rank 1's worker not found"
into_steps "$id"
kill -STOP "$worker"
stopped_at=$SECONDS
rc=0
timeout 120 "$cli" jobs watch "$id" --remote "unix:$sock" > /dev/null 2>&1 || rc=$?
took=$((SECONDS - stopped_at))
"$cli" jobs show "$id" --remote "unix:$sock" > "$work/stopped.txt"
grep -q "^state     failed" "$work/stopped.txt" || { cat "$work/stopped.txt"; fail "stopped rank: not failed"; }
grep -Eq "rank 1 of 2 \(cpu:1\): the engine worker for cpu:1 \(pid $worker\) .*stopped by a signal" \
  "$work/stopped.txt" || { cat "$work/stopped.txt"; fail "stopped rank: the error does not name it"; }
grep "^error" "$work/stopped.txt" | cut -c1-300
rc=0
"$cli" profile run "${job[@]}" --nproc 2 --project "$work/after-stop" > /dev/null \
  2> "$work/after-stop.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$work/after-stop.err"; fail "the gang after the stopped rank exited $rc"; }
echo "ok: a stopped rank fails the job in ${took} s (dist timeout 5 s, cancel grace 3 s), naming it; the next gang succeeds"
