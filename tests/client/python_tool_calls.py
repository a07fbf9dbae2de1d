"""Calls into the Python LibreYOLO's own commands for the tests that read our files with it
(python_reads_our_profiles_test.py, python_reads_our_repeat_test.py)."""
import contextlib
import io

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def run(fn, *args, **kwargs):
    """Calls a Python LibreYOLO command; returns (stdout, exception or None)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            fn(*args, **kwargs)
    except SystemExit as e:  # typer.Exit
        return out.getvalue(), e if e.code else None
    except Exception as e:  # noqa: BLE001: any crash is the finding
        return out.getvalue(), e
    return out.getvalue(), None
