// Issue 36 §6: the private daemon's retention is sized for a workstation. The flags the client
// starts it with are the daemon's own (parsed by its flag table, as libreyolod parses them) and
// set a shorter history than a shared daemon's default.
#include <gtest/gtest.h>

#include "client/remote/private_daemon.h"
#include "server/daemon/config/daemon_config.h"

namespace libreyolo {
namespace {

TEST(PrivateDaemonRetention, TheClientsFlagsSetAWorkstationSizedHistory) {
  const daemon::DaemonConfig shared;  // a shared daemon's defaults
  daemon::DaemonConfig config;
  const auto parsed = daemon::ApplyDaemonFlags(cli::PrivateDaemonRetentionFlags(), &config);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(config.retention.max_jobs, cli::kPrivateRetentionMaxJobs);
  EXPECT_EQ(config.retention.max_age_hours, cli::kPrivateRetentionMaxAgeHours);
  EXPECT_LT(config.retention.max_jobs, shared.retention.max_jobs);
  EXPECT_LT(config.retention.max_age_hours, shared.retention.max_age_hours);
  EXPECT_GT(config.retention.max_jobs, 0);  // 0 would mean no cap
  EXPECT_GT(config.retention.max_age_hours, 0);
}

}  // namespace
}  // namespace libreyolo
