#include "server/daemon/attach/attach_endpoint.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "server/daemon/attach/kineto_wire.h"
#include "server/daemon/attach/process_facts.h"

namespace libreyolo::daemon::attach {
namespace {

constexpr int kDatagramsPerWake = 64;  // per socket, so one busy user does not starve others
constexpr int kSweepEveryMs = 1000;

// One datagram off `fd`: its bytes (size kMaxDatagramBytes + 1 marks a longer one), sender and
// credentials. False when none is waiting.
bool Receive(int fd, std::vector<uint8_t>* buffer, size_t* size, Sender* from) {
  buffer->resize(kMaxDatagramBytes + 1);
  iovec iov{buffer->data(), buffer->size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  msghdr msg{};
  *from = Sender{};
  msg.msg_name = &from->addr;
  msg.msg_namelen = sizeof(from->addr);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return false;
  *size = (msg.msg_flags & MSG_TRUNC) != 0 ? kMaxDatagramBytes + 1 : static_cast<size_t>(n);
  from->addr_len = msg.msg_namelen;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
        c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred{};
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      from->has_credentials = cred.pid > 0;
      from->pid = cred.pid;
      from->uid = cred.uid;
    }
  }
  return true;
}

}  // namespace

AttachEndpoint::AttachEndpoint(AttachEndpointOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()),
      registry_(clock_, options_.max_per_uid) {}

absl::StatusOr<std::unique_ptr<AttachEndpoint>> AttachEndpoint::Start(
    AttachEndpointOptions options, std::vector<std::string>* warnings) {
  std::unique_ptr<AttachEndpoint> e(new AttachEndpoint(std::move(options)));
  e->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  e->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->epoll_fd_ < 0 || e->wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("attach endpoint: ", std::strerror(errno)));
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = e->wake_fd_;
  ::epoll_ctl(e->epoll_fd_, EPOLL_CTL_ADD, e->wake_fd_, &wake);
  if (e->options_.abstract_name) {
    ASSIGN_OR_RETURN(int fd, BindAbstractSocket(e->options_.abstract_name_text));
    RETURN_IF_ERROR(
        e->AddSocket(Socket{fd, "", std::nullopt, "@" + e->options_.abstract_name_text}));
  }
  // Users who asked before a restart: their processes poll <root>/<uid>/dynolog still.
  std::error_code ec;
  const std::string& root = e->options_.socket_root;
  const std::filesystem::path scan = root.empty() ? "/nonexistent-attach-root" : root;
  for (const auto& entry : std::filesystem::directory_iterator(scan, ec)) {
    uint32_t uid = 0;
    struct stat st {};
    if (!absl::SimpleAtoi(entry.path().filename().string(), &uid) ||
        ::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid) {
      continue;
    }
    if (absl::StatusOr<std::string> dir = e->PrepareUser(uid); !dir.ok() && warnings) {
      warnings->push_back(absl::StrCat("attach: uid ", uid, ": ", dir.status().message()));
    }
  }
  {
    std::lock_guard<std::mutex> lock(e->mu_);
    e->last_prepare_.reset();  // a restart's rebinding keeps no daemon alive by itself
  }
  e->thread_ = std::thread([raw = e.get()] {
    RunGuarded("attach endpoint", "libreyolod keeps serving; attach is off until it restarts",
               [raw] { raw->Loop(); });
  });
  return e;
}

AttachEndpoint::~AttachEndpoint() { Stop(); }

void AttachEndpoint::Stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [fd, s] : sockets_) ::close(fd);
  for (int fd : retired_) ::close(fd);
  sockets_.clear();
  retired_.clear();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

absl::Status AttachEndpoint::AddSocket(Socket socket) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = socket.fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, socket.fd, &ev) != 0) {
    ::close(socket.fd);
    return absl::InternalError(absl::StrCat("attach endpoint: ", std::strerror(errno)));
  }
  sockets_[socket.fd] = std::move(socket);
  return absl::OkStatus();
}

absl::StatusOr<std::string> AttachEndpoint::PrepareUser(uid_t uid) {
  if (options_.socket_root.empty()) {
    return absl::FailedPreconditionError(
        "this libreyolod has no attach directory (attach_dir is empty)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  last_prepare_ = clock_.SteadyNow();
  auto known = user_dirs_.find(uid);
  if (known != user_dirs_.end()) {
    // Still ours? A user may have removed the socket from their directory: bind it again.
    struct stat st {};
    const std::string path = absl::StrCat(known->second, "/", kDaemonSocketName);
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid()) {
      return known->second;
    }
  }
  ASSIGN_OR_RETURN(std::string dir, EnsureUserDir(options_.socket_root, uid));
  ASSIGN_OR_RETURN(int fd, BindDirSocket(dir));
  for (auto it = sockets_.begin(); it != sockets_.end(); ++it) {
    if (it->second.owner == uid) {  // the socket whose file went away
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
      retired_.push_back(it->first);
      sockets_.erase(it);
      break;
    }
  }
  RETURN_IF_ERROR(AddSocket(Socket{fd, dir, uid, dir}));
  user_dirs_[uid] = dir;
  return dir;
}

std::string AttachEndpoint::UserDir(uid_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = user_dirs_.find(uid);
  return it == user_dirs_.end() ? "" : it->second;
}

EndpointCounters AttachEndpoint::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

bool AttachEndpoint::KeepsDaemon() {
  if (registry_.Sweep(), registry_.size() > 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return last_prepare_ && clock_.SteadyNow() - *last_prepare_ < kPrepareGrace;
}

void AttachEndpoint::Count(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.dropped[reason];
}

bool AttachEndpoint::Admit(uid_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::SteadyTime now = clock_.SteadyNow();
  auto& [window, count] = budget_[uid];
  if (now - window >= std::chrono::seconds(1)) {
    window = now;
    count = 0;
  }
  return ++count <= kMaxDatagramsPerUidPerSecond;
}

void AttachEndpoint::Loop() {
  // A catch-all: no exception leaves this thread (style.md 8); a failure is logged and the loop
  // goes on, so one bad datagram cannot stop the endpoint.
  epoll_event events[16];
  Clock::SteadyTime next_sweep = clock_.SteadyNow();
  while (!stopping_.load()) {
    const int n = ::epoll_wait(epoll_fd_, events, 16, kSweepEveryMs);
    try {
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == wake_fd_) continue;
        Socket socket;
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = sockets_.find(events[i].data.fd);
          if (it == sockets_.end()) continue;
          socket = it->second;
        }
        Drain(socket);
      }
      if (clock_.SteadyNow() >= next_sweep) {
        registry_.Sweep();
        next_sweep = clock_.SteadyNow() + std::chrono::milliseconds(kSweepEveryMs);
      }
    } catch (const std::exception& ex) {
      std::cerr << "libreyolod: attach endpoint: " << ex.what() << std::endl;
    } catch (...) {
      std::cerr << "libreyolod: attach endpoint: unknown error" << std::endl;
    }
  }
}

void AttachEndpoint::Drain(const Socket& socket) {
  std::vector<uint8_t> buffer;
  for (int i = 0; i < kDatagramsPerWake && !stopping_.load(); ++i) {
    size_t size = 0;
    Sender from;
    if (!Receive(socket.fd, &buffer, &size, &from)) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.received;
    }
    if (size > kMaxDatagramBytes) {
      Count(DropReasonName(DropReason::kOversized));
      continue;
    }
    Handle(socket, buffer.data(), size, from);
  }
}

void AttachEndpoint::Handle(const Socket& socket, const uint8_t* data, size_t size,
                            const Sender& from) {
  if (!from.has_credentials) return Count("no_credentials");
  if (socket.owner && from.uid != *socket.owner) return Count("wrong_user");
  if (!Admit(from.uid)) return Count("flood");
  Message m;
  if (const DropReason r = ParseDatagram(data, size, &m); r != DropReason::kNone) {
    return Count(DropReasonName(r));
  }
  std::string reply;
  if (m.kind == Message::Kind::kContext) {
    reply = EncodeContextReply(registry_.CountForJob(from.uid, m.context.job_id));
  } else {
    // The pid the process sent is its own as its pid namespace numbers it; the kernel's pid
    // (ours) is its identity. Anything else is a forged or confused request.
    const std::optional<pid_t> own = NamespacePid(from.pid, options_.proc_root);
    if (!own || *own != m.request.pids[0]) return Count("pid_mismatch");
    PollInput in;
    in.pid = from.pid;
    in.uid = from.uid;
    in.activity_bits = m.request.type;
    in.job_id = m.request.job_id;
    in.reported_pids = m.request.pids;
    in.endpoint = socket.label;
    const PollOutcome outcome =
        registry_.Poll(in, [&] { return ReadProcessFacts(from.pid, options_.proc_root); });
    if (outcome.kind == PollOutcome::Kind::kCapped) Count("capped");
    if (outcome.kind == PollOutcome::Kind::kRegistered) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.registered;
    }
    reply = EncodeConfigReply(outcome.config);
  }
  if (!SendReply(socket.fd, from, socket.dir, reply).ok()) return Count("reply_failed");
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.replied;
}

}  // namespace libreyolo::daemon::attach
