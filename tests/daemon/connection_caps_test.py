"""ctest daemon_connection_caps_test (issue 23 item 2): a flood of idle TCP connections from one
peer is capped per peer (the ones past --max-connections-per-peer are closed at once, with one
log line, not one per connection), while another peer's connection and the Unix socket's
callers are still served, and the caps free up as connections close; a reload (SIGHUP) applies
new caps to new connections and closes none that is open."""
import os, signal, socket, subprocess, sys, tempfile, time

daemon, cli = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="lycaps.")
sock = os.path.join(work, "d.sock")
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
log = open(os.path.join(work, "daemon.log"), "w")
tokens = os.path.join(work, "tokens")
with open(os.open(tokens, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write("caps-test-token-0123456789abcdef alice\n")
config = os.path.join(work, "libreyolod.yaml")
with open(config, "w") as f:  # the caps in the file, so that a reload can change them
    f.write("max_connections: 8\nmax_connections_per_peer: 4\n")
d = subprocess.Popen([daemon, "--config", config,
                      "--listen", f"unix:{sock}", "--listen", f"tcp:127.0.0.1:{port}",
                      "--state-dir", f"{work}/state", "--store-dir", f"{work}/store",
                      "--insecure-tcp", "--tokens-file", tokens],
                     stdout=log, stderr=subprocess.STDOUT)
fails = []
try:
    for _ in range(300):
        if subprocess.run([cli, "jobs", "list", "--remote", f"unix:{sock}"],
                          capture_output=True).returncode == 0:
            break
        if d.poll() is not None:
            sys.exit(f"FAIL: libreyolod exited: {open(log.name).read()[-2000:]}")
        time.sleep(0.2)

    def connect(source="127.0.0.1"):
        s = socket.socket()
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.settimeout(0.05)
        return s

    def closed_by_daemon(s, wait=2.0):
        end = time.time() + wait
        while time.time() < end:
            try:
                if s.recv(1) == b"":
                    return True
            except socket.timeout:
                pass
            except OSError:
                return True
        return False

    flood = [connect() for _ in range(10)]
    shut = [closed_by_daemon(s) for s in flood]
    if sum(shut) != 6:
        fails.append(f"{sum(shut)} of 10 connections from one peer were closed; the cap is 4, "
                     "so 6 should be")
    other = connect("127.0.0.2")
    if closed_by_daemon(other, 1.0):
        fails.append("a second peer's connection was closed while the first flooded")
    r = subprocess.run([cli, "jobs", "list", "--remote", f"unix:{sock}"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fails.append(f"the Unix socket did not serve during the flood: {r.stderr[-300:]}")
    # The total cap: 4 + 1 TCP connections and the Unix caller's are at most 8.
    more = [connect("127.0.0.3") for _ in range(4)]
    shut_more = sum(closed_by_daemon(s) for s in more)
    if shut_more != 1:
        fails.append(f"{shut_more} of 4 from a third peer closed; with 5 open and a total cap "
                     "of 8, one should be (the 4th)")
    for s in flood + more:
        s.close()
    time.sleep(0.3)
    again = connect()
    if closed_by_daemon(again, 1.0):
        fails.append("after the flood closed, a new connection from that peer was refused")
    again.close(); other.close()
    time.sleep(0.2)
    lines = [l for l in open(log.name).read().splitlines() if "connection from" in l]
    if not lines or len(lines) > 2:
        fails.append(f"{len(lines)} log lines for the refused connections (want 1 or 2: "
                     f"rate-limited): {lines[:3]}")
    elif "max_connections_per_peer" not in lines[0]:
        fails.append(f"the log line does not name the cap: {lines[0]}")
    # A reload (SIGHUP) applies new caps to new connections; the one open stays.
    kept = connect("127.0.0.4")
    with open(config, "w") as f:
        f.write("max_connections: 8\nmax_connections_per_peer: 2\n")
    d.send_signal(signal.SIGHUP)
    end = time.time() + 20
    while "SIGHUP: reloaded" not in open(log.name).read() and time.time() < end:
        time.sleep(0.05)
    reloaded = [connect("127.0.0.4") for _ in range(3)]
    shut_reloaded = sum(closed_by_daemon(s) for s in reloaded)
    if shut_reloaded != 2:
        fails.append(f"{shut_reloaded} of 3 more from a peer with 1 open closed after a reload to "
                     "max_connections_per_peer 2; 2 should be")
    if closed_by_daemon(kept, 0.3):
        fails.append("a reload closed a connection that was open")
    for s in reloaded + [kept]:
        s.close()
finally:
    d.terminate()
    try:
        d.wait(20)
    except subprocess.TimeoutExpired:
        d.kill()
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    print(open(log.name).read()[-1500:])
    sys.exit(1)
print("ok: 6 of 10 capped per peer, another peer and the Unix socket served, the total cap "
      "holds, one log line, a reload's lower cap applies to new connections")
