// Runs a shell command line (a Python reference script, in the python_peer tests) and reads its
// standard output as one JSON object.
#ifndef LIBREYOLO_TESTS_SUPPORT_JSON_COMMAND_H_
#define LIBREYOLO_TESTS_SUPPORT_JSON_COMMAND_H_

#include <rapidjson/document.h>
#include <stdio.h>
#include <sys/wait.h>

#include <string>

namespace libreyolo::test {

// "" when `command` exited 0 and printed a JSON object into `*json`; else what went wrong.
inline std::string RunJsonCommand(const std::string& command, rapidjson::Document* json) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run " + command;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "python failed: " + command;
  json->Parse(out.c_str());
  if (json->HasParseError() || !json->IsObject()) return "not JSON: " + out;
  return "";
}

}  // namespace libreyolo::test

#endif  // LIBREYOLO_TESTS_SUPPORT_JSON_COMMAND_H_
