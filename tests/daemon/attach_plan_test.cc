// Issue 37 §3-5: the attach job's decisions without a process: which registered processes a
// spec traces (a launcher's leaves, a polling launcher skipped, another user's process refused,
// busy ones, Slurm and --all, no match listing what is there and why), whose job it is, the
// Kineto configuration text and the shared start, and the drop folder's arrivals by inotify
// (a fake producer writing `.tmp` then renaming, as Kineto does).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "common/time/clock.h"
#include "server/daemon/attach/attach_job.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon::attach {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

AttachableProcess Proc(pid_t pid, uid_t uid, std::vector<pid_t> ancestors,
                       AttachState state = AttachState::kIdle, std::string cmd = "python x.py") {
  AttachableProcess p;
  p.pid = pid;
  p.uid = uid;
  p.facts.ancestors = std::move(ancestors);
  p.facts.command_line = std::move(cmd);
  p.state = state;
  p.last_poll_unix_ms = 1'000'000;
  return p;
}

AttachOwner User(uid_t uid) { return AttachOwner{"u", uid, false}; }

v1::AttachSpec Pids(std::vector<int32_t> pids) {
  v1::AttachSpec s;
  for (int32_t p : pids) s.add_pids(p);
  return s;
}

std::vector<pid_t> TracedPids(const TargetSelection& s) {
  std::vector<pid_t> out;
  for (const auto& p : s.traced) out.push_back(p.pid);
  return out;
}

const v1::AttachTarget* Skipped(const TargetSelection& s, int32_t pid) {
  for (const auto& t : s.skipped) {
    if (t.pid() == pid) return &t;
  }
  return nullptr;
}

// torchrun (90, not polling) -> a worker launcher (100, polling: it imported torch) -> two
// ranks (110, 120); a stray process 300 of the same user; 400 of another user.
std::vector<AttachableProcess> Tree() {
  std::vector<AttachableProcess> out = {
      Proc(100, 1000, {90, 1}), Proc(110, 1000, {100, 90, 1}), Proc(120, 1000, {100, 90, 1}),
      Proc(300, 1000, {1}), Proc(400, 2000, {1})};
  out[1].facts.rank = 0;
  out[2].facts.rank = 1;
  return out;
}

TEST(SelectTargets, APollingPidIsTaken) {
  auto s = SelectTargets(Pids({300}), Tree(), User(1000));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TracedPids(*s), std::vector<pid_t>({300}));
  EXPECT_TRUE(s->skipped.empty());
}

TEST(SelectTargets, ALauncherPidSelectsTheLeavesAndSkipsThePollingLauncher) {
  // 90 does not poll: its polling descendants are 100, 110, 120; 100 is their launcher.
  auto s = SelectTargets(Pids({90}), Tree(), User(1000));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TracedPids(*s), std::vector<pid_t>({110, 120}));
  const v1::AttachTarget* launcher = Skipped(*s, 100);
  ASSERT_NE(launcher, nullptr);
  EXPECT_FALSE(launcher->traced());
  EXPECT_THAT(launcher->reason(), HasSubstr("a launcher: its descendants 110, 120 poll"));
  // Named itself, a polling launcher gives way to its leaves too (dynolog#430).
  auto direct = SelectTargets(Pids({100}), Tree(), User(1000));
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(TracedPids(*direct), std::vector<pid_t>({110, 120}));
}

// Issue 37 §3, on CUDA: a rank (110) whose data loader workers (111, 112; spawned, so they
// imported torch and poll too) hold no GPU device is traced itself, its workers skipped as
// holding none; a launcher without a device stays skipped as one. With no process on a GPU, or
// when it cannot be told, the leaves are traced as before.
TEST(SelectTargets, OnAGpuHostTheProcessesHoldingADeviceAreTraced) {
  std::vector<AttachableProcess> r = Tree();
  r.push_back(Proc(111, 1000, {110, 100, 90, 1}));
  r.push_back(Proc(112, 1000, {110, 100, 90, 1}));
  const std::set<pid_t> on_gpu = {110, 120};
  const GpuHolding holds = [&](pid_t pid) -> std::optional<bool> { return on_gpu.count(pid) > 0; };
  auto s = SelectTargets(Pids({90}), r, User(1000), holds);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TracedPids(*s), std::vector<pid_t>({110, 120}));
  for (int32_t worker : {111, 112}) {
    const v1::AttachTarget* t = Skipped(*s, worker);
    ASSERT_NE(t, nullptr) << worker;
    EXPECT_THAT(t->reason(), HasSubstr("holds no GPU device while 110, 120 hold(s) one"));
  }
  const v1::AttachTarget* launcher = Skipped(*s, 100);
  ASSERT_NE(launcher, nullptr);
  EXPECT_THAT(launcher->reason(), HasSubstr("a launcher"));
  // Without a GPU holder (a CPU job) or unknown: the leaves, the rank skipped as their launcher.
  auto cpu =
      SelectTargets(Pids({90}), r, User(1000), [](pid_t) { return std::optional<bool>(false); });
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_THAT(TracedPids(*cpu), ::testing::UnorderedElementsAre(111, 112, 120));
  auto unknown =
      SelectTargets(Pids({90}), r, User(1000), [](pid_t) { return std::optional<bool>(); });
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_THAT(TracedPids(*unknown), ::testing::UnorderedElementsAre(111, 112, 120));
  // Every GPU holder busy with its own profiler: said as such.
  for (AttachableProcess& p : r) {
    if (on_gpu.count(p.pid) > 0) p.state = AttachState::kBusy;
  }
  auto busy = SelectTargets(Pids({90}), r, User(1000), holds);
  ASSERT_FALSE(busy.ok());
  EXPECT_THAT(busy.status().message(), HasSubstr("busy with its own torch.profiler"));
}

TEST(SelectTargets, AnotherUsersProcessIsRefused) {
  auto s = SelectTargets(Pids({400}), Tree(), User(1000));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("process 400 belongs to another user (uid 2000)"));
  EXPECT_THAT(s.status().message(), HasSubstr("only its owner or an admin may attach"));
  // An admin may; a process under a non-polling pid of the caller's counts only when its own.
  AttachOwner admin{"root", 0, true};
  auto by_admin = SelectTargets(Pids({400}), Tree(), admin);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status();
  EXPECT_EQ(TracedPids(*by_admin), std::vector<pid_t>({400}));
  // The uid of the owner decides, not the name.
  AttachOwner nobody{"x", std::nullopt, false};
  EXPECT_FALSE(SelectTargets(Pids({300}), Tree(), nobody).ok());
}

TEST(SelectTargets, NoMatchListsWhatIsRegisteredAndWhy) {
  auto s = SelectTargets(Pids({555}), Tree(), User(1000));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  const std::string msg(s.status().message());
  EXPECT_THAT(msg, HasSubstr("no process to trace for --pid 555"));
  EXPECT_THAT(msg, HasSubstr("process 555 does not poll this daemon and no process under it does"));
  EXPECT_THAT(msg, HasSubstr("300 (python x.py): neither 555 nor under it"));
  EXPECT_THAT(msg, HasSubstr("1 process(es) of other users poll too"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("400")));  // another user's pid is not disclosed
  auto none = SelectTargets(Pids({555}), {}, User(1000));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no process polls this daemon"));
  EXPECT_THAT(none.status().message(), HasSubstr("libreyolo profile attach --env"));
}

TEST(SelectTargets, BusyAndPendingAreSkipped) {
  std::vector<AttachableProcess> r = {Proc(300, 1000, {1}, AttachState::kBusy),
                                      Proc(301, 1000, {1}, AttachState::kPending)};
  auto one = SelectTargets(Pids({300}), r, User(1000));
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(one.status().message(), HasSubstr("busy with its own torch.profiler (300)"));
  v1::AttachSpec all;
  all.set_all(true);
  r.push_back(Proc(302, 1000, {1}));
  auto s = SelectTargets(all, r, User(1000));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TracedPids(*s), std::vector<pid_t>({302}));
  EXPECT_THAT(Skipped(*s, 300)->reason(), HasSubstr("busy"));
  EXPECT_THAT(Skipped(*s, 301)->reason(), HasSubstr("pending"));
}

TEST(SelectTargets, SlurmJobAndAll) {
  std::vector<AttachableProcess> r = Tree();
  r[3].facts.slurm_job_id = "4242";
  r[4].facts.slurm_job_id = "4242";  // another user's: not the caller's to trace
  v1::AttachSpec slurm;
  slurm.set_slurm_job_id("4242");
  auto s = SelectTargets(slurm, r, User(1000));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TracedPids(*s), std::vector<pid_t>({300}));
  v1::AttachSpec all;
  all.set_all(true);
  auto a = SelectTargets(all, r, User(1000));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(TracedPids(*a), std::vector<pid_t>({110, 120, 300}));  // 100: a launcher
  // An admin's --all of two users' processes traces the first user's.
  auto mixed = SelectTargets(Pids({300, 400}), r, AttachOwner{"root", 0, true});
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(TracedPids(*mixed), std::vector<pid_t>({300}));
  EXPECT_THAT(Skipped(*mixed, 400)->reason(), HasSubstr("a job of its own"));
}

// The owner is the daemon's record of the submitter (Job.owner_uid, owner_admin), not its name
// looked up again: a name that is some Unix user's gives nothing by itself.
TEST(ResolveOwner, FromTheJobsRecordNotItsName) {
  v1::Job job;
  job.set_owner("alice");
  job.set_owner_uid(4321);
  auto by_uid = ResolveOwner(job);
  ASSERT_TRUE(by_uid.ok());
  EXPECT_EQ(by_uid->uid, 4321u);
  EXPECT_FALSE(by_uid->admin);
  v1::Job root;
  root.set_owner("root");
  root.set_owner_uid(0);
  ASSERT_TRUE(ResolveOwner(root).ok());
  EXPECT_TRUE(ResolveOwner(root)->admin);
  v1::Job admin_token;  // an admin by token over TCP: no uid
  admin_token.set_owner("carol");
  admin_token.set_owner_admin(true);
  auto carol = ResolveOwner(admin_token);
  ASSERT_TRUE(carol.ok());
  EXPECT_TRUE(carol->admin);
  EXPECT_FALSE(carol->uid.has_value());
  v1::Job named_root;  // "root" by name only (a token user called root): not uid 0
  named_root.set_owner("root");
  auto token_user = ResolveOwner(named_root);
  ASSERT_FALSE(token_user.ok());
  EXPECT_EQ(token_user.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(token_user.status().message(), HasSubstr("has no Unix user"));
  EXPECT_THAT(token_user.status().message(), HasSubstr("attach over the daemon's Unix socket"));
  EXPECT_THAT(token_user.status().message(), HasSubstr("or ask an admin"));
}

TEST(IsUnixNameOf, TheNameTheDaemonGivesAUid) {
  EXPECT_TRUE(IsUnixNameOf("uid:4321", 4321));
  EXPECT_FALSE(IsUnixNameOf("uid:4321", 4322));
  EXPECT_TRUE(IsUnixNameOf("root", 0));
  EXPECT_FALSE(IsUnixNameOf("root", 4321));
  EXPECT_FALSE(IsUnixNameOf("uid:12x", 12));
}

TEST(KinetoConfigText, DurationMode) {
  v1::AttachSpec spec = Pids({300});
  spec.set_duration_ms(1500);
  spec.mutable_profiler()->add_activities("cpu");
  spec.mutable_profiler()->set_record_shapes(true);
  spec.mutable_profiler()->set_with_stack(true);
  const std::string text =
      KinetoConfigText(spec, TraceRequest{"/tmp/d/job1/job1.json", 1'700'000'000'123, "job1"});
  EXPECT_EQ(text,
            "ACTIVITIES_LOG_FILE=/tmp/d/job1/job1.json\n"
            "PROFILE_START_TIME=1700000000123\n"
            "ACTIVITIES_DURATION_MSECS=1500\n"
            "REQUEST_TRACE_ID=job1\n"
            "ACTIVITY_TYPES=cpu_op,user_annotation,python_function\n"
            "PROFILE_REPORT_INPUT_SHAPES=true\n"
            "PROFILE_WITH_STACK=true\n");
  v1::AttachSpec plain = Pids({300});  // the default window, every activity
  const std::string d = KinetoConfigText(plain, TraceRequest{"/tmp/a.json", 5, "j"});
  EXPECT_THAT(d, HasSubstr("ACTIVITIES_DURATION_MSECS=1000\n"));
  EXPECT_THAT(d, HasSubstr(",kernel,"));
  EXPECT_THAT(d, ::testing::Not(HasSubstr("PROFILE_PROFILE_MEMORY")));
}

// A window with nothing on a GPU to trace asks Kineto for no warm-up (its 5 s are CUPTI's):
// CPU activities only, or "cuda" asked of processes that hold no GPU. Iteration mode keeps
// Kineto's own (counted in iterations).
TEST(KinetoWarmupSecs, NoneWithNothingOnAGpuToTrace) {
  v1::AttachSpec cpu = Pids({300});
  cpu.mutable_profiler()->add_activities("cpu");
  EXPECT_EQ(KinetoWarmupSecs(cpu, /*any_gpu=*/true), 0);
  v1::AttachSpec all = Pids({300});  // every activity
  EXPECT_EQ(KinetoWarmupSecs(all, /*any_gpu=*/false), 0);
  EXPECT_EQ(KinetoWarmupSecs(all, /*any_gpu=*/true), std::nullopt);
  v1::AttachSpec cuda = Pids({300});
  cuda.mutable_profiler()->add_activities("cpu");
  cuda.mutable_profiler()->add_activities("cuda");
  EXPECT_EQ(KinetoWarmupSecs(cuda, /*any_gpu=*/true), std::nullopt);
  v1::AttachSpec steps = cpu;
  steps.set_iterations(3);
  EXPECT_EQ(KinetoWarmupSecs(steps, /*any_gpu=*/false), std::nullopt);
  TraceRequest request{"/tmp/a.json", 5, "j"};
  EXPECT_THAT(KinetoConfigText(cpu, request), ::testing::Not(HasSubstr("WARMUP")));
  request.warmup_s = 0;
  EXPECT_THAT(KinetoConfigText(cpu, request),
              HasSubstr("ACTIVITIES_DURATION_MSECS=1000\nACTIVITIES_WARMUP_PERIOD_SECS=0\n"));
  EXPECT_THAT(KinetoConfigText(steps, request), ::testing::Not(HasSubstr("WARMUP")));
}

TEST(KinetoConfigText, IterationMode) {
  v1::AttachSpec spec = Pids({300});
  spec.set_iterations(5);
  spec.mutable_profiler()->add_activities("cuda");
  spec.mutable_profiler()->set_profile_memory(true);
  spec.mutable_profiler()->set_with_flops(true);
  spec.mutable_profiler()->set_with_modules(true);
  const std::string text = KinetoConfigText(spec, TraceRequest{"/tmp/x/j.json", 77, "j"});
  EXPECT_THAT(text, HasSubstr("PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=1\n"
                              "ACTIVITIES_ITERATIONS=5\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("PROFILE_START_TIME")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("DURATION")));
  EXPECT_THAT(text, HasSubstr("ACTIVITY_TYPES=gpu_user_annotation,gpu_memcpy,gpu_memset,kernel,"
                              "cuda_runtime,cuda_driver\n"));
  EXPECT_THAT(text, HasSubstr("PROFILE_PROFILE_MEMORY=true\nPROFILE_WITH_FLOPS=true\n"
                              "PROFILE_WITH_MODULES=true\n"));
}

TEST(SharedStart, EveryTargetPollsAndWarmsUpFirst) {
  const int64_t now = 2'000'000;
  AttachableProcess recent = Proc(1, 1, {});
  recent.last_poll_unix_ms = now - 1000;  // next poll due at now + 4 s
  AttachableProcess older = Proc(2, 1, {});
  older.last_poll_unix_ms = now - 4500;  // due at now + 0.5 s
  const int64_t extra = kPollSlack.count() + kKinetoWarmup.count() + kKinetoTicks.count();
  EXPECT_EQ(SharedStartUnixMs({older}, now), now + 500 + extra);
  EXPECT_EQ(SharedStartUnixMs({older, recent}, now), now + 4000 + extra);
  AttachableProcess overdue = Proc(3, 1, {});
  overdue.last_poll_unix_ms = now - 9000;  // late already: due any moment
  EXPECT_EQ(SharedStartUnixMs({overdue}, now), now + extra);
  // No warm-up asked: the start is that much sooner.
  EXPECT_EQ(SharedStartUnixMs({older}, now, std::chrono::milliseconds(0)),
            now + 500 + extra - kKinetoWarmup.count());
  EXPECT_EQ(TraceFileName("20261206-ab", 4242), "20261206-ab_4242.json");
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(TraceArrivals, AFinalNameArrivesByRenameNotWhileTmp) {
  ::libreyolo::test::TempDir dir("arrivals");
  auto watch = TraceArrivals::Watch(dir.path());
  ASSERT_TRUE(watch.ok()) << watch.status();
  const std::string name = TraceFileName("job", 4242);
  // Kineto's way: <name>.tmp written and closed, then renamed.
  Put(dir.File(name + ".tmp"), "{\"trace_id\": \"job\"");
  auto soon = [] { return std::chrono::steady_clock::now() + milliseconds(300); };
  EXPECT_TRUE((*watch)->WaitFor({name}, soon(), nullptr, milliseconds(50)).empty());
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    std::rename(dir.File(name + ".tmp").c_str(), dir.File(name).c_str());
  });
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> got = (*watch)->WaitFor(
      {name}, std::chrono::steady_clock::now() + milliseconds(5000), nullptr, milliseconds(1000));
  producer.join();
  EXPECT_EQ(got, std::vector<std::string>({name}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));  // woken, not ticked
}

TEST(TraceArrivals, CloseWriteCountsAndOthersWaitForTheDeadlineOrStop) {
  ::libreyolo::test::TempDir dir("arrivals");
  auto watch = TraceArrivals::Watch(dir.path());
  ASSERT_TRUE(watch.ok()) << watch.status();
  Put(dir.File("job_1.json"), "{}");  // written under its final name at once
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(400);
  const std::vector<std::string> got =
      (*watch)->WaitFor({"job_1.json", "job_2.json"}, deadline, nullptr, milliseconds(50));
  EXPECT_EQ(got, std::vector<std::string>({"job_1.json"}));
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    stop = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  (*watch)->WaitFor({"job_2.json"}, t0 + milliseconds(10000), [&] { return stop.load(); },
                    milliseconds(20));
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2000));
  EXPECT_FALSE(TraceArrivals::Watch(dir.File("missing")).ok());
}

}  // namespace
}  // namespace libreyolo::daemon::attach
