// What a `profile run <data>` argument names: a YOLO dataset YAML, a dataset name, or the
// built-in synthetic dataset.
//
// Resolution of <data>, in order:
//   1. `synthetic` or `synthetic:N` (N images, default 128): built in, deterministic, no files.
//   2. An existing file: parsed as a dataset YAML. An existing folder: its data.yaml or
//      <folder>.yaml.
//   3. A bare name such as `coco128` is looked up in the datasets directory as
//        <dir>/<name>.yaml, <dir>/<name>/<name>.yaml, <dir>/<name>/data.yaml
//      where <dir> is $LIBREYOLO_DATASETS, or $HOME/.cache/libreyolo/datasets when unset.
//   Nothing found -> NOT_FOUND naming every place looked at and how to fix it (the cli maps
//   NOT_FOUND to exit 2).
//
// The YAML (Ultralytics/LibreYOLO layout):
//   path: ../datasets/coco128   # root; relative -> <datasets dir>/<path> if that exists, else
//                               # PythonDatasetsDir()/<path> if that exists, else relative to
//                               # the YAML's folder; absent -> the YAML's folder
//   train: images/train2017     # a folder (searched recursively), a .txt list of images, one
//   val: images/train2017       # image, or a list of those; relative to the root
//   names: [person, bicycle]    # a list, or a dict {0: person, 1: bicycle}; or only `nc: 80`
// Labels live beside the images: the last `/images/` of an image path becomes `/labels/` and
// the extension `.txt` (see image_io.h).
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_DATASET_SPEC_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_DATASET_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::engine {

inline constexpr int64_t kDefaultSyntheticCount = 128;
inline constexpr char kDatasetsEnvVar[] = "LIBREYOLO_DATASETS";

// One split's image sources, resolved to absolute-or-root-joined paths. `origin` is where it
// was declared ("data.yaml:3") so later errors (a missing folder) can point at the line.
struct SplitSources {
  std::vector<std::string> sources;
  std::string origin;
  bool empty() const { return sources.empty(); }
};

struct DatasetSpec {
  std::string name;       // the argument as given
  std::string yaml_path;  // empty for synthetic
  std::string root;       // resolved `path`
  SplitSources train;
  SplitSources val;                // optional in the YAML
  std::vector<std::string> names;  // one per class; nc == names.size()
  int64_t synthetic_count = 0;     // > 0: the built-in synthetic dataset

  bool synthetic() const { return synthetic_count > 0; }
  int nc() const { return static_cast<int>(names.size()); }
};

// Said wherever a dataset is missing: a user coming from the Python tools (which fetch coco128
// and the like on first use, from a YAML's `download:`) learns why it is not here.
inline constexpr char kNeverDownloads[] =
    "libreyolo never downloads a dataset (the Python tools fetch coco128 and the like on first "
    "use; a YAML's 'download:' is not run here)";

// $LIBREYOLO_DATASETS, else $HOME/.cache/libreyolo/datasets (./.cache/... without HOME).
std::string DefaultDatasetsDir();

// Where the Python LibreYOLO keeps datasets: $LIBREYOLO_DATASETS_DIR, else $HOME/datasets. A
// YAML's relative `path` is looked up there after the datasets directory, as that tool does.
std::string PythonDatasetsDir();

// Resolves <data> as described above; NOT_FOUND when nothing matches, INVALID_ARGUMENT for a
// malformed YAML or `synthetic:` count.
absl::StatusOr<DatasetSpec> ResolveDataset(const std::string& data,
                                           const std::string& datasets_dir);
inline absl::StatusOr<DatasetSpec> ResolveDataset(const std::string& data) {
  return ResolveDataset(data, DefaultDatasetsDir());
}

// Parses a dataset YAML file / its text. `yaml_path` names the file in messages and anchors
// relative paths.
absl::StatusOr<DatasetSpec> ParseDatasetYaml(const std::string& yaml_path,
                                             const std::string& datasets_dir);
absl::StatusOr<DatasetSpec> ParseDatasetYamlText(const std::string& text,
                                                 const std::string& yaml_path,
                                                 const std::string& datasets_dir);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_DATASET_SPEC_H_
