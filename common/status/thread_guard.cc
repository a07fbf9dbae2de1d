#include "common/status/thread_guard.h"

#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace libreyolo {
namespace {

constexpr size_t kMaxWhatBytes = 240;

}  // namespace

std::string DescribeException(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    const std::string_view what = ex.what() != nullptr ? ex.what() : "";
    const std::string_view head = what.substr(0, kMaxWhatBytes);
    std::string escaped = absl::CEscape(absl::string_view(head.data(), head.size()));
    if (what.size() > kMaxWhatBytes) absl::StrAppend(&escaped, "...");
    return escaped.empty() ? "a std::exception with no message" : escaped;
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::string ThreadExceptionLine(std::string_view thread, std::string_view what,
                                std::string_view action) {
  std::string line = "libreyolo: thread '";
  line += absl::CEscape(absl::string_view(thread.data(), thread.size()));
  line += "' threw: ";
  line += what;
  line += "; ";
  line += action;
  return line;
}

bool RunGuarded(std::string_view thread, std::string_view action,
                const std::function<void()>& body,
                const std::function<void(const std::string& what)>& on_throw) {
  try {
    body();
    return true;
  } catch (...) {
    const std::string what = DescribeException(std::current_exception());
    const std::string line = absl::StrCat(ThreadExceptionLine(thread, what, action), "\n");
    // One write(2): lines of threads that fail together never interleave.
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    if (on_throw) on_throw(what);
    return false;
  }
}

}  // namespace libreyolo
