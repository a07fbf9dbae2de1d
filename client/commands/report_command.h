// `libreyolo profile report`: one self-contained HTML page for a profile, or for a comparison
// of two (common/report/report_html.h), written atomically.
#ifndef LIBREYOLO_CLIENT_COMMANDS_REPORT_COMMAND_H_
#define LIBREYOLO_CLIENT_COMMANDS_REPORT_COMMAND_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/args.h"

namespace libreyolo::cli {

CommandSpec ReportCommandSpec();
int RunReport(const ParsedArgs& args, std::ostream& out, std::ostream& err);

// Renders the report of one local input (or a comparison of two) and writes it to `output`
// ("-": returned only, not written). `labels` name the inputs on the page. Errors carry the
// exit codes of common/status/exit_code.h (DATA_LOSS exit 1, a bad input or -o exit 2).
// Returns the page.
absl::StatusOr<std::string> WriteReport(const std::vector<std::string>& paths,
                                        const std::vector<std::string>& labels,
                                        const std::string& output);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_REPORT_COMMAND_H_
