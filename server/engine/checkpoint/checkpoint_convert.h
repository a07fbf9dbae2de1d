// Turns the unpickled object graph of a torch.save archive into a Checkpoint: finds the state
// dict, checks every tensor against its storage, and collects the metadata. Internal to the
// checkpoint reader.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_CONVERT_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/checkpoint/pickle.h"
#include "server/engine/checkpoint/zip_archive.h"

namespace libreyolo::engine {

// `prefix` is the archive's folder ("name/"): storage `key` is the entry prefix + "data/" + key.
absl::StatusOr<Checkpoint> ConvertCheckpoint(const PickleGraph& graph, const ZipArchive& zip,
                                             const std::string& prefix, const std::string& what);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_CONVERT_H_
