// `libreyolo profile attach` (issue 37): trace running PyTorch processes as a job (--pid,
// --slurm-job, --all: their own Kineto writes the traces, analysed into the job), make them
// attachable by libreyolod
// (--env: the environment for `env $(libreyolo profile attach --env) python train.py`) and see
// who is (--list: the processes polling the daemon over Kineto's on-demand protocol).
#ifndef LIBREYOLO_CLIENT_COMMANDS_ATTACH_COMMAND_H_
#define LIBREYOLO_CLIENT_COMMANDS_ATTACH_COMMAND_H_

#include "client/commands/job_commands.h"

namespace libreyolo::cli {

const JobCommand& AttachCommand();

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_ATTACH_COMMAND_H_
