// Test hooks of the rank-folder reader (ranks_view.cc). Not an interface: the reader and its
// tests only.
#ifndef LIBREYOLO_COMMON_READERS_RANKS_VIEW_INTERNAL_H_
#define LIBREYOLO_COMMON_READERS_RANKS_VIEW_INTERNAL_H_

#include <atomic>

namespace libreyolo::internal {

// Issue 39 §4: while > 0, each rank trace read (RankPasses::Read) takes one and throws
// std::runtime_error("injected by the test") before reading its file.
extern std::atomic<int> g_rank_read_throws_for_test;

}  // namespace libreyolo::internal

#endif  // LIBREYOLO_COMMON_READERS_RANKS_VIEW_INTERNAL_H_
