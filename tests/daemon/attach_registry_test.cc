// Issue 37 §2: who is attachable, on a ManualClock: registration, the states, staleness after
// two poll intervals, death, the per-user cap, pid reuse, and a configuration handed out on the
// next idle poll only.
#include "server/daemon/attach/attach_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "common/time/clock.h"
#include "server/daemon/attach/kineto_wire.h"
#include "server/daemon/attach/process_facts.h"

namespace libreyolo::daemon::attach {
namespace {

using std::chrono::milliseconds;

PollInput Req(pid_t pid, uid_t uid, int32_t bits = kActivitiesBit) {
  PollInput in;
  in.pid = pid;
  in.uid = uid;
  in.activity_bits = bits;
  in.reported_pids = {pid, 1};
  in.endpoint = "/run/x/1000";
  return in;
}

class AttachRegistryTest : public ::testing::Test {
 protected:
  ProcessFacts Facts() {
    ++facts_read_;
    ProcessFacts f;
    f.command_line = "python train.py";
    return f;
  }
  PollOutcome Poll(const PollInput& in) {
    return registry_.Poll(in, [this] { return Facts(); });
  }
  ManualClock clock_;
  std::set<pid_t> dead_;
  AttachRegistry registry_{clock_, 2, [this](pid_t p) { return dead_.count(p) == 0; }};
  int facts_read_ = 0;
};

TEST_F(AttachRegistryTest, RegistersOnceAndTracksState) {
  EXPECT_EQ(Poll(Req(100, 1000)).kind, PollOutcome::Kind::kRegistered);
  clock_.Advance(milliseconds(5000));
  EXPECT_EQ(Poll(Req(100, 1000, 0)).kind, PollOutcome::Kind::kRefreshed);
  EXPECT_EQ(facts_read_, 1);  // /proc is read when a process registers, not at every poll
  std::vector<AttachableProcess> list = registry_.List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].pid, 100);
  EXPECT_EQ(list[0].uid, 1000u);
  EXPECT_EQ(list[0].facts.command_line, "python train.py");
  EXPECT_EQ(list[0].state, AttachState::kBusy);  // its own profiler runs: the bit is clear
  EXPECT_EQ(list[0].polls, 2);
  EXPECT_EQ(list[0].last_poll_unix_ms - list[0].first_poll_unix_ms, 5000);
  Poll(Req(100, 1000));
  EXPECT_EQ(registry_.List()[0].state, AttachState::kIdle);
  EXPECT_TRUE(registry_.List(1001).empty());
}

TEST_F(AttachRegistryTest, SilentForTwoIntervalsOrDeadLeaves) {
  Poll(Req(100, 1000));
  Poll(Req(200, 1000));
  clock_.Advance(kPollInterval);
  Poll(Req(200, 1000));
  clock_.Advance(kPollInterval - milliseconds(1));
  EXPECT_EQ(registry_.List().size(), 2u);  // 100: silent 9.999 s
  clock_.Advance(milliseconds(1));
  ASSERT_EQ(registry_.List().size(), 1u);  // 100: silent 10 s, two intervals
  EXPECT_EQ(registry_.List()[0].pid, 200);
  dead_.insert(200);
  EXPECT_TRUE(registry_.List().empty());
}

TEST_F(AttachRegistryTest, CappedPerUser) {
  Poll(Req(100, 1000));
  Poll(Req(101, 1000));
  EXPECT_EQ(Poll(Req(102, 1000)).kind, PollOutcome::Kind::kCapped);
  EXPECT_EQ(Poll(Req(103, 1001)).kind, PollOutcome::Kind::kRegistered);  // another user's own
  EXPECT_EQ(registry_.List(1000).size(), 2u);
  dead_.insert(100);  // a slot frees when a process leaves
  EXPECT_EQ(Poll(Req(102, 1000)).kind, PollOutcome::Kind::kRegistered);
}

TEST_F(AttachRegistryTest, ReusedPidIsANewProcess) {
  Poll(Req(100, 1000));
  EXPECT_EQ(Poll(Req(100, 1001)).kind, PollOutcome::Kind::kRegistered);
  EXPECT_EQ(facts_read_, 2);
  ASSERT_EQ(registry_.List().size(), 1u);
  EXPECT_EQ(registry_.List()[0].uid, 1001u);
}

TEST_F(AttachRegistryTest, ConfigGoesOutOnTheNextIdlePollOnly) {
  EXPECT_TRUE(absl::IsNotFound(registry_.SetPendingConfig(100, "X=1").status()));
  Poll(Req(100, 1000));
  absl::StatusOr<uint64_t> ticket = registry_.SetPendingConfig(100, "X=1");
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(registry_.SetPendingConfig(100, "Y=2").status()));
  EXPECT_EQ(registry_.List()[0].state, AttachState::kPending);
  EXPECT_EQ(Poll(Req(100, 1000, 0)).config, "");  // busy: held
  EXPECT_FALSE(registry_.DeliveryOf(*ticket).has_value());
  EXPECT_EQ(registry_.List()[0].state, AttachState::kPending);
  clock_.Advance(milliseconds(5000));
  EXPECT_EQ(Poll(Req(100, 1000)).config, "X=1");
  std::optional<Delivery> d = registry_.DeliveryOf(*ticket);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pid, 100);
  EXPECT_EQ(d->delivered_unix_ms, clock_.NowUnixMs());
  EXPECT_EQ(Poll(Req(100, 1000)).config, "");  // once
  EXPECT_EQ(registry_.List()[0].state, AttachState::kIdle);
  // Withdrawn before delivery: never handed out.
  absl::StatusOr<uint64_t> second = registry_.SetPendingConfig(100, "Z=3");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(registry_.CancelPending(*second));
  EXPECT_EQ(Poll(Req(100, 1000)).config, "");
}

TEST_F(AttachRegistryTest, WaitForDeliveryWakesOnThePoll) {
  Poll(Req(100, 1000));
  const uint64_t ticket = *registry_.SetPendingConfig(100, "X=1");
  const Clock::SteadyTime deadline = clock_.SteadyNow() + std::chrono::seconds(30);
  std::optional<Delivery> got;
  std::thread waiter([&] { got = registry_.WaitForDelivery(ticket, deadline); });
  Poll(Req(100, 1000));
  waiter.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pid, 100);
  // A process that leaves ends the wait without a delivery; a passed deadline too.
  Poll(Req(200, 1000));
  const uint64_t other = *registry_.SetPendingConfig(200, "X=1");
  dead_.insert(200);
  registry_.Sweep();
  EXPECT_FALSE(registry_.WaitForDelivery(other, deadline).has_value());
  Poll(Req(300, 1001));
  const uint64_t third = *registry_.SetPendingConfig(300, "X=1");
  EXPECT_FALSE(registry_.WaitForDelivery(third, clock_.SteadyNow()).has_value());
}

TEST(ProcessFacts, EnvironGivesSlurmJobAndRanks) {
  ProcessFacts f;
  static const char kEnv[] =
      "PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=4\0SLURM_JOB_ID=4242\0X\0";
  ParseEnviron(std::string(kEnv, sizeof(kEnv) - 1), &f);
  EXPECT_EQ(f.rank, 3);
  EXPECT_EQ(f.local_rank, 1);
  EXPECT_EQ(f.world_size, 4);
  EXPECT_EQ(f.slurm_job_id, "4242");
  ProcessFacts bad;
  static const char kBad[] = "RANK=x\0WORLD_SIZE=\0";
  ParseEnviron(std::string(kBad, sizeof(kBad) - 1), &bad);
  EXPECT_FALSE(bad.rank.has_value());
  EXPECT_FALSE(bad.world_size.has_value());
}

// A GPU held is an open /dev/nvidia<N> (or ROCm's /dev/kfd, a DRM render node); nvidiactl and
// nvidia-uvm, which a CUDA import opens, are not; an unreadable fd folder is unknown.
TEST(ProcessFacts, HoldsGpuDeviceReadsTheOpenDescriptors) {
  const std::string root = ::testing::TempDir() + "/lyproc" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  auto process = [&](int pid, const std::vector<std::string>& targets) {
    const std::string fd = root + "/" + std::to_string(pid) + "/fd";
    std::filesystem::create_directories(fd);
    for (size_t i = 0; i < targets.size(); ++i) {
      std::filesystem::create_symlink(targets[i], fd + "/" + std::to_string(i));
    }
  };
  process(10, {"/dev/null", "/dev/nvidiactl", "/dev/nvidia-uvm", "socket:[123]"});
  process(11, {"/dev/null", "/dev/nvidia3"});
  process(12, {"/dev/kfd"});
  process(13, {"/dev/dri/renderD128"});
  process(14, {"/dev/nvidia3x"});
  EXPECT_EQ(HoldsGpuDevice(10, root), false);
  EXPECT_EQ(HoldsGpuDevice(11, root), true);
  EXPECT_EQ(HoldsGpuDevice(12, root), true);
  EXPECT_EQ(HoldsGpuDevice(13, root), true);
  EXPECT_EQ(HoldsGpuDevice(14, root), false);
  EXPECT_EQ(HoldsGpuDevice(99, root), std::nullopt);
  EXPECT_EQ(HoldsGpuDevice(::getpid()), false);  // this test holds no GPU
  std::filesystem::remove_all(root);
}

TEST(ProcessFacts, OwnProcess) {
  const ProcessFacts f = ReadProcessFacts(::getpid());
  ASSERT_FALSE(f.ancestors.empty());
  EXPECT_EQ(f.ancestors[0], ::getppid());
  EXPECT_NE(f.command_line.find("attach"), std::string::npos) << f.command_line;
  EXPECT_TRUE(f.environ_readable);
  EXPECT_EQ(NamespacePid(::getpid()), ::getpid());
  EXPECT_FALSE(NamespacePid(0x7ffffff0).has_value());
}

}  // namespace
}  // namespace libreyolo::daemon::attach
