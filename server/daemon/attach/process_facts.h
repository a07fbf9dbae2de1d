// What /proc says of a process that polls the attach endpoint: its pid as seen inside its own
// pid namespace (to check the pid it sent against the kernel's), its ancestors, command line,
// and the Slurm job and ranks of its environment (readable when the daemon runs as root or as
// the process's user). Best effort: an unreadable file leaves its field empty.
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_PROCESS_FACTS_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_PROCESS_FACTS_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "server/daemon/attach/attach_registry.h"

namespace libreyolo::daemon::attach {

// The innermost pid of `pid` (the last NSpid of /proc/<pid>/status: the pid the process knows
// itself by), nullopt when the process is gone. `proc_root` is "/proc" but for tests.
std::optional<pid_t> NamespacePid(pid_t pid, const std::string& proc_root = "/proc");

// Ancestors (PPid chain, parent first, stopping after pid 1 or at 64), command line, and
// SLURM_JOB_ID / RANK / LOCAL_RANK / WORLD_SIZE / KINETO_ONDEMAND_TRACE_DIR of the environment.
ProcessFacts ReadProcessFacts(pid_t pid, const std::string& proc_root = "/proc");

// Whether `pid` holds a GPU now: an open descriptor of /dev/nvidia<N>, /dev/kfd or
// /dev/dri/renderD<N> in /proc/<pid>/fd. nullopt when that folder cannot be read (another
// user's process and the daemon not root): unknown, which the attach job takes as "it may".
std::optional<bool> HoldsGpuDevice(pid_t pid, const std::string& proc_root = "/proc");

// The facts of an environment block (NUL-separated NAME=value), for ReadProcessFacts and tests.
void ParseEnviron(absl::string_view environ_block, ProcessFacts* facts);

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_PROCESS_FACTS_H_
