// The output conventions of the job commands (`profile run|infer`, `jobs ...`): an error line
// with its exit code, the JSON lines `--json` writes to stderr, a proto message as JSON. Every
// string that may come from a daemon goes through TerminalSafe.
#ifndef LIBREYOLO_CLIENT_COMMANDS_COMMAND_OUTPUT_H_
#define LIBREYOLO_CLIENT_COMMANDS_COMMAND_OUTPUT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace libreyolo::cli {

// "libreyolo <cmd>: error: <msg>" on `err`; returns `code`.
int Fail(std::ostream& err, const std::string& cmd, int code, const std::string& msg);

// `run`/`infer --json`: stderr carries JSON lines only (progress events and these), so a
// program can parse every line of it; stdout is the one result document.
void JsonLine(std::ostream& err, const std::string& event,
              const std::vector<std::pair<std::string, std::string>>& fields,
              std::optional<int64_t> exit_code = std::nullopt);

// Fail, or with `json` an "error" JSON line carrying the exit code.
int FailJob(std::ostream& err, const std::string& cmd, int code, const std::string& msg,
            bool json);

// Exit 2 for what the user can fix in the command line or setup; 1 otherwise.
int FailStatus(std::ostream& err, const std::string& cmd, const absl::Status& s);
int FailJobStatus(std::ostream& err, const std::string& cmd, const absl::Status& s, bool json);

// A message as JSON with the proto's field names, indented.
std::string ProtoJson(const google::protobuf::Message& m);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_COMMAND_OUTPUT_H_
