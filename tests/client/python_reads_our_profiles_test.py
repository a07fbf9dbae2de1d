"""The Python LibreYOLO's own readers on the profile.json files we write.

Issue 22: the Python tool's `profile phases` and `profile ops` crashed on our profile.json
(`ValueError: Unknown format code 'd'`: counts written as 227.0). Writes our profile.json for
every fixture trace (GPU traces from CUDA and ROCm, a CPU-only one) with write_profiles, then
calls the Python LibreYOLO 1.6.0's profile commands (its typer functions, in this one process)
on each, and checks that

  - phases, kernels, ops, get (every metric), what-if and, on GPU profiles, summary and compare
    run without an exception;
  - every count they print with :d is a JSON integer in our file (the rows' count_per_step, a
    phase's kernels_per_step and ops_per_step); the top-level kernels_per_step,
    launches_per_step and cuda_mallocs_per_step are means (issue 40: 0.5 for one kernel in two
    steps), which its readers print without a format spec;
  - the numbers they print are ours: its `get` prints the value our file holds.

A CPU job's GPU metrics are null in our file (docs/metrics.md: never 0 in one view and n/a in
another); the Python tool's summary and compare multiply gpu_util without a None check, so on a
CPU profile they raise TypeError: that is checked too, so a change on either side is seen.

usage: python_reads_our_profiles_test.py WRITE_PROFILES TRACE...
(run with the project environment's python, which holds the Python LibreYOLO).
"""
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")
from libreyolo.cli.commands import profile as py  # noqa: E402

WRITER, TRACES = sys.argv[1], sys.argv[2:]
from python_tool_calls import fail, failures, run  # noqa: E402


def check_counts_are_integers(name, doc):
    def ints(rows, keys, where):
        for r in rows or []:
            for k in keys:
                if k in r and r[k] is not None and not isinstance(r[k], int):
                    fail(f"{name}: {where}.{k} = {r[k]!r} is not an integer")
    ints(doc.get("kernels"), ["count_per_step"], "kernels")
    ints(doc.get("top_kernels"), ["count_per_step"], "top_kernels")
    ints(doc.get("ops"), ["count_per_step"], "ops")
    ints(doc.get("phases"), ["kernels_per_step", "ops_per_step", "unique_kernels"], "phases")
    for rows in (doc.get("ops_by_phase") or {}).values():
        ints(rows, ["count_per_step"], "ops_by_phase")
    ints([doc], ["unique_kernels"], "top level")


with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([WRITER, tmp, *TRACES], check=True)
    paths = sorted(os.path.join(tmp, f) for f in os.listdir(tmp))
    gpu = []
    for path in paths:
        name = os.path.basename(path)
        doc = json.load(open(path))
        cpu = doc.get("gpu_util") is None
        check_counts_are_integers(name, doc)
        for label, fn, kw in [
            ("phases", py.phases_cmd, {}), ("phases --json", py.phases_cmd, {"json_output": True}),
            ("kernels", py.kernels_cmd, dict(top=20, category=None, grep=None, tensorcore=False,
                                             sort="time", phase=None, json_output=False)),
            ("kernels --sort count", py.kernels_cmd, dict(top=20, category=None, grep=None,
                                                          tensorcore=False, sort="count",
                                                          phase=None, json_output=False)),
            ("ops", py.ops_cmd, dict(top=20, phase=None, json_output=False)),
            ("get", py.get_cmd, dict(field=None, json_output=False)),
        ]:
            _, err = run(fn, path, **kw)
            if err is not None:
                fail(f"{name}: Python `profile {label}` raised {err!r}")
        for phase in doc.get("ops_by_phase") or {}:
            _, err = run(py.ops_cmd, path, top=5, phase=phase, json_output=False)
            if err is not None:
                fail(f"{name}: Python `profile ops --phase {phase}` raised {err!r}")
        # Its `get` prints exactly the value our file holds, for every metric.
        for key, value in doc["metrics"].items():
            out, err = run(py.get_cmd, path, field=key, json_output=True)
            if err is not None or json.loads(out) != {key: value}:
                fail(f"{name}: Python `get {key}` gave {out.strip()!r} ({err!r}), file {value!r}")
        _, err = run(py.whatif_cmd, path, remove_category=None, remove_launches=10,
                     json_output=False)
        if err is not None:
            fail(f"{name}: Python `what-if --remove-launches 10` raised {err!r}")
        _, err = run(py.summary_cmd, path, json_output=False)
        if cpu:
            if not isinstance(err, TypeError):
                fail(f"{name}: a CPU profile's null gpu_util: expected the Python summary's "
                     f"TypeError, got {err!r} (update the test and docs/profile-json.md)")
        else:
            gpu.append(path)
            if err is not None:
                fail(f"{name}: Python `profile summary` raised {err!r}")
            out, err = run(py.summary_cmd, path, json_output=True)
            if err is not None:
                fail(f"{name}: Python `profile summary --json` raised {err!r}")
        print(f"{name}: read by the Python LibreYOLO's readers ({'CPU' if cpu else 'GPU'} job)")
    for a, b in zip(gpu, gpu[1:] + gpu[:1]):
        _, err = run(py.compare_cmd, a, b, json_output=False)
        if err is not None:
            fail(f"compare {os.path.basename(a)} {os.path.basename(b)}: raised {err!r}")
    if len(gpu) < 3 or len(gpu) == len(paths):
        fail(f"expected GPU and CPU profiles among the inputs, got {len(gpu)} GPU of {len(paths)}")

print(f"{len(failures)} failed" if failures else f"{len(TRACES)} profiles read")
sys.exit(1 if failures else 0)
