// JobManager's gang seam as its own unit (server/daemon/jobs/gang_placement.h): where a
// data-parallel request's ranks go and the errors that name what the daemon has, one forming
// gang at a time, devices held until all of a gang's are (and idle), and letting them go.
#include "server/daemon/jobs/gang_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace libreyolo::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::vector<std::string> kServed = {"cuda:0", "cuda:1", "cuda:2", "cpu"};

v1::RunSpec Nproc(int32_t n) {
  v1::RunSpec run;
  run.mutable_data_parallel()->set_nproc(n);
  return run;
}

v1::RunSpec Devices(const std::vector<std::string>& devices) {
  v1::RunSpec run;
  for (const std::string& d : devices) run.mutable_data_parallel()->add_devices(d);
  return run;
}

TEST(GangPlacementTest, PlacesRanksOnTheFirstSlotsOfTheKind) {
  auto one = GangPlacement::Place(v1::RunSpec(), "cuda:0", kServed);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(*one, IsEmpty());  // a single-rank job is no gang
  auto two = GangPlacement::Place(Nproc(2), "cuda:1", kServed);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(*two, ElementsAre("cuda:0", "cuda:1"));
  auto too_many = GangPlacement::Place(Nproc(4), "cuda:0", kServed);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(too_many.status().message(),
              HasSubstr("4 ranks, but this daemon has 3 CUDA slots (cuda:0, cuda:1, cuda:2)"));
  auto cpu = GangPlacement::Place(Nproc(2), "cpu", kServed);
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cpu.status().message(), HasSubstr("libreyolod --device cpu --device cpu:1"));
}

TEST(GangPlacementTest, TheAttachLaneIsNeverARanksSlot) {
  // A one-GPU daemon serving the attach endpoint lists "attach" among its lanes.
  const std::vector<std::string> served = {"cuda:0", "attach"};
  auto two = GangPlacement::Place(Nproc(2), "cuda:0", served);
  EXPECT_EQ(two.status().code(), absl::StatusCode::kFailedPrecondition) << two.status();
  EXPECT_THAT(two.status().message(), HasSubstr("this daemon has 1 CUDA slot (cuda:0);"));
  auto named = GangPlacement::Place(Devices({"cuda:0", "attach"}), "cuda:0", served);
  EXPECT_FALSE(named.ok());
}

TEST(GangPlacementTest, NamedDevicesAreCheckedAgainstWhatTheDaemonServes) {
  auto named = GangPlacement::Place(Devices({"2", "cuda:0"}), "cuda:0", kServed);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_THAT(*named, ElementsAre("cuda:2", "cuda:0"));
  struct Bad {
    std::vector<std::string> devices;
    std::string why;
  };
  for (const Bad& bad : std::vector<Bad>{{{"cuda:0", "0"}, "cuda:0 is named twice"},
                                         {{"cuda:0", "cpu"}, "cpu is not of --device cuda:0's"},
                                         {{"cuda:0", "cuda:7"}, "cuda:7 is not served"},
                                         {{"gpu0"}, "--devices (run.data_parallel.devices): "}}) {
    auto placed = GangPlacement::Place(Devices(bad.devices), "cuda:0", kServed);
    EXPECT_EQ(placed.status().code(), absl::StatusCode::kInvalidArgument) << bad.why;
    EXPECT_THAT(placed.status().message(), HasSubstr(bad.why));
  }
}

TEST(GangPlacementTest, OneGangFormsAtATime) {
  GangPlacement g;
  EXPECT_EQ(g.forming(), "");
  EXPECT_TRUE(g.Form("a"));
  EXPECT_TRUE(g.Form("a"));
  EXPECT_FALSE(g.Form("b"));  // waits behind a
  EXPECT_EQ(g.forming(), "a");
  g.Started("b");  // not the forming one: nothing changes
  EXPECT_EQ(g.forming(), "a");
  g.Started("a");
  EXPECT_EQ(g.forming(), "");
  EXPECT_TRUE(g.Form("b"));
}

TEST(GangPlacementTest, AGangStartsWhenEachOfItsDevicesIsHeldAndIdle) {
  GangPlacement g;
  std::set<std::string> busy = {"cuda:1"};
  auto running = [&](const std::string& d) { return busy.count(d) > 0; };
  const std::vector<std::string> devices = {"cuda:0", "cuda:1"};
  ASSERT_TRUE(g.Form("a"));
  EXPECT_FALSE(g.Reserve("a", "cuda:0", devices, running));  // cuda:1 not held yet
  EXPECT_TRUE(g.HeldFor("cuda:0", "a"));
  EXPECT_FALSE(g.HeldFor("cuda:1", "a"));
  EXPECT_FALSE(g.Reserve("a", "cuda:1", devices, running));  // held, but still running a job
  busy.clear();
  EXPECT_TRUE(g.Reserve("a", "cuda:1", devices, running));
  g.Started("a");
  EXPECT_TRUE(g.HeldFor("cuda:0", "a"));  // held until it has run
  EXPECT_TRUE(g.Release("a"));
  EXPECT_FALSE(g.HeldFor("cuda:0", "a"));
  EXPECT_FALSE(g.HeldFor("cuda:1", "a"));
  EXPECT_FALSE(g.Release("a"));  // nothing left to let go
}

TEST(GangPlacementTest, ReleasingAFormingGangLetsItsDevicesAndTheFormingGo) {
  GangPlacement g;
  ASSERT_TRUE(g.Form("a"));
  EXPECT_FALSE(g.Reserve("a", "cuda:0", {"cuda:0", "cuda:1"}, [](const std::string&) {
    return false;
  }));
  EXPECT_FALSE(g.Release("b"));
  EXPECT_TRUE(g.HeldFor("cuda:0", "a"));
  EXPECT_TRUE(g.Release("a"));  // cancelled while forming
  EXPECT_EQ(g.forming(), "");
  EXPECT_FALSE(g.HeldFor("cuda:0", "a"));
}

}  // namespace
}  // namespace libreyolo::daemon
