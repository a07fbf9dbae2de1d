// `libreyolo profile compare BEFORE AFTER --fail-if-slower PCT`: the comparison with the CI
// gate's verdict (common/analysis/compare_gate.h) first, and the verdict's exit code (0 PASS,
// 4 FAIL, 5 INCONCLUSIVE: common/status/exit_code.h).
#ifndef LIBREYOLO_CLIENT_COMMANDS_COMPARE_GATE_COMMAND_H_
#define LIBREYOLO_CLIENT_COMMANDS_COMPARE_GATE_COMMAND_H_

#include <ostream>

#include "client/cli/args.h"

namespace libreyolo::cli {

// The flags, for compare's spec: the threshold, and the drift between jobs the interval
// includes (common/analysis/compare_gate.h).
FlagSpec FailIfSlowerFlagSpec();
FlagSpec JobDriftFlagSpec();

// Runs compare with the gate; `a` has --fail-if-slower. Inputs stored on a daemon (job:<id>)
// are downloaded first and read here, like `report` does.
int RunCompareGate(const ParsedArgs& a, std::ostream& out, std::ostream& err);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_COMPARE_GATE_COMMAND_H_
