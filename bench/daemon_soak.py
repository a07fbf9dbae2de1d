#!/usr/bin/python3
"""A bounded soak of libreyolod under faults (not a test; run by hand, see bench/README.md).

One daemon with two CPU slots (cpu, cpu:1), a Unix socket for the admin and loopback TCP
(--insecure-tcp, one token per user) for the users. --users users submit tiny CPU infer jobs,
user0 twice as many as the others, so that every user is backlogged at once; then, while the
jobs run, in this order:

  worker kill    SIGKILL of one engine worker mid-job (its job fails, a fresh worker follows)
  clock step     the daemon's wall clock (CLOCK_REALTIME, through libfaketime preloaded into
                 the daemon and its workers only; CLOCK_MONOTONIC left alone, this machine's
                 clock untouched) stepped +1 day while jobs run, then -1 day back, each held
                 --clock-hold seconds: fair share and the job-duration metric must not move
  daemon kill -9 the daemon dies mid-job and is started again on the same state (after the
                 steps: it rebuilds fair share from records whose wall-clock spans cross them)
  flood          --flood-per-address preface-only TCP connections (the HTTP/2 preface, then
                 nothing) from each of --flood-addresses loopback addresses (127.0.0.1, the
                 users' own, 127.0.0.2, ...), reopened as the daemon closes them, for
                 --flood-seconds (tests/daemon/connection_flood_walk.py's flood), while a token
                 user on TCP and root on the Unix socket each call GetDaemonInfo every 0.5 s
  SIGTERM        the daemon drains and is started again
  full state     the state filesystem (a tmpfs of --state-mib, where this process may mount one:
                 it re-runs itself under `unshare -m` as root) filled to --free-kib free bytes:
                 SubmitJob is refused while it lasts, nothing stored is lost; then freed

Users resubmit a refused or unanswered SubmitJob with the same request_id (idempotent), as a
scheduler would. At the end it prints jobs submitted / succeeded / failed (each reason) / lost
(acknowledged but missing or not terminal) / run twice (more than one terminal event, or an
artifact whose digest changed across a restart), per-user completions and waits, the device
time per user while all users were backlogged (goal: within 1.25x), the same in each window
between faults, the daemon's job-duration histogram after each clock step, the seconds the
daemon did not answer (per fault), the answers during the flood, the state dir's size, and the
daemon's and the workers' RSS and open descriptors at the start and the end of the last daemon
(goal: within 5 %). The daemon's times (records, events) are on its stepped clock: the report
maps them back to the real clock (the steps are whole days, the run minutes). Exit 1 when a job
is lost or ran twice, the flood locked out the token user or root, or a clock step showed in
the duration histogram. Needs /usr/bin/python3 with python3-grpcio and python3-protobuf,
protoc (the message classes come from deploy/python), and libfaketime for the clock step
(Debian: apt-get install faketime; without it the step is skipped and said so).
"""

import argparse
import collections
import importlib.util
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


load_bench = load("daemon_load", os.path.join(HERE, "daemon_load.py"))
_walk = []


def walk():
    """tests/daemon/connection_flood_walk.py (its flood and its calls; imports grpc)."""
    if not _walk:
        _walk.append(load("connection_flood_walk",
                          os.path.join(ROOT, "tests", "daemon", "connection_flood_walk.py")))
    return _walk[0]


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return out


DAY_MS = 86_400_000
FAKETIME_LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1")


def faketime_env(lib, rc_file):
    """The environment that steps CLOCK_REALTIME of a process (and its children) by the offset
    written in `rc_file` ("+1d", "+0"), re-read at most once a second; CLOCK_MONOTONIC and file
    times are left alone."""
    return {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": rc_file, "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1"}


def check_faketime(lib, tmp):
    """Runs a probe under libfaketime at +1 day: (realtime shift s, monotonic shift s), which
    must be ~86400 and ~0, or an error string."""
    rc = os.path.join(tmp, "faketime-probe.rc")
    with open(rc, "w") as f:
        f.write("+1d\n")
    probe = "import time; print(time.time(), time.monotonic())"
    env = dict(os.environ, **faketime_env(lib, rc))
    before = (time.time(), time.monotonic())
    r = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True)
    after = (time.time(), time.monotonic())
    try:
        real, mono = (float(x) for x in r.stdout.split())
    except ValueError:
        return f"the probe under libfaketime printed {r.stdout!r} {r.stderr[-300:]!r}"
    return (real - (before[0] + after[0]) / 2, mono - (before[1] + after[1]) / 2)


def dir_kib(path):
    """Disk use of a folder (allocated blocks), KiB."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total // 1024


def duration_histogram(text, kind="infer"):
    """libreyolod_job_duration_seconds{kind} from Prometheus text: (count, sum, observations
    above the largest finite bucket)."""
    buckets, count, total = {}, 0, 0.0
    for line in text.splitlines():
        m = re.match(r'libreyolod_job_duration_seconds_(bucket|count|sum)\{([^}]*)\} (\S+)', line)
        if not m or f'kind="{kind}"' not in m.group(2):
            continue
        if m.group(1) == "count":
            count = int(float(m.group(3)))
        elif m.group(1) == "sum":
            total = float(m.group(3))
        else:
            le = re.search(r'le="([^"]+)"', m.group(2)).group(1)
            buckets[float(le)] = int(float(m.group(3)))
    finite = [le for le in buckets if le != float("inf")]
    above = count - buckets[max(finite)] if finite else 0
    return count, total, above


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def can_mount_tmpfs(path, mib):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


class Soak:
    def __init__(self, a, sc, grpc, pb, tmp):
        self.a, self.sc, self.grpc, self.pb, self.tmp = a, sc, grpc, pb, tmp
        self.lock = threading.Lock()
        self.acked = {}          # request_id -> job id (SubmitJob answered)
        self.user_of = {}        # request_id -> user
        self.refusals = collections.Counter()  # why SubmitJob was refused (before a retry)
        self.digests = {}        # job id -> {artifact: sha256} as first seen finished
        self.notes = []
        self.finished = {}       # job id -> its terminal record, as last seen (retention may delete it)
        self.state_dir = os.path.join(tmp, "statefs", "state")
        self.port = load_bench.free_port()
        self.sock = os.path.join(tmp, "d.sock")
        self.tokens = {f"user{u}": f"soak-{u}-{uuid.uuid4().hex}" for u in range(a.users)}
        self.daemon = None
        self.incarnations = 0
        # The clock step: libfaketime's offset file (read by the daemon and its workers only).
        self.faketime = next((lib for lib in FAKETIME_LIBS if os.path.exists(lib)), None)
        self.faketime_rc = os.path.join(tmp, "faketime.rc")
        self.offsets = {0}       # every offset the daemon's wall clock has had, ms
        self.t0_ms = time.time() * 1000
        self.marks = []          # (real ms, fault): the windows of the fair-share table
        self.fault = "start"     # what the service probe blames an unanswered call on
        self.outages = collections.defaultdict(float)  # fault -> seconds the daemon did not answer
        self.histograms = []     # (when, count, sum, above the last bucket)
        self.bad_durations = False
        self.flood_locked_out = False
        self.flood_figures = None  # (tries, token user answered, root answered)

    # ---- the daemon -------------------------------------------------------------------------

    def start(self):
        tokens_file = os.path.join(self.tmp, "tokens")
        if not os.path.exists(tokens_file):
            fd = os.open(tokens_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                for user, token in self.tokens.items():
                    f.write(f"{token} {user}\n")
        cmd = [self.a.daemon, "--listen", f"unix:{self.sock}",
               "--listen", f"127.0.0.1:{self.port}", "--insecure-tcp",
               "--tokens-file", tokens_file, "--state-dir", self.state_dir,
               "--store-dir", os.path.join(self.tmp, "store"), "--device", "cpu",
               "--cpu-slots", "2", "--threads", "1", "--max-jobs-per-user", "100",
               "--max-queue-length", "400", "--connection-idle-timeout", "5",
               "--handshake-timeout", "3"]
        if self.a.retention_max_jobs:
            cmd += ["--retention-max-jobs", str(self.a.retention_max_jobs)]
        self.incarnations += 1
        log = open(os.path.join(self.tmp, f"daemon.{self.incarnations}.log"), "w")
        env = dict(os.environ)
        if self.faketime and self.a.clock_hold > 0:
            if not os.path.exists(self.faketime_rc):
                with open(self.faketime_rc, "w") as f:
                    f.write("+0\n")
            env.update(faketime_env(self.faketime, self.faketime_rc))
        self.daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise RuntimeError(f"libreyolod exited {self.daemon.returncode} at start")
            try:
                self.admin = self.client(f"unix:{self.sock}", None)
                self.admin.unary("ListJobs", self.pb.ListJobsRequest(), self.pb.ListJobsResponse)
                return
            except Exception:
                time.sleep(0.2)
        raise RuntimeError("libreyolod did not answer within 90 s")

    def client(self, target, token):
        channel = self.grpc.insecure_channel(target)
        self.grpc.channel_ready_future(channel).result(timeout=5)
        return self.sc.Client(self.grpc, channel, self.pb, token, 30)

    def stats(self):
        pid = self.daemon.pid
        workers = children(pid)
        return {"daemon_rss_kib": load_bench.vm_rss_kib(pid), "daemon_fds": fds(pid),
                "workers": len(workers),
                "worker_rss_kib": sum(load_bench.vm_rss_kib(w) or 0 for w in workers),
                "worker_fds": sum(fds(w) or 0 for w in workers),
                "state_kib": dir_kib(self.state_dir)}

    def mark(self, fault):
        self.fault = fault
        self.marks.append((time.time() * 1000, fault))

    def real_ms(self, t):
        """A time of the daemon's (its wall clock, stepped by whole days) on the real clock: the
        one offset it has had that puts `t` within this run."""
        if not t:
            return t
        lo, hi = self.t0_ms - 120_000, time.time() * 1000 + 120_000
        for off in sorted(self.offsets, key=abs):
            if lo <= t - off <= hi:
                return t - off
        return t

    def probe_service(self, stop):
        """Root's GetDaemonInfo on the Unix socket every 0.5 s: the seconds it went unanswered,
        charged to the fault going on."""
        last_ok = time.monotonic()
        while not stop.wait(0.5):
            ok = walk().fresh_call(f"unix:{self.sock}", None, timeout=2.0)
            now = time.monotonic()
            if ok:
                last_ok = now
            else:
                with self.lock:
                    self.outages[self.fault] += now - last_ok
                last_ok = now

    def record_histogram(self, when):
        text = self.admin.unary("GetMetrics", self.pb.GetMetricsRequest(),
                                self.pb.GetMetricsResponse).text
        count, total, above = duration_histogram(text)
        self.histograms.append((when, count, total, above))
        if above or total < 0 or (count and total / count > 3600):
            self.bad_durations = True

    def signal_daemon(self, sig, why):
        self.notes.append(f"{why}: {signal.Signals(sig).name} to libreyolod pid {self.daemon.pid}")
        self.daemon.send_signal(sig)
        rc = self.daemon.wait(timeout=120)
        if sig == signal.SIGTERM and rc != 0:
            self.notes.append(f"SIGTERM: libreyolod exited {rc}, not 0")
        self.start()

    # ---- users ------------------------------------------------------------------------------

    def submit_all(self, user, count):
        token = self.tokens[user]
        for i in range(count):
            rid = f"{user}-{i}-{uuid.uuid4().hex[:8]}"
            with self.lock:
                self.user_of[rid] = user
            # Both slots: the daemon queues a single-device job on the slot it names.
            device = "cpu" if i % 2 == 0 else "cpu:1"
            infer = self.pb.InferSpec(model=self.pb.ModelOptions(device=device, threads=1),
                                      imgsz=64, warmup=1, runs=self.a.runs)
            request = self.pb.SubmitJobRequest(infer=infer, request_id=rid,
                                               labels={"soak": "1", "user": user})
            for _ in range(600):  # the same request until answered (idempotent by request_id)
                try:
                    c = self.client(f"127.0.0.1:{self.port}", token)
                    job = c.unary("SubmitJob", request, self.pb.Job)
                    with self.lock:
                        self.acked[rid] = job.id
                    break
                except Exception as e:  # refused (full state), or the daemon is restarting
                    with self.lock:
                        self.refusals[str(e).split(":")[1].strip() if ":" in str(e) else
                                      type(e).__name__] += 1
                    time.sleep(0.5)

    def jobs(self):
        out, token = [], ""
        while True:
            r = self.admin.unary("ListJobs", self.pb.ListJobsRequest(page_size=500,
                                                                    page_token=token),
                                 self.pb.ListJobsResponse)
            out.extend(r.jobs)
            token = r.next_page_token
            if not token:
                return out

    def remember_finished(self, jobs):
        for j in jobs:
            if self.sc.state_name(self.pb, j.state) in ("SUCCEEDED", "FAILED", "CANCELLED"):
                with self.lock:
                    self.finished[j.id] = j

    def watch_finished(self, stop):
        """Every second, the jobs that have finished: with --retention-max-jobs the daemon
        deletes finished jobs while users still submit, and a job deleted unseen would count as
        lost."""
        while not stop.wait(1.0):
            try:
                self.remember_finished(self.jobs())
            except Exception:  # the daemon is restarting (faults)
                pass

    def remember_digests(self):
        for j in self.jobs():
            if self.sc.state_name(self.pb, j.state) in ("SUCCEEDED", "FAILED", "CANCELLED"):
                seen = self.digests.setdefault(j.id, {})
                for art in j.artifacts:
                    if seen.setdefault(art.name, art.sha256) != art.sha256:
                        seen["changed"] = art.name

    def wait_running(self, n=1, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = [j for j in self.jobs()
                       if self.sc.state_name(self.pb, j.state) == "RUNNING"]
            if len(running) >= n:
                return running
            time.sleep(0.2)
        return []

    # ---- faults -----------------------------------------------------------------------------

    def kill_worker(self):
        if not self.wait_running():
            self.notes.append("worker kill: no job was running")
            return
        time.sleep(0.5)
        workers = children(self.daemon.pid)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            self.notes.append(f"worker kill: SIGKILL to engine worker pid {workers[0]}")

    def set_offset(self, offset_ms):
        with open(self.faketime_rc + ".new", "w") as f:
            f.write(f"{offset_ms // 1000:+d}\n")
        os.replace(self.faketime_rc + ".new", self.faketime_rc)
        with self.lock:
            self.offsets.add(offset_ms)

    def clock_steps(self, hold):
        """+1 day, then -1 day back, each while a job runs and held `hold` seconds."""
        if not self.faketime:
            self.notes.append("clock step: skipped, libfaketime is not installed "
                              "(apt-get install faketime)")
            return
        shift = check_faketime(self.faketime, self.tmp)
        if isinstance(shift, str):
            self.notes.append(f"clock step: skipped, {shift}")
            return
        self.notes.append(f"clock step: libfaketime probe at +1 day: CLOCK_REALTIME "
                          f"{shift[0]:+.1f} s, CLOCK_MONOTONIC {shift[1]:+.3f} s")
        self.record_histogram("before the steps")
        for label, offset in (("+1 day", DAY_MS), ("-1 day", 0)):
            running = self.wait_running()
            self.mark(f"clock {label}")
            step_ms = time.time() * 1000
            self.set_offset(offset)
            time.sleep(hold)
            # The daemon's clock moved: the jobs it started since say so in their start times.
            started = [j for j in self.jobs() if j.start_time_unix_ms and
                       step_ms + offset + 2000 <= j.start_time_unix_ms <= time.time() * 1000
                       + offset + 2000]
            self.record_histogram(f"{hold} s after the {label} step")
            self.notes.append(f"clock {label}: stepped with {len(running)} job(s) running; "
                              f"{len(started)} job(s) started in the next {hold} s with start "
                              f"times on the stepped clock")

    def flood(self):
        """tests/daemon/connection_flood_walk.py's flood, from several addresses, while a token
        user on TCP and root on the Unix socket call GetDaemonInfo on fresh channels."""
        w = walk()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        addresses = [f"127.0.0.{i + 1}" for i in range(self.a.flood_addresses)]
        before = fds(self.daemon.pid)
        with self.lock:
            acked, refused = len(self.acked), collections.Counter(self.refusals)
        flood = w.Flood(self.port, addresses, self.a.flood_per_address)
        time.sleep(2)  # the flood is in place
        tries = tcp = unix = 0
        peak = before or 0
        end = time.monotonic() + self.a.flood_seconds
        while time.monotonic() < end:
            tries += 1
            tcp += w.fresh_call(f"127.0.0.1:{self.port}", self.tokens["user1"])
            unix += w.fresh_call(f"unix:{self.sock}")
            peak = max(peak, fds(self.daemon.pid) or 0)
            time.sleep(0.5)
        flood.stop()
        with self.lock:
            acked, refused = len(self.acked) - acked, self.refusals - refused
        time.sleep(5)  # past the handshake timeout (3 s)
        after = fds(self.daemon.pid)
        if tcp == 0 or unix == 0:
            self.flood_locked_out = True
        self.flood_figures = (tries, tcp, unix)
        self.notes.append(
            f"flood: {len(addresses)} addresses x {self.a.flood_per_address} preface-only "
            f"connections for {self.a.flood_seconds} s ({flood.opened} opened, reopened as "
            f"closed): token user on TCP {tcp}/{tries}, root on the Unix socket {unix}/{tries} "
            f"answered; the users' SubmitJob meanwhile {acked} accepted, refused or unanswered "
            f"(then retried): {dict(refused) or 0}; daemon fds {before} -> {peak} (peak) -> {after} 5 s after")

    def fill_state(self, seconds):
        st = os.statvfs(self.state_dir)
        free = st.f_bavail * st.f_frsize
        filler = os.path.join(os.path.dirname(self.state_dir), "filler")
        keep = self.a.free_kib * 1024
        with open(filler, "wb") as f:
            left = free - keep
            while left > 0:
                n = min(left, 1 << 20)
                try:
                    f.write(b"\0" * n)
                    f.flush()
                except OSError:
                    break
                left -= n
        st = os.statvfs(self.state_dir)
        left_kib = st.f_bavail * st.f_frsize // 1024
        # A user submits meanwhile: refused (nothing half-recorded), then accepted once freed.
        infer = self.pb.InferSpec(model=self.pb.ModelOptions(device="cpu", threads=1),
                                  imgsz=64, warmup=1, runs=1)
        rid = f"user1-full-{uuid.uuid4().hex[:8]}"
        request = self.pb.SubmitJobRequest(infer=infer, request_id=rid, labels={"user": "user1"})
        c = self.client(f"127.0.0.1:{self.port}", self.tokens["user1"])
        try:
            job = c.unary("SubmitJob", request, self.pb.Job)
            during = f"SubmitJob ACCEPTED as {job.id}"
        except Exception as e:
            during = f"SubmitJob refused: {str(e)[:160]}"
        time.sleep(seconds)
        os.unlink(filler)
        freed = time.monotonic()
        with self.lock:
            self.user_of[rid] = "user1"
        after = "never accepted"
        first_refusal = ""
        for _ in range(60):
            try:
                job = c.unary("SubmitJob", request, self.pb.Job)
                with self.lock:
                    self.acked[rid] = job.id
                after = f"accepted {time.monotonic() - freed:.1f} s after the space was freed"
                break
            except Exception as e:
                first_refusal = first_refusal or f" (first refusal after it: {str(e)[:160]})"
                after = f"still refused once freed: {str(e)[:100]}"
                time.sleep(1)
        self.notes.append(f"full state: {left_kib} KiB left free for {seconds} s; {during}; "
                          f"{after}{first_refusal}")


def inject_faults(soak, mounted, why):
    soak.mark("worker kill")
    soak.kill_worker()
    soak.remember_digests()
    if soak.a.clock_hold > 0:
        soak.clock_steps(soak.a.clock_hold)
    if soak.wait_running():
        time.sleep(1)
        soak.mark("daemon kill -9")
        soak.signal_daemon(signal.SIGKILL, "daemon kill -9 mid-job")
    soak.mark("flood")
    soak.flood()
    soak.remember_digests()
    if soak.wait_running():
        soak.mark("SIGTERM")
        soak.signal_daemon(signal.SIGTERM, "SIGTERM mid-job")
    soak.mark("full state")
    if mounted:
        soak.fill_state(5)
    else:
        soak.notes.append(f"full state: skipped, no tmpfs could be mounted ({why})")
    soak.mark("after the faults")


def report(soak, backlog_window, stats):
    pb, sc = soak.pb, soak.sc
    listed = {j.id: j for j in soak.jobs()}
    # A job retention deleted after it was seen finished is expired, not lost.
    jobs = dict(soak.finished)
    jobs.update(listed)
    expired = [job_id for job_id in soak.acked.values() if job_id in jobs and job_id not in listed]
    states = collections.Counter()
    reasons = collections.Counter()
    lost, twice, straddled = [], [], []
    per_user = collections.defaultdict(lambda: {"done": 0, "wait_s": [], "device_s": 0.0})
    lo, hi = backlog_window
    for rid, job_id in soak.acked.items():
        j = jobs.get(job_id)
        user = soak.user_of[rid]
        if j is None or sc.state_name(pb, j.state) not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            lost.append(job_id)
            continue
        state = sc.state_name(pb, j.state)
        states[state] += 1
        if state != "SUCCEEDED":
            reasons[(state, j.error[:110])] += 1
        terminal = ([] if job_id not in listed else
                    [e for e in soak.admin.watch(job_id, 0, 30)
                     if e.stage in ("done", "failed", "cancelled")])
        if len(terminal) > 1 or "changed" in soak.digests.get(job_id, {}):
            twice.append(job_id)
        u = per_user[user]
        u["done"] += state == "SUCCEEDED"
        if j.start_time_unix_ms:
            start, end = soak.real_ms(j.start_time_unix_ms), soak.real_ms(j.finish_time_unix_ms)
            u["wait_s"].append((start - soak.real_ms(j.create_time_unix_ms)) / 1000)
            u["device_s"] += max(0.0, min(end / 1000, hi) - max(start / 1000, lo))
            span = j.finish_time_unix_ms - j.start_time_unix_ms
            if abs(span) > 3_600_000:
                straddled.append(f"{user} {span / DAY_MS:+.0f} d")
    print(f"\nsubmitted {len(soak.user_of)} (acknowledged {len(soak.acked)}), "
          + ", ".join(f"{k.lower()} {v}" for k, v in sorted(states.items()))
          + f", lost {len(lost)}, run twice {len(twice)}"
          + (f"; {len(expired)} of them seen finished, then deleted by retention "
             f"(--retention-max-jobs {soak.a.retention_max_jobs})" if expired else ""))
    for (state, why), n in sorted(reasons.items()):
        print(f"  {n} x {state}: {why}")
    if soak.refusals:
        print("SubmitJob refused before a retry succeeded: "
              + ", ".join(f"{n} x {k}" for k, n in soak.refusals.most_common()))
    print(f"\n| user | succeeded | wait p50 s | wait max s | device s while all backlogged "
          f"({hi - lo:.1f} s) |\n|---|---|---|---|---|")
    shares = []
    for user in sorted(per_user):
        u = per_user[user]
        waits = u["wait_s"]
        shares.append(u["device_s"])
        print(f"| {user} | {u['done']} | {load_bench.fmt(load_bench.percentile(waits, 50))} | "
              f"{load_bench.fmt(max(waits) if waits else None)} | {u['device_s']:.1f} |")
    ratio = max(shares) / min(shares) if shares and min(shares) > 0 else None
    print(f"device time per user, max / min while all were backlogged: "
          f"{load_bench.fmt(ratio, 2)} (goal <= 1.25)")
    windows(soak, jobs, backlog_window, sorted(per_user))
    if soak.histograms:
        print("\nlibreyolod_job_duration_seconds{kind=\"infer\"} (GetMetrics): "
              + "; ".join(f"{when}: {n} jobs, mean {total / n if n else 0:.2f} s, "
                          f"{above} over 3600 s" for when, n, total, above in soak.histograms))
        print(f"job records whose wall-clock start and finish straddle a step (their spans read "
              f"+-1 day; the records are wall-clock times): {len(straddled)}"
              + (f" ({', '.join(sorted(straddled))})" if straddled else ""))
    print("seconds root's GetDaemonInfo went unanswered (Unix socket, every 0.5 s), by fault: "
          + (", ".join(f"{k} {v:.1f}" for k, v in soak.outages.items()) or "none"))
    print("\n| | daemon RSS MiB | daemon fds | workers | workers RSS MiB | workers fds | "
          "state dir KiB |\n|---|---|---|---|---|---|---|")
    for name, s in stats:
        print(f"| {name} | {s['daemon_rss_kib'] / 1024:.1f} | {s['daemon_fds']} | "
              f"{s['workers']} | {s['worker_rss_kib'] / 1024:.1f} | {s['worker_fds']} | "
              f"{s['state_kib']} |")
    print("\nfaults:\n" + "\n".join(f"  {n}" for n in soak.notes))
    return 1 if lost or twice or soak.flood_locked_out or soak.bad_durations else 0


def windows(soak, jobs, backlog_window, users):
    """Device time and starts per user between consecutive faults, within the backlog."""
    lo, hi = backlog_window
    edges = [(t / 1000, name) for t, name in soak.marks]
    if not edges:
        return
    print("\n| window (from the fault on, while all were backlogged) | s | "
          + " | ".join(f"{u} device s / starts" for u in users) + " | max / min |\n|---"
          + "|---" * (len(users) + 2) + "|")
    for i, (t0, name) in enumerate(edges):
        w0 = max(t0, lo)
        w1 = min(edges[i + 1][0] if i + 1 < len(edges) else hi, hi)
        if w1 - w0 < 5:
            continue
        device = {u: 0.0 for u in users}
        starts = {u: 0 for u in users}
        for j in jobs.values():
            if not j.start_time_unix_ms or j.labels.get("user") not in device:
                continue
            start = soak.real_ms(j.start_time_unix_ms) / 1000
            end = soak.real_ms(j.finish_time_unix_ms) / 1000 if j.finish_time_unix_ms else hi
            device[j.labels["user"]] += max(0.0, min(end, w1) - max(start, w0))
            starts[j.labels["user"]] += w0 <= start < w1
        shares = list(device.values())
        ratio = max(shares) / min(shares) if min(shares) > 0 else None
        print(f"| {name} | {w1 - w0:.0f} | "
              + " | ".join(f"{device[u]:.1f} / {starts[u]}" for u in users)
              + f" | {load_bench.fmt(ratio, 2)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--daemon", default=os.path.join(ROOT, "build/server/daemon/libreyolod"))
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--jobs-per-user", type=int, default=12, help="user0 submits twice as many")
    p.add_argument("--runs", type=int, default=40, help="measured iterations per infer job")
    p.add_argument("--flood-addresses", type=int, default=19,
                   help="loopback source addresses of the flood: 127.0.0.1 (the users') ...")
    p.add_argument("--flood-per-address", type=int, default=64)
    p.add_argument("--flood-seconds", type=float, default=20)
    p.add_argument("--clock-hold", type=float, default=40,
                   help="seconds the daemon's clock stays stepped +1 day, then back (0: no step)")
    p.add_argument("--state-mib", type=int, default=64)
    p.add_argument("--free-kib", type=int, default=8)
    p.add_argument("--protoc", default="protoc")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--no-faults", action="store_true", help="the same load without any fault")
    p.add_argument("--retention-max-jobs", type=int, default=0,
                   help="the daemon keeps at most N finished jobs (0: its default, 1000): the "
                        "daemon's RSS past the retention cap")
    p.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if os.geteuid() == 0 and not a.in_namespace and shutil.which("unshare"):
        # A private mount namespace, so the tmpfs of the state goes away with this process.
        r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            *sys.argv, "--in-namespace"])
        if r.returncode != 125:
            return r.returncode
    import grpc
    sc = load_bench.load_scheduler_client()
    tmp = tempfile.mkdtemp(prefix="lysoak-")
    try:
        os.makedirs(os.path.join(tmp, "pb"))
        sc.generate_modules(os.path.join(tmp, "pb"), os.path.join(ROOT, "proto"), a.protoc)
        pb, _ = sc.load_modules(os.path.join(tmp, "pb"))
        soak = Soak(a, sc, grpc, pb, tmp)
        walk()
        mounted, why = (can_mount_tmpfs(os.path.join(tmp, "statefs"), a.state_mib)
                        if a.in_namespace else (False, "not root"))
        os.makedirs(soak.state_dir, exist_ok=True)
        soak.start()
        first_stats = None
        users = [threading.Thread(target=soak.submit_all,
                                  args=(f"user{u}", a.jobs_per_user * (2 if u == 0 else 1)))
                 for u in range(a.users)]
        stop_watching = threading.Event()
        watcher = threading.Thread(target=soak.watch_finished, args=(stop_watching,), daemon=True)
        watcher.start()
        probe = threading.Thread(target=soak.probe_service, args=(stop_watching,), daemon=True)
        probe.start()
        for t in users:
            t.start()
        soak.wait_running(2)
        first_stats = soak.stats()
        if not a.no_faults:
            inject_faults(soak, mounted, why)
        for t in users:
            t.join()
        last_stats = soak.stats()
        # Every user stays backlogged until the first user's last job starts.
        deadline = time.monotonic() + 1800
        # (jobs ended, workers' RSS MiB, daemon's RSS MiB) of the last daemon: a leak from warm-up
        growth = []
        while time.monotonic() < deadline:
            jobs = soak.jobs()
            soak.remember_finished(jobs)
            ended = len(soak.finished)
            st = soak.stats()
            growth.append((ended, st["worker_rss_kib"] / 1024, st["daemon_rss_kib"] / 1024))
            if all(j.id in soak.finished for j in jobs) and ended >= len(soak.acked):
                break
            time.sleep(1)
        if a.retention_max_jobs:
            # Retention sweeps every minute: the daemon after one sweep past the end.
            time.sleep(65)
            st = soak.stats()
            growth.append((len(soak.finished), st["worker_rss_kib"] / 1024,
                           st["daemon_rss_kib"] / 1024))
        stop_watching.set()
        watcher.join()
        probe.join()
        if soak.histograms:
            soak.record_histogram("at the end (the last daemon's jobs recovered from the store "
                                  "included)")
        soak.remember_digests()
        # All users are backlogged from the moment the last one has a job queued until the
        # first one's last job starts: over every job seen, retention's deleted ones included
        # (the window of the 20 it kept was a few jobs wide).
        seen = dict(soak.finished)
        seen.update({j.id: j for j in soak.jobs()})
        first_create, last_start = {}, collections.defaultdict(int)
        for j in seen.values():
            user = j.labels.get("user", "")
            t = soak.real_ms(j.create_time_unix_ms) / 1000
            first_create[user] = min(first_create.get(user, t), t)
            last_start[user] = max(last_start[user], soak.real_ms(j.start_time_unix_ms) / 1000)
        backlog = (max(first_create.values()), min(last_start.values()))
        end_stats = soak.stats()
        marks = sorted({g[0] for g in growth})
        picks = [m for i, m in enumerate(marks) if i % max(1, len(marks) // 6) == 0] + marks[-1:]
        soak.notes.append("workers' RSS by jobs ended (last daemon): " + ", ".join(
            f"{m}: {max(g[1] for g in growth if g[0] == m):.0f} MiB" for m in sorted(set(picks))))
        soak.notes.append("daemon's RSS by jobs ended (last daemon; the last after a retention "
                          "sweep when --retention-max-jobs): " + ", ".join(
            f"{m}: {[g[2] for g in growth if g[0] == m][-1]:.1f} MiB" for m in sorted(set(picks))))
        rc = report(soak, backlog, [("first daemon, 2 jobs running", first_stats),
                                    ("last daemon, users done submitting", last_stats),
                                    ("last daemon, all jobs ended", end_stats)])
        soak.daemon.send_signal(signal.SIGTERM)
        soak.daemon.wait(timeout=120)
        if mounted:
            subprocess.run(["umount", "-l", os.path.join(tmp, "statefs")])
        return rc
    finally:
        if a.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
