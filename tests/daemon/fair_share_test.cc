// JobManager's fair-share seam as its own unit (server/daemon/jobs/fair_share.h): the pick of
// the next job by device time used, the ties, a user joining a busy period, the mean run that
// projects later turns, and the usage rebuilt after a restart from each job's run clock.
#include "server/daemon/jobs/fair_share.h"

#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <string>
#include <vector>

namespace libreyolo::daemon {
namespace {

// The users of Order's result, in order.
std::vector<std::string> Users(const FairShare& fs, const std::vector<FairShare::Queued>& q,
                               const std::map<std::string, int64_t>& running = {}) {
  std::vector<std::string> out;
  auto usage = [&](const std::string& u) {
    auto it = running.find(u);
    return fs.Used(u) + (it == running.end() ? 0 : it->second);
  };
  for (size_t i : fs.Order(q, usage)) out.push_back(q[i].user);
  return out;
}

TEST(FairShareTest, LeastUsedGoesFirstAndTurnsAlternate) {
  FairShare fs;
  fs.Finished("alice", 5000, 1);
  // alice has used 5 s; bob nothing: bob's turns come first until his projected usage (mean
  // run 5 s per turn) passes hers, then they alternate.
  const std::vector<FairShare::Queued> q = {
      {"alice", 0, 1}, {"alice", 0, 2}, {"bob", 0, 3}, {"bob", 0, 4}};
  EXPECT_EQ(Users(fs, q), (std::vector<std::string>{"bob", "alice", "bob", "alice"}));
  // bob's running job has used 20 s so far: both of alice's jobs go first.
  EXPECT_EQ(Users(fs, q, {{"bob", 20000}}),
            (std::vector<std::string>{"alice", "alice", "bob", "bob"}));
}

TEST(FairShareTest, WithinAUserPriorityThenSubmission) {
  FairShare fs;
  const std::vector<FairShare::Queued> q = {{"u", 0, 1}, {"u", 5, 3}, {"u", 5, 2}, {"u", -1, 0}};
  std::vector<size_t> order = fs.Order(q, [&](const std::string& u) { return fs.Used(u); });
  EXPECT_EQ(order, (std::vector<size_t>{2, 1, 0, 3}));
}

TEST(FairShareTest, TiesGoToWhoStartedLeastRecentlyThenTheEarliestJob) {
  FairShare fs;
  // Nobody has used anything: the earliest job first.
  EXPECT_EQ(Users(fs, {{"bob", 0, 2}, {"alice", 0, 1}}), (std::vector<std::string>{"alice", "bob"}));
  // alice started after bob: bob goes first although her job is older.
  fs.Started("bob");
  fs.Started("alice");
  EXPECT_EQ(Users(fs, {{"bob", 0, 2}, {"alice", 0, 1}}), (std::vector<std::string>{"bob", "alice"}));
}

TEST(FairShareTest, AJoinerStartsLevelWithTheLeastServedAndAnIdleDaemonWipesTheSlate) {
  FairShare fs;
  fs.Finished("alice", 3000, 1);
  fs.Finished("bob", 1000, 2);  // a gang of two slots: 2 s
  auto usage = [&](const std::string& u) { return fs.Used(u); };
  fs.Join("carol", {"alice", "bob"}, usage);
  EXPECT_EQ(fs.Used("carol"), 2000);
  // One already in the busy period keeps what it used.
  fs.Join("alice", {"alice", "bob"}, usage);
  EXPECT_EQ(fs.Used("alice"), 3000);
  // Nobody queued or running: everyone starts level.
  fs.Join("alice", {}, usage);
  EXPECT_EQ(fs.Used("alice"), 0);
  EXPECT_EQ(fs.Used("bob"), 0);
  EXPECT_EQ(fs.Used("carol"), 0);
}

TEST(FairShareTest, TheAttachLaneIsBilledNothingButCountsForTheMeanRun) {
  FairShare fs;
  EXPECT_EQ(fs.MeanRunMs(), FairShare::kDefaultRunMs);
  fs.Finished("alice", 4000, 0);
  EXPECT_EQ(fs.Used("alice"), 0);
  fs.Finished("alice", 2000, 1);
  EXPECT_EQ(fs.Used("alice"), 2000);
  EXPECT_EQ(fs.MeanRunMs(), 3000);
  fs.Finished("bob", 0, 1);
  EXPECT_EQ(fs.MeanRunMs(), 2000);
}

TEST(FairShareTest, RebuildCountsTheRunClockInsideTheBusyPeriod) {
  FairShare fs;
  fs.Finished("stale", 9000, 1);
  const int64_t since = 1'000'000;
  fs.Rebuild(since, {
                        // Inside the busy period: its run clock x slots, not its wall span (a
                        // clock step made that days long).
                        {"alice", since + 10, since + 86'400'000, 500, 2},
                        // Started before it: the part after, at most the time it ran.
                        {"bob", since - 5000, since + 300, 4000, 1},
                        {"carol", since - 5000, since + 9000, 700, 1},
                        // Never started, or no run clock: nothing.
                        {"dave", 0, 0, 0, 1},
                        {"erin", since + 1, since + 2, -1, 1},
                    });
  EXPECT_EQ(fs.Used("stale"), 0);
  EXPECT_EQ(fs.Used("alice"), 1000);
  EXPECT_EQ(fs.Used("bob"), 300);
  EXPECT_EQ(fs.Used("carol"), 700);
  EXPECT_EQ(fs.Used("dave"), 0);
  EXPECT_EQ(fs.Used("erin"), 0);
  // Nothing queued: everyone level.
  fs.Rebuild(INT64_MAX, {{"alice", since + 10, since + 20, 500, 1}});
  EXPECT_EQ(fs.Used("alice"), 0);
}

}  // namespace
}  // namespace libreyolo::daemon
