// Checks that two TraceData hold the same events, strings, samples, span, device and parse
// statistics (SameTraceData), and so give the same analysis: the in-memory events a job
// analyses against the reader's view of the file it wrote.
#ifndef LIBREYOLO_TESTS_ENGINE_COLLECT_TRACE_PARITY_H_
#define LIBREYOLO_TESTS_ENGINE_COLLECT_TRACE_PARITY_H_

#include <gtest/gtest.h>

#include "common/analysis/profile_json_write.h"
#include "common/analysis/trace_analyser.h"
#include "common/trace/trace_reader.h"

namespace libreyolo::engine {

inline void ExpectSameTraceData(const TraceData& built, const TraceData& read) {
  std::string why;
  EXPECT_TRUE(SameTraceData(built, read, &why)) << why;
  // And so the same analysis, number for number.
  EXPECT_EQ(WriteProfileJson(AnalyseTrace(built)), WriteProfileJson(AnalyseTrace(read)));
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_TESTS_ENGINE_COLLECT_TRACE_PARITY_H_
