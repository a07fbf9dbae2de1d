#!/usr/bin/env python3
"""The hostile walk-through of issue 9 against a real libreyolod, one line per check.

Everything runs on this host: daemons on Unix sockets and 127.0.0.1, in a temp dir, bounded in
time (each daemon start and job has a timeout). Each check prints

    PASS  <item> <what was tried>: <what came back>
    FAIL  <item> <what was tried>: <what came back>
    SKIP  <item> <what was tried>: <why it could not run here>

and the script exits 1 when any check failed. Run by ctest (daemon_hostile_walkthrough) or by
hand from the source root:

    LIBREYOLOD=build/server/daemon/libreyolod /usr/bin/python3 tests/daemon/hostile_walkthrough.py

It needs /usr/bin/python3 with Debian's python3-grpcio and python3-protobuf, and protoc (the
same as deploy/python's scheduler client, whose module generation it reuses).
"""

import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "deploy", "python"))
import libreyolo_scheduler_client as sched  # noqa: E402  (module generation, paths)

import grpc  # noqa: E402

SERVICE = "/libreyolo.profiler.v1.ProfilerService/"
LIBREYOLOD = os.environ.get("LIBREYOLOD", os.path.join(ROOT, "build/server/daemon/libreyolod"))
START_TIMEOUT = 90
JOB_TIMEOUT = 240

results = []


def report(status, item, what, detail):
    detail = " ".join(str(detail).split())
    if len(detail) > 200:
        detail = detail[:200] + "..."
    line = f"{status:<5} {item:<3} {what}: {detail}"
    results.append(status)
    print(line, flush=True)


def check(item, what, ok, detail):
    report("PASS" if ok else "FAIL", item, what, detail)


class Daemon:
    """One libreyolod in `root` (its own state/store/model dirs), logging to a file."""

    def __init__(self, root, name, extra=(), listen=None, dirs_from=None):
        self.root = root
        base = dirs_from or os.path.join(root, name)
        self.base = base
        for d in ("models", "datasets", "images"):
            os.makedirs(os.path.join(base, d), exist_ok=True)
        self.socket = os.path.join(root, name + ".sock")
        self.log = os.path.join(root, name + ".log")
        self.args = [LIBREYOLOD, "--state-dir", os.path.join(base, "state"),
                     "--store-dir", os.path.join(base, "store"),
                     "--models-dir", os.path.join(base, "models"),
                     "--datasets-dir", os.path.join(base, "datasets"),
                     "--images-dir", os.path.join(base, "images"),
                     "--device", "cpu", "--threads", "2"]
        for address in (listen or ["unix:" + self.socket]):
            self.args += ["--listen", address]
        self.args += list(extra)
        self.proc = None

    def run_to_exit(self, timeout=60):
        """Runs it to its exit (a start that must fail): (exit code, stderr)."""
        r = subprocess.run(self.args, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stderr

    def start(self):
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            if "libreyolod: serving on" in self.text():
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def tcp_port(self):
        import re
        m = re.search(r"\(port (\d+)\)", self.text())
        return int(m.group(1)) if m else None

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class Rpc:
    def __init__(self, pb, target, token=None):
        self.pb = pb
        self.channel = grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", 64 << 20),
                             ("grpc.max_send_message_length", 64 << 20)])
        self.metadata = [("authorization", f"Bearer {token}")] if token else []

    def call(self, method, request, response_class, timeout=30):
        """(code name, details, response)."""
        stub = self.channel.unary_unary(SERVICE + method,
                                        request_serializer=type(request).SerializeToString,
                                        response_deserializer=response_class.FromString)
        try:
            return "OK", "", stub(request, metadata=self.metadata, timeout=timeout)
        except grpc.RpcError as e:
            return e.code().name, e.details() or "", None

    def raw(self, method, payload, timeout=30):
        stub = self.channel.unary_unary(SERVICE + method, request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
        try:
            stub(payload, metadata=self.metadata, timeout=timeout)
            return "OK", ""
        except grpc.RpcError as e:
            return e.code().name, e.details() or ""

    def submit(self, request):
        return self.call("SubmitJob", request, self.pb.Job)

    def submit_expecting_refusal(self, request):
        """Submits a request that should be refused; one accepted by mistake is cancelled, so
        that it does not hold the device for the checks after it. (code, details)."""
        code, details, job = self.submit(request)
        if code == "OK":
            self.call("CancelJob", self.pb.CancelJobRequest(job_id=job.id), self.pb.Job)
        return code, details

    def wait_state(self, job_id, states, timeout=JOB_TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, _, job = self.call("GetJob", self.pb.GetJobRequest(job_id=job_id), self.pb.Job)
            if code == "OK" and job.state in states:
                return job
            time.sleep(0.2)
        return None


def tiny_infer(pb, runs=2):
    r = pb.SubmitJobRequest()
    s = r.infer
    s.model.device = "cpu"
    s.model.threads = 2
    s.imgsz = 64
    s.warmup = 1
    s.runs = runs
    s.profiler.record_shapes = False
    s.profiler.profile_memory = False
    s.profiler.with_flops = False
    return r


def terminal(pb):
    return (pb.JOB_STATE_SUCCEEDED, pb.JOB_STATE_FAILED, pb.JOB_STATE_CANCELLED)


def families(text):
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def main():
    tmp = tempfile.mkdtemp(prefix="lyhostile.")
    gen = os.path.join(tmp, "gen")
    os.makedirs(gen)
    sched.generate_modules(gen, os.path.join(ROOT, "proto"), "protoc")
    pb, _ = sched.load_modules(gen)
    daemons = []

    def daemon(*a, **k):
        d = Daemon(tmp, *a, **k)
        daemons.append(d)
        return d

    try:
        tokens = os.path.join(tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("t0k3n-0123456789abcdef alice\n")

        # ---- 1. start-up errors: a message and exit 2, never a signal ----------------------
        for mode in (0o644, 0o640):
            os.chmod(tokens, mode)
            d = daemon("cfg", extra=["--tokens-file", tokens])
            code, err = d.run_to_exit()
            check("1", f"tokens file mode {mode:o}", code == 2 and "chmod 600" in err,
                  f"exit {code}: {err.strip()}")
        os.chmod(tokens, 0o600)
        with open(os.path.join(tmp, "regular"), "w") as f:
            f.write("x")
        d = daemon("cfg2", extra=["--state-dir", os.path.join(tmp, "regular", "state")])
        code, err = d.run_to_exit()
        check("1", "state dir under a regular file", code == 2 and "error:" in err,
              f"exit {code}: {err.strip()}")
        d = daemon("cfg3", extra=["--tokens-file", os.path.join(tmp, "missing")])
        code, err = d.run_to_exit()
        check("1", "missing tokens file", code == 2 and "not found" in err,
              f"exit {code}: {err.strip()}")

        # The daemon the API checks use: Unix socket plus loopback TCP with a token. A short
        # drain: item 12's SIGTERM cancels its long job after 2 s instead of letting it run out
        # (what item 12 checks is the queued job's stream and the exit code).
        main_d = daemon("main", extra=[
            "--listen", "tcp:127.0.0.1:0", "--insecure-tcp", "--tokens-file", tokens,
            "--max-imgsz", "320", "--metrics-textfile", os.path.join(tmp, "metrics.prom"),
            "--drain-timeout", "2"])
        if not main_d.start():
            report("FAIL", "-", "start the daemon under test", main_d.text()[-500:])
            return 1
        unix = Rpc(pb, "unix:" + main_d.socket)
        port = main_d.tcp_port()

        # ---- 2. a port in use ------------------------------------------------------------
        d = daemon("rival", extra=["--listen", f"tcp:127.0.0.1:{port}", "--insecure-tcp",
                                   "--tokens-file", tokens])
        code, err = d.run_to_exit()
        check("2", f"second daemon on TCP port {port}", code == 3 and "already in use" in err,
              f"exit {code}: {err.strip()}")

        # ---- 3. a second daemon on the same state dir ------------------------------------
        d = daemon("twin", dirs_from=main_d.base)
        code, err = d.run_to_exit()
        check("3", "second daemon on the same state dir",
              code == 3 and f"pid {main_d.proc.pid}" in err, f"exit {code}: {err.strip()}")

        # ---- 6. its name after the OMP re-exec --------------------------------------------
        with open(f"/proc/{main_d.proc.pid}/comm") as f:
            comm = f.read().strip()
        check("6", "process name (pgrep -x libreyolod)", comm == "libreyolod", comm)

        # ---- 5. every limit has a flag (--max-imgsz 320 in force) -------------------------
        r = tiny_infer(pb)
        r.infer.imgsz = 640
        code, details = unix.submit_expecting_refusal(r)
        check("5", "--max-imgsz 320, imgsz 640", code == "RESOURCE_EXHAUSTED" and "320" in details,
              f"{code}: {details}")

        # ---- 7. overflowing counts --------------------------------------------------------
        for field, value in (("warmup", 2**63 - 1), ("runs", 2**63 - 1)):
            r = tiny_infer(pb)
            setattr(r.infer, field, value)
            code, details = unix.submit_expecting_refusal(r)
            check("7", f"infer {field} = 2^63-1", code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"),
                  f"{code}: {details}")
        r = pb.SubmitJobRequest()
        r.run.model.device = "cpu"
        r.run.data = "synthetic:8"
        r.run.repeat = 2
        r.run.steps = 2**62
        code, details = unix.submit_expecting_refusal(r)
        check("7", "run repeat 2, steps 2^62", code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"),
              f"{code}: {details}")

        # ---- 8. huge strings are capped and not echoed ------------------------------------
        r = tiny_infer(pb)
        r.infer.model.weights = "w" * (10 << 20)
        code, details = unix.submit_expecting_refusal(r)
        check("8", "10 MB weights string", code == "INVALID_ARGUMENT" and len(details) < 1024,
              f"{code}: {len(details)} bytes of message")
        code, details, _ = unix.call("GetJob", pb.GetJobRequest(job_id="j" * (1 << 20)), pb.Job)
        check("8", "GetJob with a 1 MB id", code == "INVALID_ARGUMENT" and len(details) < 1024,
              f"{code}: {len(details)} bytes of message")

        # ---- 9. invalid values name their field -------------------------------------------
        r = tiny_infer(pb)
        r.infer.conf = math.nan
        code, details = unix.submit_expecting_refusal(r)
        check("9", "conf NaN", code == "INVALID_ARGUMENT" and "conf" in details,
              f"{code}: {details}")
        for data in ("synthetic:0", "synthetic:-5", "synthetic:abc", "synthetic:99999999999"):
            r = pb.SubmitJobRequest()
            r.run.model.device = "cpu"
            r.run.data = data
            r.run.steps = 2
            code, details = unix.submit_expecting_refusal(r)
            check("9", f"run data {data}", code == "INVALID_ARGUMENT" and "data" in details,
                  f"{code}: {details}")
        req = pb.KernelsRequest(top=-5)
        req.profile.job_id = "20261130-0000000000000000"
        code, details, _ = unix.call("Kernels", req, pb.ReaderResponse)
        check("9", "Kernels top -5", code == "INVALID_ARGUMENT" and "top" in details,
              f"{code}: {details}")
        code, details, _ = unix.call("GetJob", pb.GetJobRequest(job_id=""), pb.Job)
        check("9", "GetJob with an empty id", code == "INVALID_ARGUMENT" and "job_id" in details,
              f"{code}: {details}")
        code, details = unix.raw("SubmitJob", b"\xff\xff\xff\xff\x0f")
        check("9", "unparsable SubmitJob bytes", code == "INVALID_ARGUMENT" and details != "",
              f"{code}: {details}")

        # ---- 10. labels --------------------------------------------------------------------
        r = tiny_infer(pb)
        r.labels["note"] = "\x1b[31mred\r\nforged line"
        code, details = unix.submit_expecting_refusal(r)
        check("10", "label value with ESC, CR, LF", code == "INVALID_ARGUMENT" and "label" in details,
              f"{code}: {details!r}")

        # ---- 11. no daemon paths in remote errors ------------------------------------------
        tcp = Rpc(pb, f"127.0.0.1:{port}", token="t0k3n-0123456789abcdef")
        r = tiny_infer(pb)
        r.infer.model.weights = "missing-weights.pt"
        code, details = tcp.submit_expecting_refusal(r)
        check("11", "missing weights over TCP", code == "NOT_FOUND" and tmp not in details,
              f"{code}: {details}")

        # ---- 14. the metrics textfile has what GetMetrics has -------------------------------
        # The file is rewritten every 15 s: compare GetMetrics with the first version written
        # after it (job families appear once jobs exist).
        prom = os.path.join(tmp, "metrics.prom")
        asked = time.time()
        code, _, metrics = unix.call("GetMetrics", pb.GetMetricsRequest(), pb.GetMetricsResponse)
        deadline = time.time() + 40
        while time.time() < deadline and not (
                os.path.exists(prom) and os.path.getmtime(prom) > asked + 0.5):
            time.sleep(0.2)
        text = open(prom).read() if os.path.exists(prom) else ""
        same = code == "OK" and families(text) == families(metrics.text)
        check("14", "metrics textfile vs GetMetrics",
              same and "libreyolod_resident_memory_bytes" in families(text),
              f"{len(families(text))} families in the file, "
              f"{len(families(metrics.text)) if metrics else 0} from the RPC")

        # ---- 4. SIGHUP reloads the tokens file, keeps the job ------------------------------
        code, _, job = unix.submit(tiny_infer(pb, runs=30))
        with open(tokens, "w") as f:
            f.write("n3w-t0k3n-0123456789abcdef alice\n")
        os.kill(main_d.proc.pid, signal.SIGHUP)
        deadline = time.time() + 20
        while "SIGHUP: reloaded" not in main_d.text() and time.time() < deadline:
            time.sleep(0.1)
        new_ok = Rpc(pb, f"127.0.0.1:{port}", token="n3w-t0k3n-0123456789abcdef").call(
            "ListJobs", pb.ListJobsRequest(), pb.ListJobsResponse)[0]
        old = Rpc(pb, f"127.0.0.1:{port}", token="t0k3n-0123456789abcdef").call(
            "ListJobs", pb.ListJobsRequest(), pb.ListJobsResponse)[0]
        done = unix.wait_state(job.id, terminal(pb)) if code == "OK" else None
        check("4", "SIGHUP with a new tokens file during a job",
              main_d.proc.poll() is None and new_ok == "OK" and old == "UNAUTHENTICATED" and
              done is not None and done.state == pb.JOB_STATE_SUCCEEDED,
              f"alive={main_d.proc.poll() is None} new token {new_ok}, old token {old}, job "
              f"{pb.JobState.Name(done.state) if done else 'not finished'}")

        # ---- 12. SIGTERM: a queued job's stream ends UNAVAILABLE ---------------------------
        code, details, long_job = unix.submit(tiny_infer(pb, runs=400))
        code2, details2, queued = unix.submit(tiny_infer(pb))
        if code != "OK" or code2 != "OK":
            report("FAIL", "12", "submit two jobs before SIGTERM", f"{code} {details} {code2} {details2}")
            return 1
        unix.wait_state(long_job.id, (pb.JOB_STATE_RUNNING,))
        stream_end = {}

        def watch_queued():
            call = unix.channel.unary_stream(
                SERVICE + "WatchJob", request_serializer=pb.WatchJobRequest.SerializeToString,
                response_deserializer=pb.JobEvent.FromString)
            try:
                for _ in call(pb.WatchJobRequest(job_id=queued.id), timeout=120):
                    pass
                stream_end["code"] = "OK"
            except grpc.RpcError as e:
                stream_end["code"] = e.code().name
        watcher = threading.Thread(target=watch_queued)
        watcher.start()
        time.sleep(1)
        exit_code = main_d.stop(signal.SIGTERM, timeout=120)
        watcher.join(130)
        check("12", "SIGTERM while a client watches a queued job",
              exit_code == 0 and stream_end.get("code") == "UNAVAILABLE",
              f"daemon exit {exit_code}, stream ended {stream_end.get('code')}")

        # ---- 13. a full state filesystem ---------------------------------------------------
        if shutil.which("unshare") is None:
            report("SKIP", "13", "full state filesystem", "no unshare(1) here")
        else:
            state = os.path.join(tmp, "fullfs")
            os.makedirs(state)
            d = daemon("full")
            script = (f"mount -t tmpfs -o size=1m,mode=0700 tmpfs {state} || exit 99; "
                      f"exec {' '.join(d.args)} --state-dir {state}")
            d.args = ["unshare", "-m", "--propagation", "private", "sh", "-c", script]
            if not d.start():
                if d.proc.poll() == 99 or "mount" in d.text():
                    report("SKIP", "13", "full state filesystem",
                           "cannot mount a tmpfs here (DaemonFaultTest/JobManagerTest cover it)")
                else:
                    report("FAIL", "13", "full state filesystem", d.text()[-300:])
            else:
                # Fill the tmpfs from inside the daemon's mount namespace.
                ns = f"/proc/{d.proc.pid}/root{state}"
                try:
                    with open(os.path.join(ns, "filler"), "wb") as f:
                        while True:
                            f.write(b"f" * 65536)
                            f.flush()
                except OSError:
                    pass
                rpc = Rpc(pb, "unix:" + d.socket)
                code, details, _ = rpc.submit(tiny_infer(pb))
                check("13", "submit with the state filesystem full",
                      code == "RESOURCE_EXHAUSTED" and "full" in details, f"{code}: {details}")
                d.stop()
        return 1 if "FAIL" in results else 0
    finally:
        for d in daemons:
            d.stop(signal.SIGKILL, timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"{results.count('PASS')} passed, {results.count('FAIL')} failed, "
              f"{results.count('SKIP')} skipped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
