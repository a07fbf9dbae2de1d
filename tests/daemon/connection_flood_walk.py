"""The two connection-cap scenarios of issue 40 A.3 against a real libreyolod, as numbers
(tests/daemon/connection_caps_test.py asserts them at a small scale with these helpers).

  /usr/bin/python3 tests/daemon/connection_flood_walk.py build/server/daemon/libreyolod \
      [--addresses 19] [--per-address 64] [--seconds 30] [--channels 70]

1. flood: --per-address preface-only TCP connections (the HTTP/2 preface, then silence) from
   each of --addresses loopback addresses (127.0.0.1, 127.0.0.2, ...), reopened as the daemon
   closes them, while a token user on TCP and root on the Unix socket each call GetDaemonInfo
   on a fresh channel every 0.5 s: how many answered.
2. channels: one token user (alice) holds --channels channels from 127.0.0.1, each having made
   one call; then another (bob) makes 10 calls from the same address, each on a fresh channel.
Needs python3-grpcio (no generated stubs: GetDaemonInfo's request is the empty message)."""
import argparse, os, resource, selectors, signal, socket, subprocess, sys, tempfile, threading, time

import grpc

METHOD = "/libreyolo.profiler.v1.ProfilerService/GetDaemonInfo"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TOKENS = {"alice": "walk-alice-token-0123456789abcdef", "bob": "walk-bob-token-0123456789abcdef0"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    """A libreyolod on a Unix socket and plaintext loopback TCP, with alice's and bob's tokens."""

    def __init__(self, binary, config_text=""):
        self.work = tempfile.mkdtemp(prefix="lyflood.")
        self.sock = os.path.join(self.work, "d.sock")
        self.port = free_port()
        tokens = os.path.join(self.work, "tokens")
        with open(os.open(tokens, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            for user, token in TOKENS.items():
                f.write(f"{token} {user}\n")
        self.config = os.path.join(self.work, "libreyolod.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.log_path = os.path.join(self.work, "daemon.log")
        self.proc = subprocess.Popen(
            [binary, "--config", self.config, "--listen", f"unix:{self.sock}",
             "--listen", f"tcp:127.0.0.1:{self.port}", "--state-dir", f"{self.work}/state",
             "--store-dir", f"{self.work}/store", "--insecure-tcp", "--tokens-file", tokens],
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)
        end = time.time() + 60
        while "libreyolod: serving on" not in self.log():
            if self.proc.poll() is not None or time.time() > end:
                sys.exit(f"FAIL: libreyolod did not start: {self.log()[-2000:]}")
            time.sleep(0.1)

    def log(self):
        return open(self.log_path).read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def channel(target):
    # A subchannel of its own: channels to one target otherwise share one connection.
    return grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


def call(ch, token=None, timeout=3.0):
    """GetDaemonInfo on `ch`: True when it answered."""
    meta = [("authorization", f"Bearer {token}")] if token else None
    try:
        ch.unary_unary(METHOD)(b"", timeout=timeout, metadata=meta)
        return True
    except grpc.RpcError:
        return False


def fresh_call(target, token=None, timeout=3.0):
    ch = channel(target)
    try:
        return call(ch, token, timeout)
    finally:
        ch.close()


class Flood:
    """`per` preface-only connections from each address, reopened as they are closed."""

    def __init__(self, port, addresses, per):
        self.port, self.addresses, self.per = port, addresses, per
        self.stop_flag = threading.Event()
        self.opened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open_one(self, sel, source):
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", self.port))
            s.sendall(PREFACE)
        except OSError:
            s.close()
            return False
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, source)
        self.opened += 1
        return True

    def run(self):
        sel = selectors.DefaultSelector()
        held = {a: 0 for a in self.addresses}
        while not self.stop_flag.is_set():
            for a in self.addresses:
                while held[a] < self.per and self.open_one(sel, a):
                    held[a] += 1
            for key, _ in sel.select(0.2):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the daemon: reopen at the next pass
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    held[key.data] -= 1
        for key in list(sel.get_map().values()):
            key.fileobj.close()

    def stop(self):
        self.stop_flag.set()
        self.thread.join()


def scenario_flood(d, addresses, per, seconds):
    flood = Flood(d.port, [f"127.0.0.{i + 1}" for i in range(addresses)], per)
    time.sleep(2)  # the flood is in place
    tcp = unix = tries = 0
    end = time.time() + seconds
    while time.time() < end:
        tries += 1
        tcp += fresh_call(f"127.0.0.1:{d.port}", TOKENS["alice"])
        unix += fresh_call(f"unix:{d.sock}")
        time.sleep(0.5)
    flood.stop()
    return {"tries": tries, "tcp_token_user": tcp, "unix_root": unix,
            "flood_connections_opened": flood.opened}


def scenario_channels(d, channels):
    held = [channel(f"127.0.0.1:{d.port}") for _ in range(channels)]
    alice_ok = sum(call(ch, TOKENS["alice"]) for ch in held)
    bob_ok = sum(fresh_call(f"127.0.0.1:{d.port}", TOKENS["bob"]) for _ in range(10))
    for ch in held:
        ch.close()
    return {"alice_calls_answered": alice_ok, "alice_channels": channels, "bob": bob_ok,
            "bob_tries": 10}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("daemon")
    p.add_argument("--addresses", type=int, default=19)
    p.add_argument("--per-address", type=int, default=64)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--channels", type=int, default=70)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    d = Daemon(a.daemon)
    try:
        t0 = time.time()
        r = scenario_flood(d, a.addresses, a.per_address, a.seconds)
        print(f"flood ({a.addresses} addresses x {a.per_address} preface-only, "
              f"{time.time() - t0:.0f} s): token user on TCP {r['tcp_token_user']}/{r['tries']}, "
              f"root on the Unix socket {r['unix_root']}/{r['tries']} answered; "
              f"{r['flood_connections_opened']} flood connections opened")
        time.sleep(1)
        r = scenario_channels(d, a.channels)
        print(f"channels: alice's {r['alice_calls_answered']}/{r['alice_channels']} calls answered "
              f"on her held channels; bob from the same address {r['bob']}/{r['bob_tries']}")
    finally:
        d.stop()


if __name__ == "__main__":
    main()
