// `profile run NAME` on this machine (a private daemon): a bare dataset name that the daemon's
// datasets directory does not hold is looked up where the Python LibreYOLO looks, so a name
// that works with its `libreyolo profile run` works here, and one that is not downloaded says
// so with the command that downloads it (issue 36 §6).
//
// Order, after the argument is not an existing path (job_request.cc sends those as absolute):
//   1. the daemon's datasets directory ($LIBREYOLO_DATASETS, else ~/.cache/libreyolo/datasets):
//      <dir>/NAME.yaml, <dir>/NAME/NAME.yaml, <dir>/NAME/data.yaml, <dir>/NAME: sent as NAME;
//   2. ./NAME.yaml (the Python tool's current-directory lookup): sent as its absolute path;
//   3. the Python LibreYOLO's built-in YAML (libreyolo/config/datasets/NAME.yaml in the package
//      beside its CLI): sent as its path when the dataset it names is there (its `path:` under
//      $LIBREYOLO_DATASETS_DIR, else ~/datasets, else beside the YAML, as the Python tool
//      resolves it, and the engine too); NOT_FOUND "not downloaded" with the command when not;
//   4. no Python tool: NOT_FOUND naming the places, and the command that downloads the Python
//      tool's built-in datasets; a Python tool without that YAML: NAME unchanged (the daemon
//      answers with the places it looked).
#ifndef LIBREYOLO_CLIENT_COMMANDS_DATASET_NAME_H_
#define LIBREYOLO_CLIENT_COMMANDS_DATASET_NAME_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace libreyolo::cli {

struct DatasetPlaces {
  std::string ours;                       // the private daemon's datasets directory
  std::string python_datasets;            // $LIBREYOLO_DATASETS_DIR, else ~/datasets
  std::optional<std::string> python_cli;  // the Python LibreYOLO's CLI, when there is one
  std::string cwd;
};

// The places as this process sees them (environment, PATH, the current directory).
DatasetPlaces CurrentDatasetPlaces();

// What `profile run` sends for `data` (a bare name: no '/'), by the order above.
absl::StatusOr<std::string> ResolveDatasetName(const std::string& data,
                                               const DatasetPlaces& places);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_DATASET_NAME_H_
