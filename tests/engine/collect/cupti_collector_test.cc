// The collector's life cycle on whatever host runs the tests. On a machine without the CUDA
// driver (CI, a laptop) it must start, stay inactive and explain itself in one note.
#include "server/engine/collect/cupti_collector.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace libreyolo::engine {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

bool HostHasDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  return h != nullptr;  // left open, as the collector leaves it
}

TEST(CuptiCollector, InactiveCollectionStopsWithOneNote) {
  auto c = CuptiCollector::Start({});
  ASSERT_TRUE(c.ok()) << c.status();
  if ((*c)->active()) GTEST_SKIP() << "this host records GPU activity (see ActiveCollection)";
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->events.empty());
  EXPECT_EQ(t->device_properties_json, "[]");
  ASSERT_EQ(t->notes.size(), 1u);
  const std::string& note = t->notes[0];
  EXPECT_THAT(note, StartsWith("CUPTI: "));
  EXPECT_THAT(note, EndsWith("; GPU activity not recorded"));
  EXPECT_EQ(note.find('\n'), std::string::npos);
  if (!CuptiBuilt()) {
    EXPECT_EQ(note,
              "CUPTI: not in this build (configure with -DLIBREYOLO_CUPTI=ON and the CUDA "
              "toolkit); GPU activity not recorded");
  } else if (!HostHasDriver()) {
    EXPECT_EQ(note,
              "CUPTI: no CUDA driver on this host (libcuda.so.1 not found); GPU activity not "
              "recorded");
  }
  EXPECT_EQ((*c)->Stop().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CuptiCollector, OneCollectionPerProcess) {
  auto first = CuptiCollector::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = CuptiCollector::Start({});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  first->reset();  // destroying a running collection ends it
  auto third = CuptiCollector::Start({});
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_TRUE((*third)->Stop().ok());
  auto fourth = CuptiCollector::Start({});  // and so does Stop
  EXPECT_TRUE(fourth.ok()) << fourth.status();
}

TEST(CuptiCollector, ActiveCollection) {
  auto c = CuptiCollector::Start({});
  ASSERT_TRUE(c.ok()) << c.status();
  if (!(*c)->active()) GTEST_SKIP() << "no GPU activity on this host";
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->clock_samples.empty());
  for (const std::string& note : t->notes) {
    EXPECT_THAT(note, ::testing::Not(EndsWith("GPU activity not recorded")));
    // Every CUPTI result is read (cupti_call.h): on a healthy host none of them failed.
    EXPECT_THAT(note, ::testing::Not(::testing::HasSubstr("cuptiActivity")));
  }
}

}  // namespace
}  // namespace libreyolo::engine
