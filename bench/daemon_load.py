#!/usr/bin/python3
"""A bounded load benchmark of libreyolod (not a test; run by hand, see bench/README.md).

Starts one libreyolod in a temp dir, listening on a Unix socket and on loopback TCP
(--insecure-tcp, a tokens file with one token per simulated user). --users user threads submit
--jobs tiny CPU infer jobs between them (imgsz 64, warmup 1, runs 2, threads 1) over TCP, each
with its own token, all at once, and watch every job to its end with WatchJob (one stream per
job, checking that sequence numbers have no gaps); meanwhile --pollers threads call Summary on
jobs that have finished, and a sampler reads the daemon's VmRSS from /proc/<pid>/status. When
everything has finished, on the quiet daemon: Summary over TCP and over the Unix socket, and
ReadArtifact of the largest artifact against copying the same file locally.

Invariants (exit 1 when one fails): every submitted job reaches a terminal state, seen both by
its watcher and by GetJob, and ListJobs (admin, Unix socket) has them all; all SUCCEEDED; the
event sequences have no gaps and end terminal; the start order is fair (no user started twice in
a row while another user had a job waiting: max run 1); every Summary answers; every download
matches Artifact.sha256; libreyolod_jobs_submitted_total equals the jobs submitted; SIGTERM
stops the daemon with exit 0; all of it within --timeout.

The message classes are generated with protoc by deploy/python/libreyolo_scheduler_client.py
(imported as a module). Needs /usr/bin/python3 with python3-grpcio and python3-protobuf.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCHEDULER_CLIENT = os.path.join(ROOT, "deploy", "python", "libreyolo_scheduler_client.py")
DAEMON_CANDIDATES = ["build-me/server/daemon/libreyolod", "build/server/daemon/libreyolod",
                     "build-daemon/server/daemon/libreyolod"]
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
MiB = 1 << 20


def load_scheduler_client():
    spec = importlib.util.spec_from_file_location("libreyolo_scheduler_client", SCHEDULER_CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def fmt(v, digits=1):
    if v is None:
        return "-"
    return f"{v:.{digits}f}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Bench:
    def __init__(self, args, sc, grpc, pb, health_pb2):
        self.args, self.sc, self.grpc, self.pb, self.health_pb2 = args, sc, grpc, pb, health_pb2
        self.lock = threading.Lock()
        self.failures = []          # invariant failures (strings)
        self.jobs = {}              # id -> {"user", "index", "watch_state", "events", ...}
        self.submit_ms = []         # SubmitJob latencies
        self.summary_busy_ms = []   # Summary by the pollers while jobs run (TCP)
        self.finished = []          # (user, job id) as watchers see them end
        self.finished_cv = threading.Condition(self.lock)
        self.load_done = threading.Event()
        self.rss = []               # (monotonic, phase, KiB)
        self.phase = "idle-before"
        self.deadline = time.monotonic() + args.timeout
        self.timed_out = False

    def fail(self, message):
        with self.lock:
            self.failures.append(message)
        print(f"FAIL: {message}", file=sys.stderr, flush=True)

    def remaining(self):
        return max(0.1, self.deadline - time.monotonic())

    # ---- connections ------------------------------------------------------------------------

    def client(self, target, token):
        channel = self.grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", 64 << 20)])
        self.grpc.channel_ready_future(channel).result(timeout=10)
        return channel, self.sc.Client(self.grpc, channel, self.pb, token, self.args.rpc_timeout)

    # ---- the daemon -------------------------------------------------------------------------

    def start_daemon(self, tmp):
        a = self.args
        self.sock = os.path.join(tmp, "d.sock")
        self.port = free_port()
        self.store_dir = os.path.join(tmp, "store")
        self.tokens = {f"user{u}": f"bench-{u}-{uuid.uuid4().hex}" for u in range(a.users)}
        tokens_file = os.path.join(tmp, "tokens")
        fd = os.open(tokens_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            for user, token in self.tokens.items():
                f.write(f"{token} {user}\n")
        per_user = -(-a.jobs // a.users)
        cmd = [a.daemon, "--listen", f"unix:{self.sock}", "--listen", f"127.0.0.1:{self.port}",
               "--insecure-tcp", "--tokens-file", tokens_file,
               "--state-dir", os.path.join(tmp, "state"), "--store-dir", self.store_dir,
               "--threads", str(a.threads),
               "--max-jobs-per-user", str(max(10, per_user)),
               "--max-queue-length", str(max(100, a.jobs))]
        self.daemon_log = open(os.path.join(tmp, "daemon.log"), "w+")
        self.daemon = subprocess.Popen(cmd, stdout=self.daemon_log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            if self.daemon.poll() is not None:
                raise RuntimeError(f"libreyolod exited {self.daemon.returncode} at start: "
                                   f"{self.daemon_log_tail()}")
            try:
                channel, admin = self.client(f"unix:{self.sock}", None)
                status = self.sc.check_health(admin, self.health_pb2)
                admin.unary("ListJobs", self.pb.ListJobsRequest(), self.pb.ListJobsResponse)
                self.admin_channel, self.admin = channel, admin
                return status
            except Exception:  # not up yet
                if time.monotonic() > deadline:
                    raise RuntimeError("libreyolod did not answer within 60 s: "
                                       f"{self.daemon_log_tail()}") from None
                time.sleep(0.2)

    def daemon_log_tail(self):
        self.daemon_log.flush()
        self.daemon_log.seek(0)
        return " | ".join(self.daemon_log.read().splitlines()[-5:])

    def stop_daemon(self):
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                return self.daemon.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
                return "killed after 90 s"
        return self.daemon.returncode

    # ---- load -------------------------------------------------------------------------------

    def sampler(self, stop):
        while not stop.is_set():
            kib = vm_rss_kib(self.daemon.pid)
            if kib is not None:
                self.rss.append((time.monotonic(), self.phase, kib))
            stop.wait(self.args.rss_interval)

    def submit_request(self, user, index):
        a, pb = self.args, self.pb
        infer = pb.InferSpec(model=pb.ModelOptions(device="cpu", threads=a.job_threads),
                             imgsz=a.imgsz, warmup=a.warmup, runs=a.runs)
        return pb.SubmitJobRequest(infer=infer, labels={"bench": "daemon_load", "user": user},
                                   request_id=f"{user}-{index}-{uuid.uuid4().hex}")

    def user_thread(self, user, count, go, tcp_target):
        try:
            channel, client = self.client(tcp_target, self.tokens[user])
        except Exception as e:
            self.fail(f"{user}: cannot connect: {e}")
            return
        with channel:
            go.wait()
            ids = []
            for i in range(count):
                t0 = time.perf_counter()
                try:
                    job = client.unary("SubmitJob", self.submit_request(user, i), self.pb.Job)
                except self.sc.Failure as e:
                    self.fail(f"{user}: SubmitJob #{i}: {e}")
                    continue
                with self.lock:
                    self.submit_ms.append((time.perf_counter() - t0) * 1000)
                    self.jobs[job.id] = {"user": user, "index": i, "watch_state": None,
                                         "events": 0}
                ids.append(job.id)
            watchers = [threading.Thread(target=self.watch_job, args=(client, user, job_id),
                                         daemon=True) for job_id in ids]
            for w in watchers:
                w.start()
            for w in watchers:
                w.join(self.remaining() + 5)

    def watch_job(self, client, user, job_id):
        pb = self.pb
        expected, last_state = 1, None
        try:
            for ev in client.watch(job_id, 0, self.remaining()):
                # An event shown but not stored (a queue position change, progress past the
                # log's bound) repeats the latest stored event's number (rpc.md, Resuming).
                if ev.sequence == expected - 1 and expected > 1:
                    continue
                if ev.sequence != expected:
                    self.fail(f"{job_id}: event {ev.sequence} where {expected} was expected")
                expected = ev.sequence + 1
                last_state = self.sc.state_name(pb, ev.state)
        except self.grpc.RpcError as e:
            if e.code() != self.grpc.StatusCode.DEADLINE_EXCEEDED:  # --timeout: reported once
                self.fail(f"{job_id}: WatchJob: {e.code().name}: {e.details()}")
        with self.lock:
            self.jobs[job_id]["watch_state"] = last_state
            self.jobs[job_id]["events"] = expected - 1
            self.finished.append((user, job_id))
            self.finished_cv.notify_all()
        if last_state not in TERMINAL and time.monotonic() < self.deadline:
            self.fail(f"{job_id}: its stream ended in state {last_state}, not a terminal one")

    def poller_thread(self, tcp_target):
        """Calls Summary on finished jobs (each user's own, with its token) until the load ends."""
        clients = {}
        try:
            for user, token in self.tokens.items():
                clients[user] = self.client(tcp_target, token)
            i = 0
            while not self.load_done.is_set() and time.monotonic() < self.deadline:
                with self.lock:
                    done = [f for f in self.finished if self.jobs[f[1]]["watch_state"] == "SUCCEEDED"]
                    if not done:
                        self.finished_cv.wait(0.2)
                        continue
                user, job_id = done[i % len(done)]
                i += 1
                t0 = time.perf_counter()
                try:
                    clients[user][1].unary(
                        "Summary", self.pb.SummaryRequest(profile=self.pb.ProfileRef(job_id=job_id)),
                        self.pb.ReaderResponse)
                    with self.lock:
                        self.summary_busy_ms.append((time.perf_counter() - t0) * 1000)
                except self.sc.Failure as e:
                    self.fail(f"busy Summary of {job_id}: {e}")
                self.load_done.wait(self.args.poll_interval)
        except Exception as e:
            self.fail(f"poller: {e}")
        finally:
            for channel, _ in clients.values():
                channel.close()

    def run_load(self):
        a = self.args
        tcp_target = f"127.0.0.1:{self.port}"
        users = list(self.tokens)
        counts = [a.jobs // a.users + (1 if u < a.jobs % a.users else 0) for u in range(a.users)]
        go = threading.Event()
        threads = [threading.Thread(target=self.user_thread, args=(users[u], counts[u], go, tcp_target),
                                    daemon=True) for u in range(a.users) if counts[u]]
        pollers = [threading.Thread(target=self.poller_thread, args=(tcp_target,), daemon=True)
                   for _ in range(a.pollers)]
        for t in threads + pollers:
            t.start()
        time.sleep(0.5)  # let the user threads connect, so that they submit together
        self.phase = "busy"
        t0 = time.monotonic()
        self.deadline = t0 + a.timeout  # --timeout bounds the load itself
        go.set()
        for t in threads:
            t.join(self.remaining() + 10)
        self.load_wall_s = time.monotonic() - t0
        self.phase = "after"
        self.load_done.set()
        for t in pollers:
            t.join(30)
        self.timed_out = (any(t.is_alive() for t in threads) or
                          any(info["watch_state"] not in TERMINAL for info in self.jobs.values())
                          and time.monotonic() >= self.deadline)
        if self.timed_out:
            with self.lock:
                left = [j for j, info in self.jobs.items() if info["watch_state"] not in TERMINAL]
            for job_id in left:
                try:
                    self.admin.unary("CancelJob", self.pb.CancelJobRequest(job_id=job_id),
                                     self.pb.Job)
                except self.sc.Failure:
                    pass
            self.fail(f"the load did not finish within --timeout {a.timeout:g} s: "
                      f"{len(left)} of {len(self.jobs)} jobs unfinished, cancelled")
            stop_by = time.monotonic() + 30  # a running job stops at its next step boundary
            while left and time.monotonic() < stop_by:
                left = [j for j in left if self.sc.state_name(self.pb, self.admin.unary(
                    "GetJob", self.pb.GetJobRequest(job_id=j), self.pb.Job).state) not in TERMINAL]
                time.sleep(0.2)

    # ---- after the load ---------------------------------------------------------------------

    def collect_records(self):
        pb = self.pb
        records = {}
        for job_id in self.jobs:
            try:
                records[job_id] = self.admin.unary("GetJob", pb.GetJobRequest(job_id=job_id), pb.Job)
            except self.sc.Failure as e:
                self.fail(f"GetJob {job_id}: {e}")
        listed, token = set(), ""
        while True:
            resp = self.admin.unary("ListJobs", pb.ListJobsRequest(page_size=500, page_token=token),
                                    pb.ListJobsResponse)
            listed.update(j.id for j in resp.jobs)
            token = resp.next_page_token
            if not token:
                break
        missing = set(self.jobs) - listed
        if missing:
            self.fail(f"ListJobs lacks {len(missing)} submitted job(s): {sorted(missing)[:3]}")
        return records

    def check_jobs(self, records):
        pb = self.pb
        states = {}
        for job_id, info in self.jobs.items():
            job = records.get(job_id)
            state = self.sc.state_name(pb, job.state) if job else None
            states[state] = states.get(state, 0) + 1
            if self.timed_out and info["watch_state"] not in TERMINAL:
                continue  # reported as the timeout, and cancelled
            if state not in TERMINAL:
                self.fail(f"{job_id}: lost: GetJob says {state}")
            elif state != "SUCCEEDED":
                self.fail(f"{job_id}: ended {state}: {job.error}")
            if info["watch_state"] != state:
                self.fail(f"{job_id}: its watcher saw {info['watch_state']}, GetJob says {state}")
            if job and job.owner != info["user"]:
                self.fail(f"{job_id}: owner {job.owner}, submitted by {info['user']}")
            if job and job.last_sequence != info["events"]:
                self.fail(f"{job_id}: watched {info['events']} events, last_sequence is "
                          f"{job.last_sequence}")
        return states

    def fairness(self, records):
        """Walks the jobs in start order. A run is consecutive starts by one user at each of which
        another user had a job waiting (created before that start, started after it)."""
        jobs = sorted((j for j in records.values() if j.start_time_unix_ms),
                      key=lambda j: (j.start_time_unix_ms, j.create_time_unix_ms))
        max_run, run, prev, unfair = 0, 0, None, []
        for k, j in enumerate(jobs):
            others_waiting = any(o.owner != j.owner and o.create_time_unix_ms < j.start_time_unix_ms
                                 for o in jobs[k + 1:])
            if j.owner == prev and others_waiting:
                run += 1
                unfair.append(j.id)
            else:
                run = 1
            prev = j.owner
            max_run = max(max_run, run)
        order = " ".join(j.owner.replace("user", "u") for j in jobs)
        return max_run, order, unfair

    def summary_latency(self, target, token, n):
        channel, client = self.client(target, token)
        done = [job_id for job_id, info in self.jobs.items() if info["watch_state"] == "SUCCEEDED"
                and (token is None or info["user"] == self.token_user(token))]
        times = []
        with channel:
            for i in range(n if done else 0):
                job_id = done[i % len(done)]
                t0 = time.perf_counter()
                try:
                    client.unary("Summary", self.pb.SummaryRequest(
                        profile=self.pb.ProfileRef(job_id=job_id)), self.pb.ReaderResponse)
                    times.append((time.perf_counter() - t0) * 1000)
                except self.sc.Failure as e:
                    self.fail(f"idle Summary of {job_id} over {target}: {e}")
        return times

    def token_user(self, token):
        return next(u for u, t in self.tokens.items() if t == token)

    def find_local(self, art):
        for dirpath, _, files in os.walk(self.store_dir):
            if art.name in files:
                path = os.path.join(dirpath, art.name)
                if os.path.getsize(path) == art.size_bytes:
                    with open(path, "rb") as f:
                        if hashlib.sha256(f.read()).hexdigest() == art.sha256:
                            return path
        return None

    def download(self, client, job_id, art, out_path):
        call = client.channel.unary_stream(
            self.sc.SERVICE + "ReadArtifact",
            request_serializer=self.pb.ReadArtifactRequest.SerializeToString,
            response_deserializer=self.pb.ArtifactChunk.FromString)
        h, size, sha = hashlib.sha256(), 0, None
        with open(out_path, "wb") as f:
            for chunk in call(self.pb.ReadArtifactRequest(job_id=job_id, name=art.name),
                              metadata=client.metadata, timeout=self.remaining()):
                if chunk.offset != size:
                    raise RuntimeError(f"chunk at offset {chunk.offset}, expected {size}")
                f.write(chunk.data)
                h.update(chunk.data)
                size += len(chunk.data)
                if chunk.last:
                    sha = chunk.sha256
        if size != art.size_bytes or h.hexdigest() != art.sha256 or sha != art.sha256:
            raise RuntimeError(f"downloaded {size} bytes, sha256 {h.hexdigest()[:12]} "
                               f"(last chunk says {str(sha)[:12]}), expected {art.size_bytes} "
                               f"bytes, {art.sha256[:12]}")

    def artifact_throughput(self, records, tmp):
        best = None
        for job_id, job in records.items():
            for art in job.artifacts:
                if best is None or art.size_bytes > best[1].size_bytes:
                    best = (job_id, art)
        if best is None:
            self.fail("no job has an artifact to download")
            return None
        job_id, art = best
        user = self.jobs[job_id]["user"]
        local = self.find_local(art)
        if local is None:
            print(f"note: {art.name} of {job_id} not found under the store dir; no local copy",
                  file=sys.stderr)
        res = {"job": job_id, "artifact": art.name, "bytes": art.size_bytes,
               "local": [], "unix": [], "tcp": []}
        tcp_channel, tcp = self.client(f"127.0.0.1:{self.port}", self.tokens[user])
        with tcp_channel:
            out = os.path.join(tmp, "download.bin")
            for _ in range(self.args.artifact_reps):  # interleaved, so noise hits all three
                if local:
                    t0 = time.perf_counter()
                    shutil.copyfile(local, out)
                    res["local"].append(time.perf_counter() - t0)
                for kind, client in (("unix", self.admin), ("tcp", tcp)):
                    t0 = time.perf_counter()
                    try:
                        self.download(client, job_id, art, out)
                    except (RuntimeError, self.grpc.RpcError) as e:
                        self.fail(f"ReadArtifact {art.name} of {job_id} over {kind}: {e}")
                        continue
                    res[kind].append(time.perf_counter() - t0)
        return res

    def metrics(self):
        text = self.admin.unary("GetMetrics", self.pb.GetMetricsRequest(),
                                self.pb.GetMetricsResponse).text
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(libreyolod_jobs_submitted_total|libreyolod_rpc_errors_total|"
                         r"libreyolod_resident_memory_bytes)\s+(\S+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Exit status: 0 every invariant held, 1 one failed, "
                                "2 usage error.")
    p.add_argument("--daemon", help="libreyolod binary (default: the first of "
                   + ", ".join(DAEMON_CANDIDATES) + ")")
    p.add_argument("--users", type=int, default=4, help="simulated users, each with a token "
                   "(default 4)")
    p.add_argument("--jobs", type=int, default=12, help="jobs in all, split evenly over the "
                   "users (default 12)")
    p.add_argument("--timeout", type=float, default=600, metavar="S",
                   help="bound on the whole load phase (default 600); jobs left are cancelled")
    p.add_argument("--pollers", type=int, default=2, help="threads calling Summary on finished "
                   "jobs during the load (default 2)")
    p.add_argument("--poll-interval", type=float, default=0.05, metavar="S")
    p.add_argument("--idle-summaries", type=int, default=30, metavar="N",
                   help="Summary calls over each transport on the quiet daemon (default 30)")
    p.add_argument("--artifact-reps", type=int, default=7, metavar="N")
    p.add_argument("--imgsz", type=int, default=64)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--job-threads", type=int, default=1, help="ModelOptions.threads (default 1)")
    p.add_argument("--threads", type=int, default=1, help="the daemon's --threads (default 1)")
    p.add_argument("--rpc-timeout", type=float, default=30, metavar="S")
    p.add_argument("--rss-interval", type=float, default=0.05, metavar="S")
    p.add_argument("--protoc", default="protoc")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (printed)")
    p.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    a = p.parse_args(argv)
    if a.users < 1 or a.jobs < 1 or a.timeout <= 0 or a.pollers < 0:
        p.error("--users and --jobs must be >= 1, --timeout > 0, --pollers >= 0")
    if not a.daemon:
        a.daemon = next((os.path.join(ROOT, c) for c in DAEMON_CANDIDATES
                         if os.access(os.path.join(ROOT, c), os.X_OK)), None)
        if not a.daemon:
            p.error("no libreyolod found; pass --daemon")

    try:
        import grpc
    except ImportError:
        print("daemon_load: needs python3-grpcio and python3-protobuf (/usr/bin/python3)",
              file=sys.stderr)
        return 1
    sc = load_scheduler_client()
    tmp = tempfile.mkdtemp(prefix="lyload-")
    try:
        os.makedirs(os.path.join(tmp, "pb"))
        sc.generate_modules(os.path.join(tmp, "pb"), os.path.join(ROOT, "proto"), a.protoc)
        pb, health_pb2 = sc.load_modules(os.path.join(tmp, "pb"))
        bench = Bench(a, sc, grpc, pb, health_pb2)
        return run(bench, tmp)
    except sc.Failure as e:
        print(f"daemon_load: {e}", file=sys.stderr)
        return 1
    finally:
        if a.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(bench, tmp):
    a = bench.args
    stop_sampler = threading.Event()
    rc_daemon = None
    try:
        health = bench.start_daemon(tmp)
        sampler = threading.Thread(target=bench.sampler, args=(stop_sampler,), daemon=True)
        sampler.start()
        time.sleep(1.0)  # idle RSS before any job
        bench.run_load()
        records = bench.collect_records()
        states = bench.check_jobs(records)
        max_run, order, unfair = bench.fairness(records)
        if max_run > 1:
            bench.fail(f"unfair start order: max run {max_run} ({order}); jobs {unfair}")
        bench.phase = "quiet"
        some_user = bench.jobs[next(iter(bench.jobs))]["user"] if bench.jobs else "user0"
        idle_tcp = bench.summary_latency(f"127.0.0.1:{bench.port}", bench.tokens[some_user],
                                         a.idle_summaries)
        idle_unix = bench.summary_latency(f"unix:{bench.sock}", None, a.idle_summaries)
        art = bench.artifact_throughput(records, tmp)
        metrics = bench.metrics()
        if metrics.get("libreyolod_jobs_submitted_total") != len(bench.jobs):
            bench.fail(f"libreyolod_jobs_submitted_total is "
                       f"{metrics.get('libreyolod_jobs_submitted_total')}, {len(bench.jobs)} "
                       "were submitted")
        bench.phase = "idle-after"
        time.sleep(1.0)
        stop_sampler.set()
        sampler.join()
        bench.admin_channel.close()
        rc_daemon = bench.stop_daemon()
        if rc_daemon != 0:
            bench.fail(f"libreyolod exited {rc_daemon} after SIGTERM")
    except Exception as e:
        bench.fail(f"{type(e).__name__}: {e}")
        stop_sampler.set()
        if getattr(bench, "daemon", None) is not None:
            rc_daemon = bench.stop_daemon()
        report_failures(bench)
        return 1

    # ---- the table ----------------------------------------------------------------------------
    wait_s = [(j.start_time_unix_ms - j.create_time_unix_ms) / 1000 for j in records.values()
              if j.start_time_unix_ms]
    run_s = [(j.finish_time_unix_ms - j.start_time_unix_ms) / 1000 for j in records.values()
             if j.start_time_unix_ms and j.finish_time_unix_ms]
    rss = {}
    for _, phase, kib in bench.rss:
        rss.setdefault(phase, []).append(kib / 1024)

    rows = []

    def row(name, value, note=""):
        rows.append((name, value, note))

    def pct_row(name, values, unit, digits=1):
        row(name, f"{fmt(percentile(values, 50), digits)} / {fmt(percentile(values, 90), digits)}"
            f" / {fmt(percentile(values, 99), digits)} {unit}", f"n={len(values)}")

    row("jobs", f"{len(bench.jobs)} submitted, "
        + ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda x: str(x[0]))),
        f"{a.users} users over TCP, imgsz {a.imgsz}, warmup {a.warmup}, runs {a.runs}, "
        f"threads {a.job_threads}")
    row("load wall time", f"{bench.load_wall_s:.1f} s", "first submit to last job watched to its end")
    row("health", health)
    row("fairness: max run", str(max_run), "consecutive starts of one user while others waited "
        "(1 = round robin)")
    row("start order", order)
    pct_row("submit->start p50/p90/p99", wait_s, "s")
    row("run time median", f"{fmt(statistics.median(run_s) if run_s else None, 2)} s",
        "start to finish, per job")
    pct_row("SubmitJob RPC p50/p90/p99", bench.submit_ms, "ms")
    pct_row("Summary busy TCP p50/p90/p99", bench.summary_busy_ms, "ms")
    pct_row("Summary idle TCP p50/p90/p99", idle_tcp, "ms")
    pct_row("Summary idle Unix p50/p90/p99", idle_unix, "ms")
    if art:
        mb = art["bytes"] / MiB
        med = {k: statistics.median(v) if v else None for k, v in art.items()
               if k in ("local", "unix", "tcp")}
        rate = {k: (mb / v if v else None) for k, v in med.items()}
        row("artifact", f"{art['artifact']} {art['bytes'] / 1024:.1f} KiB",
            f"largest artifact, {a.artifact_reps} reps interleaved, medians")
        row("local copy", f"{fmt(rate['local'])} MiB/s", f"{fmt(med['local'] and med['local'] * 1000, 2)} ms")
        for k in ("unix", "tcp"):
            ratio = (rate[k] / rate["local"]) if rate[k] and rate["local"] else None
            row(f"ReadArtifact {k}", f"{fmt(rate[k])} MiB/s",
                f"{fmt(med[k] and med[k] * 1000, 2)} ms; ratio to local copy "
                f"{fmt(ratio, 3)}")
    for phase, label in (("idle-before", "RSS idle (before)"), ("busy", "RSS busy"),
                         ("idle-after", "RSS idle (after)")):
        v = rss.get(phase, [])
        row(label, f"{fmt(statistics.median(v) if v else None)} MiB median",
            f"max {fmt(max(v) if v else None)} MiB, n={len(v)} samples")
    if "libreyolod_resident_memory_bytes" in metrics:
        row("RSS metric (quiet)", f"{metrics['libreyolod_resident_memory_bytes'] / MiB:.1f} MiB",
            "libreyolod_resident_memory_bytes")
    row("rpc errors (metric)", f"{metrics.get('libreyolod_rpc_errors_total', float('nan')):g}",
        "libreyolod_rpc_errors_total")
    row("SIGTERM exit", str(rc_daemon))

    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows if r[0] != "start order")
    print(f"libreyolod load benchmark ({os.path.relpath(a.daemon, ROOT)})")
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:<{vwidth}}  {note}".rstrip())
    verdict = "PASS" if not bench.failures else f"FAIL ({len(bench.failures)})"
    print(f"invariants: {verdict}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": [{"name": r[0], "value": r[1], "note": r[2]} for r in rows],
                       "submit_to_start_s": wait_s, "run_s": run_s,
                       "submit_ms": bench.submit_ms, "summary_busy_ms": bench.summary_busy_ms,
                       "summary_idle_tcp_ms": idle_tcp, "summary_idle_unix_ms": idle_unix,
                       "artifact": art, "rss_mib": rss, "metrics": metrics,
                       "failures": bench.failures}, f, indent=2)
    report_failures(bench)
    return 0 if not bench.failures else 1


def report_failures(bench):
    for f in bench.failures:
        print(f"  FAIL: {f}")


if __name__ == "__main__":
    sys.exit(main())
