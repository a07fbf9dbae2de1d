#include "client/commands/command_output.h"

#include <google/protobuf/util/json_util.h>

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "common/json/json_writer.h"
#include "common/render/terminal_text.h"
#include "common/status/exit_code.h"

namespace libreyolo::cli {


// Messages may carry the daemon's text: printed through TerminalSafe, like every remote string.
int Fail(std::ostream& err, const std::string& cmd, int code, const std::string& msg) {
  err << "libreyolo " << cmd << ": error: " << TerminalSafe(msg, /*multiline=*/true) << "\n";
  return code;
}

void JsonLine(std::ostream& err, const std::string& event,
              const std::vector<std::pair<std::string, std::string>>& fields,
              std::optional<int64_t> exit_code) {
  JsonWriter w(/*pretty=*/false);
  w.BeginObject().Field("event", event);
  for (const auto& [k, v] : fields) w.Field(k, v);
  if (exit_code) w.Field("exit_code", *exit_code);
  w.EndObject();
  err << absl::StripTrailingAsciiWhitespace(w.Take()) << "\n";
  err.flush();
}

int FailJob(std::ostream& err, const std::string& cmd, int code, const std::string& msg,
            bool json) {
  if (!json) return Fail(err, cmd, code, msg);
  JsonLine(err, "error", {{"command", absl::StrCat("libreyolo ", cmd)}, {"message", msg}}, code);
  return code;
}

int FailStatus(std::ostream& err, const std::string& cmd, const absl::Status& s) {
  return Fail(err, cmd, ExitCodeForStatus(s), std::string(s.message()));
}

int FailJobStatus(std::ostream& err, const std::string& cmd, const absl::Status& s, bool json) {
  if (!json) return FailStatus(err, cmd, s);
  std::ostringstream sink;  // the exit code FailStatus would choose, without its plain line
  const int code = FailStatus(sink, cmd, s);
  return FailJob(err, cmd, code, std::string(s.message()), true);
}

std::string ProtoJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

}  // namespace libreyolo::cli
