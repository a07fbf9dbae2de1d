"""ctest daemon_handshake_timeout_test (issue 40 A.3, d34edb8): the handshake_timeout_s a daemon is
configured with is the one its connection gate applies to plaintext TCP, at start and after a
reload (SIGHUP) — not the built-in 10 s. A daemon with handshake_timeout_s: 2; a connection that
sends only the HTTP/2 preface is closed ~2 s after its accept, before and after a reload.
Before d34edb8 the gate kept its default (closed at 10 s). ~6 s. /usr/bin/python3 (grpcio)."""
import os, signal, socket, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from connection_flood_walk import PREFACE, Daemon  # noqa: E402

CONFIG = "handshake_timeout_s: 2\n"
d = Daemon(sys.argv[1], CONFIG)
fails = []


def closed_after(source):
    """Seconds from connect until the daemon closes a preface-only connection (None: open at 8 s)."""
    s = socket.socket()
    s.bind((source, 0))
    t0 = time.monotonic()
    s.connect(("127.0.0.1", d.port))
    s.sendall(PREFACE)
    s.settimeout(0.05)
    try:
        while time.monotonic() - t0 < 8:
            try:
                if s.recv(65536) == b"":
                    return time.monotonic() - t0
            except socket.timeout:
                continue
            except OSError:
                return time.monotonic() - t0
        return None
    finally:
        s.close()


try:
    at = closed_after("127.0.0.5")
    if at is None or not 1.5 <= at <= 5:
        fails.append(f"at start: a preface-only connection closed at {at} s; want ~2 s "
                     "(handshake_timeout_s: 2)")
    with open(d.config, "w") as f:
        f.write(CONFIG)
    d.proc.send_signal(signal.SIGHUP)
    end = time.time() + 20
    while "SIGHUP: reloaded" not in d.log() and time.time() < end:
        time.sleep(0.05)
    if "SIGHUP: reloaded" not in d.log():
        fails.append("no 'SIGHUP: reloaded' in the log within 20 s")
    at = closed_after("127.0.0.6")
    if at is None or not 1.5 <= at <= 5:
        fails.append(f"after a reload: a preface-only connection closed at {at} s; want ~2 s")
finally:
    d.stop()
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    print(d.log()[-1500:])
    sys.exit(1)
print("ok: the configured handshake_timeout_s (2 s) closes a preface-only connection, at start and "
      "after a reload")
