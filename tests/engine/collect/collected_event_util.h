// A CollectedEvent of the given kind, name, start, duration (ns) and thread, for the collect
// tests' hand-made traces.
#ifndef LIBREYOLO_TESTS_ENGINE_COLLECT_COLLECTED_EVENT_UTIL_H_
#define LIBREYOLO_TESTS_ENGINE_COLLECT_COLLECTED_EVENT_UTIL_H_

#include <cstdint>
#include <string>

#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

inline CollectedEvent Ev(CollectedKind kind, const std::string& name, int64_t start_ns,
                         int64_t dur_ns, uint64_t thread) {
  CollectedEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start_ns;
  e.dur_ns = dur_ns;
  e.thread = thread;
  return e;
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_TESTS_ENGINE_COLLECT_COLLECTED_EVENT_UTIL_H_
