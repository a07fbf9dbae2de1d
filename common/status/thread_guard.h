// The catch-all at the top of a thread (issue 39 §4). An exception that escapes a thread's body
// would call std::terminate and take the whole process down without a word about which thread
// or why; every thread the daemon and the trace reader start runs its body through RunGuarded
// instead, which logs one line naming the thread and takes the thread's defined action (fail
// the job, keep the daemon up, mark the reader failed). No gRPC, no LibTorch.
#ifndef LIBREYOLO_COMMON_STATUS_THREAD_GUARD_H_
#define LIBREYOLO_COMMON_STATUS_THREAD_GUARD_H_

#include <exception>
#include <functional>
#include <string>
#include <string_view>

namespace libreyolo {

// What an exception says: what() for a std::exception (escaped, at most 240 bytes), else
// "an exception that is not a std::exception".
std::string DescribeException(const std::exception_ptr& e);

// The one line an exception that ended `thread`'s body leaves in the log (no newline inside):
// "libreyolo: thread 'job worker cuda:0' threw: std::bad_alloc; the job fails".
std::string ThreadExceptionLine(std::string_view thread, std::string_view what,
                                std::string_view action);

// Runs `body`. True when it returned. When anything escapes it: writes ThreadExceptionLine
// (with `action`, what the caller then does) to stderr in one write, runs `on_throw` with
// DescribeException's text (the action itself: fail the job, mark the reader failed, ...; it
// must not throw), and returns false. Nothing escapes RunGuarded but what `on_throw` throws.
bool RunGuarded(std::string_view thread, std::string_view action,
                const std::function<void()>& body,
                const std::function<void(const std::string& what)>& on_throw = nullptr);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_STATUS_THREAD_GUARD_H_
