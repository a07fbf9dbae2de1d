#!/usr/bin/python3
"""A scheduler-style client of libreyolod, in plain Python (Debian's python3-grpcio and
python3-protobuf; no grpc_tools).

It checks grpc.health.v1.Health/Check, submits a small inference job, watches it to a
terminal state (resuming by sequence number if the stream drops), and prints the job's
summary (--health-only: the health check alone, which needs no token). The message
classes are generated at run time with the system protoc:

    protoc --python_out=<tmp> -I proto proto/libreyolo/profiler/v1/profiler.proto
    protoc --python_out=<tmp> -I deploy/python deploy/python/health.proto

or once, ahead of time (hosts without protoc):

    deploy/python/libreyolo_scheduler_client.py --generate-only /opt/libreyolo/pb
    deploy/python/libreyolo_scheduler_client.py --generated-dir /opt/libreyolo/pb --target ...

Examples:

    libreyolo_scheduler_client.py --target unix:/run/libreyolod/libreyolod.sock
    libreyolo_scheduler_client.py --target gpu-box:50051 --tls-ca ca.crt \\
        --token-file ~/.libreyolo/token --device 0 --json

Exit status: 0 the job succeeded and its summary was read; 1 any failure (the message on
stderr says which step); 2 a usage error.
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILER_PROTO = "libreyolo/profiler/v1/profiler.proto"
HEALTH_PROTO = "health.proto"
SERVICE = "/libreyolo.profiler.v1.ProfilerService/"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"


class Failure(Exception):
    """A failed step; main() prints it and exits 1."""


# ---- message classes ----------------------------------------------------------------------


def _load_module(name, path):
    if not os.path.isfile(path):
        raise Failure(f"generated module {path} is missing")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # a protobuf runtime too old for the generated code, ...
        raise Failure(f"cannot import {path}: {e}") from e
    return module


def generate_modules(out_dir, proto_root, protoc):
    """Runs protoc for profiler.proto and health.proto into out_dir."""
    protoc_path = shutil.which(protoc)
    if protoc_path is None:
        raise Failure(f"protoc not found ({protoc!r}); install protobuf-compiler, or generate "
                      "the modules elsewhere with --generate-only and pass --generated-dir")
    jobs = [(proto_root, PROFILER_PROTO), (HERE, HEALTH_PROTO)]
    for include, proto in jobs:
        if not os.path.isfile(os.path.join(include, proto)):
            raise Failure(f"{os.path.join(include, proto)} not found (use --proto-root)")
        cmd = [protoc_path, f"--python_out={out_dir}", "-I", include,
               os.path.join(include, proto)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise Failure(f"{' '.join(cmd)} failed: {result.stderr.strip()}")


def load_modules(generated_dir):
    """Imports the generated modules by file path (no package named `libreyolo` or `grpc` is
    shadowed or needed)."""
    profiler_pb2 = _load_module(
        "libreyolo_profiler_v1_pb2",
        os.path.join(generated_dir, PROFILER_PROTO.replace(".proto", "_pb2.py")))
    health_pb2 = _load_module(
        "grpc_health_v1_pb2",
        os.path.join(generated_dir, HEALTH_PROTO.replace(".proto", "_pb2.py")))
    return profiler_pb2, health_pb2


# ---- the connection -------------------------------------------------------------------------


def _read(path, what):
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read()
    except OSError as e:
        raise Failure(f"cannot read {what} {path}: {e.strerror}") from e


def read_token(args):
    if args.token_file:
        for line in _read(args.token_file, "token file").decode().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                return line
        raise Failure(f"token file {args.token_file} holds no token")
    return os.environ.get("LIBREYOLO_TOKEN", "").strip() or None


def make_channel(grpc, args):
    target = args.target
    options = [("grpc.max_receive_message_length", 64 << 20)]
    if target.startswith("unix:"):
        return grpc.insecure_channel(target, options=options), True
    if target.startswith("tcp:"):
        target = target[len("tcp:"):]
    if args.insecure:
        return grpc.insecure_channel(target, options=options), False
    if bool(args.tls_cert) != bool(args.tls_key):
        raise Failure("--tls-cert and --tls-key go together")
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read(args.tls_ca, "TLS CA") if args.tls_ca else None,
        private_key=_read(args.tls_key, "TLS key") if args.tls_key else None,
        certificate_chain=_read(args.tls_cert, "TLS certificate") if args.tls_cert else None)
    if args.tls_server_name:
        options.append(("grpc.ssl_target_name_override", args.tls_server_name))
    return grpc.secure_channel(target, creds, options=options), False


class Client:
    def __init__(self, grpc, channel, pb, token, rpc_timeout):
        self.grpc, self.channel, self.pb = grpc, channel, pb
        self.metadata = [("authorization", f"Bearer {token}")] if token else []
        self.rpc_timeout = rpc_timeout

    def unary(self, method, request, response_class, full_name=None):
        call = self.channel.unary_unary(
            full_name or SERVICE + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=response_class.FromString)
        try:
            return call(request, metadata=self.metadata, timeout=self.rpc_timeout)
        except self.grpc.RpcError as e:
            raise Failure(f"{method}: {e.code().name}: {e.details()}") from e

    def watch(self, job_id, from_sequence, timeout):
        call = self.channel.unary_stream(
            SERVICE + "WatchJob",
            request_serializer=self.pb.WatchJobRequest.SerializeToString,
            response_deserializer=self.pb.JobEvent.FromString)
        request = self.pb.WatchJobRequest(job_id=job_id, from_sequence=from_sequence)
        return call(request, metadata=self.metadata, timeout=timeout)


# ---- the steps ----------------------------------------------------------------------------


def check_health(client, health_pb2):
    response = client.unary("Health/Check", health_pb2.HealthCheckRequest(service=""),
                            health_pb2.HealthCheckResponse, full_name=HEALTH_CHECK)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    if response.status != health_pb2.HealthCheckResponse.SERVING:
        raise Failure(f"health check: the daemon reports {status}, not SERVING")
    return status


def submit(client, args):
    pb = client.pb
    infer = pb.InferSpec(
        model=pb.ModelOptions(weights=args.weights, size=args.size, device=args.device,
                              threads=args.threads),
        batch=args.batch, imgsz=args.imgsz, warmup=args.warmup, runs=args.runs)
    request = pb.SubmitJobRequest(infer=infer, labels=args.labels,
                                  priority=args.priority,
                                  request_id=args.request_id or uuid.uuid4().hex)
    # The same request_id on a retry returns the same job (SubmitJob is idempotent by key).
    for attempt in range(3):
        try:
            return client.unary("SubmitJob", request, pb.Job)
        except Failure as e:
            cause = e.__cause__
            if attempt == 2 or cause is None or cause.code() != client.grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(1 + attempt)


def state_name(pb, state):
    return pb.JobState.Name(state).replace("JOB_STATE_", "")


def format_event(pb, ev):
    parts = [f"[{ev.sequence}]", state_name(pb, ev.state), ev.stage]
    if ev.total:
        parts.append(f"{ev.done}/{ev.total}")
    if ev.stage == "queued" and ev.queue_position:
        parts.append(f"position {ev.queue_position}")
    if ev.message:
        parts.append(f"- {ev.message}")
    return " ".join(p for p in parts if p)


def watch(client, job_id, timeout, out, events):
    """Streams events until the job's stream ends; reconnects from the next sequence number when
    the daemon goes away briefly (a restart). Returns when the stream completes normally."""
    grpc, pb = client.grpc, client.pb
    deadline = time.monotonic() + timeout
    next_sequence, reconnects = 1, 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            for ev in client.watch(job_id, next_sequence, remaining):
                if ev.sequence == next_sequence - 1 and next_sequence > 1:
                    # Shown, not stored (a queue position change, progress past the log's
                    # bound): it repeats the latest stored event's number (rpc.md, Resuming).
                    events.append(ev)
                    print(format_event(pb, ev), file=out, flush=True)
                    continue
                if ev.sequence < next_sequence:
                    continue  # never expected; tolerated
                if ev.sequence > next_sequence:
                    print(f"warning: events {next_sequence}..{ev.sequence - 1} missing",
                          file=sys.stderr)
                next_sequence = ev.sequence + 1
                events.append(ev)
                print(format_event(pb, ev), file=out, flush=True)
            return
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TimeoutError from e
            if e.code() == grpc.StatusCode.UNAVAILABLE and reconnects < 10:
                reconnects += 1
                print(f"watch: {e.details()}; resuming from event {next_sequence}",
                      file=sys.stderr)
                time.sleep(min(2 * reconnects, 10))
                continue
            raise Failure(f"WatchJob: {e.code().name}: {e.details()}") from e


def run(args):
    import grpc  # python3-grpcio
    from google.protobuf import json_format

    with tempfile.TemporaryDirectory(prefix="libreyolo-pb-") as tmp:
        generated = args.generated_dir
        if not generated:
            generate_modules(tmp, args.proto_root, args.protoc)
            generated = tmp
        pb, health_pb2 = load_modules(generated)

    token = read_token(args)
    channel, unix = make_channel(grpc, args)
    if not unix and not token and not args.health_only:
        raise Failure("a TCP target needs a token: --token-file FILE or LIBREYOLO_TOKEN")
    out = sys.stderr if args.json else sys.stdout
    with channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=args.connect_timeout)
        except grpc.FutureTimeoutError:
            raise Failure(f"cannot connect to {args.target} within {args.connect_timeout:g}s "
                          "(is libreyolod running and listening there? TLS/--insecure "
                          "matching the daemon?)") from None
        client = Client(grpc, channel, pb, token, args.rpc_timeout)

        health = check_health(client, health_pb2)
        print(f"health: {health}", file=out)
        if args.health_only:
            if args.json:
                print(json.dumps({"health": health}))
            return

        job = submit(client, args)
        print(f"submitted job {job.id} ({state_name(pb, job.state)}, queue position "
              f"{job.queue_position}, device {job.device or '?'})", file=out, flush=True)

        events = []
        try:
            watch(client, job.id, args.timeout, out, events)
        except TimeoutError:
            try:
                client.unary("CancelJob", pb.CancelJobRequest(job_id=job.id), pb.Job)
                note = "cancelled it"
            except Failure as e:
                note = f"and could not cancel it: {e}"
            raise Failure(f"job {job.id} did not finish within {args.timeout:g}s; {note}") from None

        job = client.unary("GetJob", pb.GetJobRequest(job_id=job.id), pb.Job)
        state = state_name(pb, job.state)
        if job.state != pb.JOB_STATE_SUCCEEDED:
            raise Failure(f"job {job.id} ended {state} (exit code {job.exit_code}): "
                          f"{job.error or 'no reason given'}")
        print(f"job {job.id}: {state} in "
              f"{(job.finish_time_unix_ms - job.start_time_unix_ms) / 1000:.1f}s", file=out)

        summary = client.unary(
            "Summary", pb.SummaryRequest(profile=pb.ProfileRef(job_id=job.id)), pb.ReaderResponse)

    if args.json:
        try:
            summary_json = json.loads(summary.json)
        except ValueError as e:
            raise Failure(f"Summary returned JSON that does not parse: {e}") from e
        to_dict = lambda m: json_format.MessageToDict(m, preserving_proto_field_name=True)
        json.dump({"health": health, "job": to_dict(job),
                   "events": [to_dict(ev) for ev in events], "summary": summary_json},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary.text if summary.text.endswith("\n") else summary.text + "\n")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Submit a small infer job to libreyolod, watch it, print its summary.",
        epilog="Exit status: 0 success, 1 failure (message on stderr), 2 usage error.")
    conn = p.add_argument_group("connection")
    conn.add_argument("--target", default=os.environ.get("LIBREYOLO_REMOTE"),
                      help="unix:/path or host:port (default: $LIBREYOLO_REMOTE)")
    conn.add_argument("--token-file", help="file holding the bearer token "
                      "(default: $LIBREYOLO_TOKEN, the token itself)")
    conn.add_argument("--tls-ca", default=os.environ.get("LIBREYOLO_TLS_CA"),
                      help="PEM CA that signed the daemon's certificate (default: "
                      "$LIBREYOLO_TLS_CA, else the system roots)")
    conn.add_argument("--tls-cert", help="PEM client certificate (daemons that ask for one)")
    conn.add_argument("--tls-key", help="PEM key of --tls-cert")
    conn.add_argument("--tls-server-name", help="expected name in the daemon's certificate, "
                      "when it differs from the host in --target")
    conn.add_argument("--insecure", action="store_true",
                      help="plaintext TCP (a daemon with insecure_tcp; trusted networks only)")
    conn.add_argument("--connect-timeout", type=float, default=10, metavar="S")
    conn.add_argument("--rpc-timeout", type=float, default=30, metavar="S",
                      help="deadline of each unary call")
    conn.add_argument("--timeout", type=float, default=600, metavar="S",
                      help="how long to wait for the job; it is cancelled after that")

    job = p.add_argument_group("the infer job")
    job.add_argument("--device", default="cpu", help="cpu or a CUDA index (default: cpu)")
    job.add_argument("--weights", default="", help="weights name in the daemon's models "
                     "directory (default: the daemon's, LibreYOLO9t.pt)")
    job.add_argument("--size", default="", help="t, s, m or c (default: t)")
    job.add_argument("--imgsz", type=int, default=320)
    job.add_argument("--batch", type=int, default=1)
    job.add_argument("--warmup", type=int, default=2)
    job.add_argument("--runs", type=int, default=5)
    job.add_argument("--threads", type=int, default=0, help="CPU threads; 0 = all cores")
    job.add_argument("--priority", type=int, default=0, help="-10..10")
    job.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    job.add_argument("--request-id", help="idempotency key (default: a fresh UUID)")

    gen = p.add_argument_group("message classes")
    gen.add_argument("--proto-root", default=os.path.join(REPO_ROOT, "proto"),
                     help="folder holding libreyolo/profiler/v1/profiler.proto")
    gen.add_argument("--protoc", default="protoc")
    gen.add_argument("--generated-dir", help="use modules generated before (--generate-only)")
    gen.add_argument("--generate-only", metavar="DIR",
                     help="generate the modules into DIR, check they import, and exit")

    p.add_argument("--health-only", action="store_true",
                   help="only check grpc.health.v1 (exit 0 when SERVING); submit nothing")
    p.add_argument("--json", action="store_true", help="print one JSON document (health, job, "
                   "events, summary) on stdout; progress goes to stderr")
    args = p.parse_args(argv)
    if not args.generate_only and not args.target:
        p.error("--target is required (or set LIBREYOLO_REMOTE)")
    args.labels = {}
    for pair in args.label:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            p.error(f"--label {pair!r}: expected KEY=VALUE")
        args.labels[key] = value
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.generate_only:
            os.makedirs(args.generate_only, exist_ok=True)
            generate_modules(args.generate_only, args.proto_root, args.protoc)
            load_modules(args.generate_only)
            print(f"generated {PROFILER_PROTO} and {HEALTH_PROTO} modules into "
                  f"{args.generate_only}")
            return 0
        run(args)
        return 0
    except Failure as e:
        print(f"libreyolo_scheduler_client: error: {e}", file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"libreyolo_scheduler_client: error: {e} (install python3-grpcio and "
              "python3-protobuf)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("libreyolo_scheduler_client: interrupted", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
