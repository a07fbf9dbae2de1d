#include "server/engine/train/data_parallel.h"

#include <netdb.h>
#include <sys/socket.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"
#include "server/engine/train/data_parallel_nccl.h"

namespace libreyolo::engine {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// DDP's broadcast_bucket_size for _sync_module_states and the buffers (250 MiB).
constexpr size_t kBroadcastBucketBytes = size_t{250} << 20;

std::string JoinKey(int64_t rank) { return absl::StrCat("libreyolo/joined/", rank); }

// The ranks whose check-in key is missing from the store.
std::vector<int64_t> MissingRanks(c10d::Store& store, int64_t world_size) {
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < world_size; ++r) {
    try {
      if (!store.check({JoinKey(r)})) missing.push_back(r);
    } catch (const std::exception&) {
      missing.push_back(r);
    }
  }
  return missing;
}

// An address as numbers ("127.0.0.1", "::1"), for the messages.
std::string NumericHost(const addrinfo& a) {
  char host[NI_MAXHOST] = "?";
  ::getnameinfo(a.ai_addr, a.ai_addrlen, host, sizeof(host), nullptr, 0, NI_NUMERICHOST);
  return host;
}

// Rank 0's listening socket for the rendezvous, bound to master_addr's own address on this host
// and to nothing else: 127.0.0.1 for a run on one host, the scheduler's --master-addr (as it
// resolves here) across hosts. c10d's TCPStore, left to itself, listens on every interface
// (`[::]:PORT`), and it has no authentication: whoever reaches the port can read and write the
// run's keys. The first of the name's addresses that binds is used (the ranks' TCPStore
// clients try each of them). Errors name the address and the way out.
absl::StatusOr<UniqueFd> ListenForRendezvous(const DataParallelSpec& spec) {
  const std::string where = absl::StrCat(spec.master_addr, ":", spec.master_port);
  const std::string prefix = absl::StrCat("cannot serve the rendezvous at ", where, ": ");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(spec.master_port);
  if (int rc = ::getaddrinfo(spec.master_addr.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "--master-addr '", spec.master_addr, "' does not resolve on rank 0's host (",
        ::gai_strerror(rc), "); give node 0's address as the other hosts reach it"));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  std::vector<std::string> tried, failures;
  bool in_use = false, all_foreign = true;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const std::string host = NumericHost(*a);
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    int one = 1;
    // As c10d's own listener: a port in TIME_WAIT after the last run can be served again.
    if (fd.valid() && ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        ::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), SOMAXCONN) == 0) {
      return fd;
    }
    const int err = errno;
    in_use |= err == EADDRINUSE;
    all_foreign &= err == EADDRNOTAVAIL;
    tried.push_back(host);
    failures.push_back(absl::StrCat(host, ": ", std::strerror(err)));
  }
  if (in_use) {
    return absl::UnavailableError(
        absl::StrCat(prefix,
                     "the port is in use (another run or program listens there); choose another "
                     "--master-port"));
  }
  if (all_foreign && !tried.empty()) {
    const std::string resolved = absl::StrJoin(tried, ", ");
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, spec.master_addr,
        resolved == spec.master_addr ? "" : absl::StrCat(" (", resolved, ")"),
        " is not an address of this host, and rank 0 serves the rendezvous where it runs: "
        "run node rank 0 on the host --master-addr names, or give this host's own address"));
  }
  return absl::UnavailableError(absl::StrCat(prefix, absl::StrJoin(failures, "; ")));
}

// The store: rank 0 serves it, on ListenForRendezvous's socket. A rank that cannot reach the server
// within the timeout is told who it was waiting for.
absl::StatusOr<c10::intrusive_ptr<c10d::Store>> OpenStore(const DataParallelSpec& spec) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(spec.master_port);
  o.isServer = spec.rank == 0;
  o.numWorkers = static_cast<size_t>(spec.world_size);
  o.waitWorkers = false;  // the check-in below waits, and can say who is missing
  o.timeout = seconds(spec.timeout_s);
  const std::string where = absl::StrCat(spec.master_addr, ":", spec.master_port);
  if (o.isServer) {
    ASSIGN_OR_RETURN(UniqueFd listener, ListenForRendezvous(spec));
    // The server takes the socket over: c10d's backends (libuv's, the default, and the
    // classic one) listen on it and close it with the store. Released here, not closed on a
    // failure below: the backend may have closed it already, and the number reused.
    o.masterListenFd = listener.Release();
  }
  try {
    return c10::intrusive_ptr<c10d::Store>(
        c10::make_intrusive<c10d::TCPStore>(spec.master_addr, o));
  } catch (const std::exception& e) {
    if (spec.rank == 0) {
      return absl::UnavailableError(absl::StrCat("cannot serve the rendezvous at ", where, " (",
                                                 e.what(), "); choose another --master-port"));
    }
    return absl::DeadlineExceededError(absl::StrCat("found no rendezvous at ", where, " within ",
                                                    spec.timeout_s, " s: rank 0 never served it (",
                                                    e.what(), ")"));
  }
}

// Every rank checks in under its own key with the run it belongs to (its group and world
// size) and waits for the others'. A rank that checks in twice (two hosts given one node rank)
// or with another run (two runs given one rendezvous) is refused, naming both.
absl::Status CheckIn(c10d::Store& store, const DataParallelSpec& spec) {
  const std::string where = absl::StrCat(spec.master_addr, ":", spec.master_port);
  const std::string mine = absl::StrCat("run ", spec.group, " of world size ", spec.world_size);
  std::vector<std::string> keys;
  for (int64_t r = 0; r < spec.world_size; ++r) keys.push_back(JoinKey(r));
  try {
    if (store.add(absl::StrCat(JoinKey(spec.rank), "/times"), 1) > 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", spec.rank, " joined the rendezvous at ", where,
          " twice: two hosts were given the same --node-rank, or two runs the same rendezvous; "
          "give each host its own --node-rank (0..nnodes-1) and each run its own "
          "--master-port"));
    }
    store.set(JoinKey(spec.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
    store.wait(keys, seconds(spec.timeout_s));
  } catch (const std::exception& e) {
    const std::vector<int64_t> missing = MissingRanks(store, spec.world_size);
    if (missing.empty()) {
      return absl::UnavailableError(absl::StrCat("the rendezvous failed: ", e.what()));
    }
    return absl::DeadlineExceededError(
        absl::StrCat("rank", missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", "),
                     " never joined the rendezvous at ", where, " within ", spec.timeout_s, " s"));
  }
  for (int64_t r = 0; r < spec.world_size; ++r) {
    std::string theirs;
    try {
      const std::vector<uint8_t> v = store.get(JoinKey(r));
      theirs.assign(v.begin(), v.end());
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("the rendezvous failed: ", e.what()));
    }
    if (theirs != mine) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", r, " joined the rendezvous at ", where, " as part of ", theirs,
          ", this rank as part of ", mine,
          ": every host must run the same --nproc with the same --nnodes and --group-id, and "
          "two runs need two --master-port"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> BackendFor(const DataParallelSpec& spec, const DeviceChoice& device) {
  const std::string backend = spec.backend.empty() ? (device.cuda ? "nccl" : "gloo") : spec.backend;
  if (backend == "nccl" && !device.cuda) {
    return absl::InvalidArgumentError(
        "--dist-backend nccl needs a CUDA device; on the CPU use gloo (the default there)");
  }
  if (backend != "gloo" && backend != "nccl") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dist-backend '", backend, "': use gloo or nccl"));
  }
  return backend;
}

// Where this rank's Gloo pairs listen, as torch.distributed picks it: the interface
// GLOO_SOCKET_IFNAME names; a run on one host (its rendezvous on the loopback) on the loopback;
// else the address this host's name resolves to (ProcessGroupGloo's default device).
std::shared_ptr<::gloo::transport::Device> GlooDevice(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (master_addr == "localhost" || absl::StartsWith(master_addr, "127.") || master_addr == "::1") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::ProcessGroup> MakeGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                 const DataParallelSpec& spec,
                                                 const std::string& backend) {
  const int rank = static_cast<int>(spec.rank);
  const int size = static_cast<int>(spec.world_size);
  // Each backend rendezvouses under its own prefix, as torch.distributed does.
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("default_pg/0/", store);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(prefixed, rank, size);
  const milliseconds timeout = seconds(spec.timeout_s);
  if (backend == "nccl") {
    auto nccl = MakeNcclBackend(prefixed, rank, size, timeout);
    group->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, nccl);
    group->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
  } else {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(GlooDevice(spec.master_addr));
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
    group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
    group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  }
  return group;
}

}  // namespace

DataParallel::DataParallel() = default;

DataParallel::~DataParallel() {
  reducer_.reset();  // its hooks and buckets first, then the group they use
  group_.reset();
  store_.reset();
}

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Join(const DataParallelSpec& spec,
                                                                 const DeviceChoice& device,
                                                                 torch::nn::Module& model) {
  ASSIGN_OR_RETURN(auto backend, BackendFor(spec, device));
  std::unique_ptr<DataParallel> dp(new DataParallel());
  dp->spec_ = spec;
  ASSIGN_OR_RETURN(auto store, OpenStore(spec));
  dp->store_ = std::move(store);
  RETURN_IF_ERROR(CheckIn(*dp->store_, spec));
  dp->group_ = MakeGroup(dp->store_, spec, backend);

  for (const torch::Tensor& p : model.parameters()) {
    if (p.requires_grad()) dp->params_.push_back(p);
  }
  dp->buffers_ = model.buffers();
  // Rank 0's weights and buffers everywhere (DDP's _sync_module_states).
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> states = dp->params_;
    states.insert(states.end(), dp->buffers_.begin(), dp->buffers_.end());
    c10d::broadcast_coalesced(dp->group_, states, kBroadcastBucketBytes, 0);
  }
  // DDP's buckets: a small first one so that the first all-reduce starts early in the backward.
  const auto cap = static_cast<size_t>(spec.bucket_cap_mb * 1024.0 * 1024.0);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      dp->params_, {static_cast<size_t>(c10d::kDefaultFirstBucketBytes), cap});
  std::reverse(buckets.begin(), buckets.end());
  std::vector<int64_t> limit_list(limits.rbegin(), limits.rend());
  const std::vector<bool> sparse(dp->params_.size(), false);
  std::unordered_map<size_t, std::string> names;
  dp->facts_.buckets = static_cast<int64_t>(buckets.size());
  dp->reducer_ = std::make_unique<c10d::Reducer>(
      dp->params_, std::move(buckets), dp->group_, sparse, static_cast<int64_t>(cap),
      /*find_unused_parameters=*/false, spec.gradient_as_bucket_view, std::move(names),
      static_cast<int64_t>(c10d::kDefaultFirstBucketBytes),
      /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false, std::move(limit_list));

  DataParallelFacts& f = dp->facts_;
  f.backend = backend;
  f.rank = spec.rank;
  f.world_size = spec.world_size;
  f.bucket_cap_mb = spec.bucket_cap_mb;
  f.gradient_as_bucket_view = spec.gradient_as_bucket_view;
  f.broadcast_buffers = spec.broadcast_buffers;
  f.parameters = static_cast<int64_t>(dp->params_.size());
  for (const torch::Tensor& p : dp->params_) f.gradient_bytes += p.numel() * p.element_size();
  return dp;
}

void DataParallel::BeforeForward() {
  if (spec_.broadcast_buffers && !buffers_.empty()) {
    torch::NoGradGuard no_grad;
    c10d::broadcast_coalesced(group_, buffers_, kBroadcastBucketBytes, 0);
  }
  // After the first backward the Reducer knows the order the gradients came in and rebuilds
  // its buckets to match once (DDP's _rebuild_buckets).
  reducer_->rebuild_buckets();
  reducer_->prepare_for_forward();
}

void DataParallel::BeforeBackward() { reducer_->prepare_for_backward({}); }

void DataParallel::MeasureReplicaDivergence() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : params_) flat.push_back(p.detach().reshape(-1).to(torch::kDouble));
  const torch::Tensor mine = torch::cat(flat);
  std::vector<torch::Tensor> theirs = {mine.clone()};
  // Rank 0's weights, broadcast: the divergence is each rank's own; the max over ranks follows.
  group_->broadcast(theirs)->wait();
  std::vector<torch::Tensor> worst = {(mine - theirs[0]).abs().max().reshape({1})};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  group_->allreduce(worst, max)->wait();
  facts_.replica_divergence = worst[0].cpu().item<double>();
}

}  // namespace libreyolo::engine
