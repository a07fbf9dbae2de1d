// ConnectionGate (issue 23 item 2, issue 40 A.3): a budget per listener kind, caps per peer
// and per user, idle connections closed before anyone is refused, the handshake timeout, the
// descriptor reserve, and a connection counted only while its descriptor still names its
// socket. The clock is injected: no test sleeps.
#include "server/daemon/security/connection_gate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace libreyolo::daemon {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

// A connection: the daemon's end (what the gate is given) and the client's end, which reads
// the end of the stream once the gate shuts the connection down.
struct Conn {
  int daemon = -1;
  int client = -1;
  Conn() {
    int fds[2] = {-1, -1};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    daemon = fds[0];
    client = fds[1];
  }
  ~Conn() {
    if (daemon >= 0) ::close(daemon);
    if (client >= 0) ::close(client);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  // True when the gate has shut it down (the client reads EOF, not "would block").
  bool ShutByGate() const {
    char byte = 0;
    return ::recv(client, &byte, 1, MSG_DONTWAIT) == 0;
  }
};

// A clock the test moves.
struct FakeClock {
  steady_clock::time_point now = steady_clock::time_point{} + seconds(1000);
  ConnectionGate::Clock fn() {
    return [this] { return now; };
  }
};

ConnectionCaps Caps(int64_t total, int64_t per_peer, int64_t handshake_s = 10) {
  return ConnectionCaps{total, per_peer, 0, handshake_s};
}

TEST(ConnectionGate, APeerAtItsCapLosesItsOldestIdleConnectionNotTheNewOne) {
  FakeClock clock;
  ConnectionGate gate(Caps(10, 2), 0, clock.fn());
  Conn a, b, c, d;
  ASSERT_EQ(gate.Admit(a.daemon, "10.0.0.1"), "");
  clock.now += seconds(1);
  ASSERT_EQ(gate.Admit(b.daemon, "10.0.0.1"), "");
  std::string closed;
  EXPECT_EQ(gate.Admit(c.daemon, "10.0.0.1", false, &closed), "");
  EXPECT_TRUE(a.ShutByGate()) << "the oldest idle one goes";
  EXPECT_FALSE(b.ShutByGate());
  EXPECT_NE(closed.find("10.0.0.1"), std::string::npos) << closed;
  // Both left have a call in flight: the next one is refused, nobody busy is cut off.
  gate.CallStarted(b.daemon, "");
  gate.CallStarted(c.daemon, "");
  const std::string why = gate.Admit(d.daemon, "10.0.0.1");
  EXPECT_NE(why.find("max_connections_per_peer"), std::string::npos) << why;
  EXPECT_FALSE(b.ShutByGate() || c.ShutByGate());
  EXPECT_EQ(gate.open_connections(), 2);
}

TEST(ConnectionGate, TheUnixSocketHasABudgetOfItsOwn) {
  ConnectionGate gate(Caps(2, 2), 0);
  Conn t1, t2, u1, u2, t3;
  ASSERT_EQ(gate.Admit(t1.daemon, "10.0.0.1"), "");
  ASSERT_EQ(gate.Admit(t2.daemon, "10.0.0.2"), "");
  gate.CallStarted(t1.daemon, "");
  gate.CallStarted(t2.daemon, "");
  // TCP is full of busy connections; the local user and root still get in.
  EXPECT_EQ(gate.Admit(u1.daemon, "uid:1000", true), "");
  EXPECT_EQ(gate.Admit(u2.daemon, "uid:0", true), "");
  EXPECT_FALSE(t1.ShutByGate() || t2.ShutByGate());
  const std::string why = gate.Admit(t3.daemon, "10.0.0.3");
  EXPECT_NE(why.find("(max_connections)"), std::string::npos) << why;
  EXPECT_EQ(gate.open_connections(), 4);
}

TEST(ConnectionGate, AFullBudgetClosesAnIdleConnectionUnauthenticatedFirstBeforeRefusing) {
  FakeClock clock;
  ConnectionGate gate(Caps(3, 3), 0, clock.fn());
  Conn alice, anon, busy, fresh, late;
  ASSERT_EQ(gate.Admit(alice.daemon, "10.0.0.1"), "");
  const uint64_t s = gate.CallStarted(alice.daemon, "alice");
  gate.CallEnded(s, true);  // alice's, idle since the start
  clock.now += seconds(5);
  ASSERT_EQ(gate.Admit(anon.daemon, "10.0.0.2"), "");  // newer, but never authenticated
  ASSERT_EQ(gate.Admit(busy.daemon, "10.0.0.3"), "");
  gate.CallStarted(busy.daemon, "bob");
  EXPECT_EQ(gate.Admit(fresh.daemon, "10.0.0.4"), "");
  EXPECT_TRUE(anon.ShutByGate()) << "the unauthenticated idle connection goes first";
  EXPECT_FALSE(alice.ShutByGate());
  gate.CallStarted(fresh.daemon, "carol");
  EXPECT_EQ(gate.Admit(late.daemon, "10.0.0.5"), "");
  EXPECT_TRUE(alice.ShutByGate()) << "then the oldest idle";
  EXPECT_FALSE(busy.ShutByGate() || fresh.ShutByGate());
  gate.CallStarted(late.daemon, "dave");
  Conn refused;
  const std::string why = gate.Admit(refused.daemon, "10.0.0.6");
  EXPECT_NE(why.find("(max_connections)"), std::string::npos) << why;
}

TEST(ConnectionGate, AFullBudgetTakesFromWhoeverHoldsTheMostNotFromTheOldest) {
  FakeClock clock;
  ConnectionGate gate(Caps(4, 4), 0, clock.fn());
  Conn lone, f1, f2, f3, f4;
  ASSERT_EQ(gate.Admit(lone.daemon, "10.0.0.9"), "");  // the oldest, alone on its address
  for (Conn* c : {&f1, &f2, &f3}) {
    clock.now += seconds(1);
    ASSERT_EQ(gate.Admit(c->daemon, "10.0.0.1"), "");  // a flood's address
  }
  clock.now += seconds(1);
  EXPECT_EQ(gate.Admit(f4.daemon, "10.0.0.1"), "");
  EXPECT_FALSE(lone.ShutByGate()) << "the flood pays, not the one connection of 10.0.0.9";
  EXPECT_TRUE(f1.ShutByGate()) << "the flood's oldest idle";
  EXPECT_FALSE(f2.ShutByGate() || f3.ShutByGate() || f4.ShutByGate());
}

TEST(ConnectionGate, AfterItsFirstAuthenticatedCallAConnectionIsChargedToItsUser) {
  FakeClock clock;
  ConnectionGate gate(Caps(100, 2), 0, clock.fn());
  std::vector<Conn> alice(3);
  for (Conn& c : alice) {
    ASSERT_EQ(gate.Admit(c.daemon, "127.0.0.1"), "");
    gate.CallEnded(gate.CallStarted(c.daemon, "alice"), true);
    clock.now += seconds(1);
  }
  // Her third made her pass the cap: her oldest idle one went, the newest stayed.
  EXPECT_TRUE(alice[0].ShutByGate());
  EXPECT_FALSE(alice[1].ShutByGate() || alice[2].ShutByGate());
  // Her connections are hers, not the address's: bob behind the same address gets in.
  Conn bob1, bob2;
  EXPECT_EQ(gate.Admit(bob1.daemon, "127.0.0.1"), "");
  EXPECT_EQ(gate.Admit(bob2.daemon, "127.0.0.1"), "");
  EXPECT_FALSE(alice[1].ShutByGate() || alice[2].ShutByGate() || bob1.ShutByGate());
  EXPECT_EQ(gate.open_connections(), 4);
}

TEST(ConnectionGate, AUserPastTheCapWithEveryConnectionBusyLosesTheNewest) {
  ConnectionGate gate(Caps(100, 2), 0);
  Conn a, b, c;
  uint64_t serial[3] = {};
  int i = 0;
  for (Conn* x : {&a, &b, &c}) {
    ASSERT_EQ(gate.Admit(x->daemon, "127.0.0.1"), "");
    serial[i++] = gate.CallStarted(x->daemon, "alice");  // each call still running
  }
  const uint64_t sa = serial[0];
  const uint64_t sc = serial[2];
  EXPECT_TRUE(c.ShutByGate());
  EXPECT_FALSE(a.ShutByGate() || b.ShutByGate());
  gate.CallEnded(sc, true);  // the closed one's call ends later: nothing to do
  gate.CallEnded(sa, true);
  EXPECT_EQ(gate.open_connections(), 2);
}

TEST(ConnectionGate, TcpConnectionsWithoutAnAuthenticatedOrCompletedCallExpire) {
  FakeClock clock;
  ConnectionGate gate(Caps(100, 100, 10), 0, clock.fn());
  Conn silent, authed, completed, bad_token, in_flight, local;
  for (Conn* c : {&silent, &authed, &completed, &bad_token, &in_flight}) {
    ASSERT_EQ(gate.Admit(c->daemon, "10.0.0.1"), "");
  }
  ASSERT_EQ(gate.Admit(local.daemon, "uid:1000", true), "");
  gate.CallStarted(authed.daemon, "alice");                            // still in flight
  gate.CallEnded(gate.CallStarted(completed.daemon, ""), true);        // e.g. a health check
  gate.CallEnded(gate.CallStarted(bad_token.daemon, ""), false);       // UNAUTHENTICATED
  gate.CallStarted(in_flight.daemon, "");  // headers and no message: not a completed call
  clock.now += seconds(9);
  EXPECT_EQ(gate.ExpireHandshakes(), 0);
  clock.now += seconds(1);
  EXPECT_EQ(gate.ExpireHandshakes(), 3);
  EXPECT_TRUE(silent.ShutByGate());
  EXPECT_TRUE(bad_token.ShutByGate());
  EXPECT_TRUE(in_flight.ShutByGate());
  EXPECT_FALSE(authed.ShutByGate() || completed.ShutByGate() || local.ShutByGate());
  EXPECT_EQ(gate.TakeClosed().handshake, 3);
  EXPECT_EQ(gate.TakeClosed().handshake, 0);
  EXPECT_EQ(gate.open_connections(), 3);
}

TEST(ConnectionGate, CallsOnConnectionsItDoesNotKnowAreIgnored) {
  ConnectionGate gate(Caps(10, 10), 0);
  Conn other;
  EXPECT_EQ(gate.CallStarted(other.daemon, "alice"), 0u) << "not admitted: a TLS connection";
  gate.CallEnded(0, true);
  gate.CallEnded(12345, true);
  EXPECT_EQ(gate.open_connections(), 0);
}

TEST(ConnectionGate, AReusedDescriptorNumberIsNotTheOldConnection) {
  ConnectionGate gate(Caps(10, 1), 0);
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ::close(fds[1]);
  const int fd = fds[0];
  ASSERT_EQ(gate.Admit(fd, "10.0.0.1"), "");
  gate.CallStarted(fd, "");  // busy: a cap would not close it
  ::close(fd);
  // The number comes back as a file, then as another socket: neither is the old connection.
  const int file = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(file, fd) << "the kernel gives the lowest free number";
  EXPECT_EQ(gate.open_connections(), 0);
  ::close(file);
  Conn other;
  ASSERT_EQ(other.daemon, fd);
  EXPECT_EQ(gate.Admit(other.daemon, "10.0.0.1"), "") << "the old one no longer counts";
}

TEST(ConnectionGate, TcpNeverTakesTheReservedDescriptors) {
  Conn c;
  // A limit just above this descriptor's number, with 4 in reserve: TCP is refused, the Unix
  // socket's caller still gets in.
  ConnectionGate gate(ConnectionCaps{10, 10, 4, 10}, c.daemon + 3);
  EXPECT_NE(gate.Admit(c.daemon, "10.0.0.1").find("reserved_descriptors"), std::string::npos);
  EXPECT_EQ(gate.Admit(c.daemon, "uid:1000", /*unix_socket=*/true), "");
}

}  // namespace
}  // namespace libreyolo::daemon
