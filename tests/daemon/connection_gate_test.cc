// ConnectionGate (issue 23 item 2): caps in total and per peer, the descriptor reserve, and a
// connection counted only while its descriptor still names its socket.
#include "server/daemon/security/connection_gate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace libreyolo::daemon {
namespace {

// One end of a fresh socketpair (the other closed): a connection's descriptor.
int Socket() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ::close(fds[1]);
  return fds[0];
}

TEST(ConnectionGate, CapsPerPeerAndInTotalAndFreesAClosedConnection) {
  ConnectionGate gate(ConnectionCaps{3, 2, 0}, 0);
  std::vector<int> open;
  for (int i = 0; i < 2; ++i) {
    open.push_back(Socket());
    EXPECT_EQ(gate.Admit(open.back(), "10.0.0.1"), "");
  }
  const int third = Socket();
  EXPECT_NE(gate.Admit(third, "10.0.0.1").find("max_connections_per_peer"), std::string::npos);
  ::close(third);
  open.push_back(Socket());
  EXPECT_EQ(gate.Admit(open.back(), "uid:1000"), "") << "another peer has its own share";
  const int fourth = Socket();
  EXPECT_NE(gate.Admit(fourth, "uid:0").find("(max_connections)"), std::string::npos);
  ::close(fourth);
  EXPECT_EQ(gate.open_connections(), 3);
  // gRPC closes a connection: its slot is free at the next accept.
  ::close(open.front());
  EXPECT_EQ(gate.open_connections(), 2);
  const int again = Socket();
  EXPECT_EQ(gate.Admit(again, "10.0.0.1"), "");
  ::close(again);
  for (size_t i = 1; i < open.size(); ++i) ::close(open[i]);
}

TEST(ConnectionGate, AReusedDescriptorNumberIsNotTheOldConnection) {
  ConnectionGate gate(ConnectionCaps{10, 1, 0}, 0);
  const int fd = Socket();
  ASSERT_EQ(gate.Admit(fd, "10.0.0.1"), "");
  ::close(fd);
  // The number comes back as a file, then as another socket: neither is the old connection.
  const int file = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(file, fd) << "the kernel gives the lowest free number";
  EXPECT_EQ(gate.open_connections(), 0);
  ::close(file);
  const int other = Socket();
  ASSERT_EQ(other, fd);
  EXPECT_EQ(gate.Admit(other, "10.0.0.1"), "") << "the old one no longer counts";
  ::close(other);
}

TEST(ConnectionGate, TcpNeverTakesTheReservedDescriptors) {
  const int fd = Socket();
  // A limit just above this descriptor's number, with 4 in reserve: TCP is refused, the Unix
  // socket's caller (reserve_exempt) still gets in.
  ConnectionGate gate(ConnectionCaps{10, 10, 4}, fd + 3);
  EXPECT_NE(gate.Admit(fd, "10.0.0.1").find("reserved_descriptors"), std::string::npos);
  EXPECT_EQ(gate.Admit(fd, "uid:1000", /*reserve_exempt=*/true), "");
  ::close(fd);
}

}  // namespace
}  // namespace libreyolo::daemon
