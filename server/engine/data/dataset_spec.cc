#include "server/engine/data/dataset_spec.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/io/file_reader.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

constexpr int kSyntheticClasses = 80;  // the default LibreYOLO9 head, so weights fit unchanged
constexpr char kSyntheticPrefix[] = "synthetic";

// "data.yaml:4" for a node (yaml-cpp lines are 0-based).
std::string Where(const std::string& yaml_path, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return yaml_path;
  return absl::StrCat(yaml_path, ":", mark.line + 1);
}

absl::StatusOr<DatasetSpec> SyntheticSpec(const std::string& data) {
  DatasetSpec spec;
  spec.name = data;
  spec.synthetic_count = kDefaultSyntheticCount;
  const size_t prefix = std::string_view(kSyntheticPrefix).size() + 1;  // "synthetic:"
  if (data.size() > prefix - 1) {
    const std::string count = data.substr(prefix);
    int64_t n = 0;
    if (!absl::SimpleAtoi(count, &n) || n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset '", data, "': the synthetic image count '", count,
                       "' is not a positive integer; write 'synthetic' or e.g. 'synthetic:256'"));
    }
    spec.synthetic_count = n;
  }
  for (int c = 0; c < kSyntheticClasses; ++c) spec.names.push_back(absl::StrCat("class_", c));
  return spec;
}

bool IsSyntheticName(const std::string& data) {
  return data == kSyntheticPrefix || absl::StartsWith(data, absl::StrCat(kSyntheticPrefix, ":"));
}

// `path:` per the reference: absolute as is; relative under the datasets dir when that exists,
// else beside the YAML; absent -> the YAML's folder.
std::string ResolveRoot(const YAML::Node& path_node, const fs::path& yaml_dir,
                        const std::string& datasets_dir) {
  if (!path_node || path_node.IsNull()) return yaml_dir.string();
  const fs::path path(path_node.as<std::string>());
  if (path.is_absolute()) return path.lexically_normal().string();
  const fs::path under_datasets = fs::path(datasets_dir) / path;
  std::error_code ec;
  if (!datasets_dir.empty() && fs::exists(under_datasets, ec)) {
    return under_datasets.lexically_normal().string();
  }
  // Where the Python LibreYOLO keeps (and downloads) datasets: its built-in YAMLs (`path:
  // coco128`) name a folder there.
  const fs::path under_python = fs::path(PythonDatasetsDir()) / path;
  if (fs::exists(under_python, ec)) return under_python.lexically_normal().string();
  return (yaml_dir / path).lexically_normal().string();
}

absl::StatusOr<SplitSources> ParseSplit(const YAML::Node& node, const std::string& key,
                                        const std::string& root, const std::string& yaml_path) {
  SplitSources split;
  split.origin = Where(yaml_path, node);
  auto add = [&](const YAML::Node& item) -> absl::Status {
    if (!item.IsScalar() || item.Scalar().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(yaml_path, item), ": '", key,
                       "' must be a path (folder, .txt list or image) or a list of paths"));
    }
    const fs::path p(item.Scalar());
    split.sources.push_back(p.is_absolute() ? p.lexically_normal().string()
                                            : (fs::path(root) / p).lexically_normal().string());
    return absl::OkStatus();
  };
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) RETURN_IF_ERROR(add(item));
  } else {
    RETURN_IF_ERROR(add(node));
  }
  return split;
}

absl::StatusOr<std::vector<std::string>> ParseNames(const YAML::Node& root_node,
                                                    const std::string& yaml_path) {
  const YAML::Node names = root_node["names"];
  const YAML::Node nc = root_node["nc"];
  std::vector<std::string> out;
  if (names && !names.IsNull()) {
    if (names.IsSequence()) {
      for (const YAML::Node& n : names) {
        if (!n.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(yaml_path, n), ": each entry of 'names' must be a class name"));
        }
        out.push_back(n.Scalar());
      }
    } else if (names.IsMap()) {
      // {0: person, 1: bicycle}: ids need not be listed in order, but must be non-negative
      // integers; gaps get a placeholder name so ids keep their meaning.
      std::map<int64_t, std::string> by_id;
      for (const auto& kv : names) {
        int64_t id = -1;
        if (!absl::SimpleAtoi(kv.first.Scalar(), &id) || id < 0 || id > 100000) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(yaml_path, kv.first), ": class id '", kv.first.Scalar(),
                           "' in 'names' must be a non-negative integer (e.g. '0: person')"));
        }
        by_id[id] = kv.second.IsScalar() ? kv.second.Scalar() : absl::StrCat("class_", id);
      }
      const int64_t count = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
      for (int64_t id = 0; id < count; ++id) {
        auto it = by_id.find(id);
        out.push_back(it != by_id.end() ? it->second : absl::StrCat("class_", id));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(yaml_path, names), ": 'names' must be a list or a {id: name} mapping"));
    }
  }
  if (nc && !nc.IsNull()) {
    int64_t count = 0;
    if (!nc.IsScalar() || !absl::SimpleAtoi(nc.Scalar(), &count) || count < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(yaml_path, nc), ": 'nc' must be a positive integer"));
    }
    if (out.empty()) {
      for (int64_t c = 0; c < count; ++c) out.push_back(absl::StrCat("class_", c));
    } else if (static_cast<int64_t>(out.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat(Where(yaml_path, nc), ": 'nc' is ", count,
                                                     " but 'names' lists ", out.size(),
                                                     " classes; fix one of them or drop 'nc'"));
    }
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        yaml_path, ": missing 'names' (or 'nc'); add e.g. 'names: [person, car]' or 'nc: 2'"));
  }
  return out;
}

}  // namespace

std::string PythonDatasetsDir() {
  if (const char* env = std::getenv("LIBREYOLO_DATASETS_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* home = std::getenv("HOME");
  const fs::path base = (home != nullptr && *home != '\0') ? fs::path(home) : fs::path(".");
  return (base / "datasets").string();
}

std::string DefaultDatasetsDir() {
  if (const char* env = std::getenv(kDatasetsEnvVar); env != nullptr && *env != '\0') {
    return env;
  }
  const char* home = std::getenv("HOME");
  const fs::path base = (home != nullptr && *home != '\0') ? fs::path(home) : fs::path(".");
  return (base / ".cache" / "libreyolo" / "datasets").string();
}

absl::StatusOr<DatasetSpec> ParseDatasetYamlText(const std::string& text,
                                                 const std::string& yaml_path,
                                                 const std::string& datasets_dir) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(yaml_path, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": not valid YAML: ", e.msg));
  }
  if (!doc.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        yaml_path, ": a dataset YAML must be a mapping with 'train' and 'names' (or 'nc')"));
  }
  try {
    DatasetSpec spec;
    spec.yaml_path = yaml_path;
    spec.root = ResolveRoot(doc["path"], fs::path(yaml_path).parent_path(), datasets_dir);
    const YAML::Node train = doc["train"];
    if (!train || train.IsNull()) {
      return absl::InvalidArgumentError(
          absl::StrCat(yaml_path,
                       ": missing 'train' (the training images: a folder, a .txt list, or a list "
                       "of those, relative to 'path'); add e.g. 'train: images/train'"));
    }
    ASSIGN_OR_RETURN(spec.train, ParseSplit(train, "train", spec.root, yaml_path));
    if (const YAML::Node val = doc["val"]; val && !val.IsNull()) {
      ASSIGN_OR_RETURN(spec.val, ParseSplit(val, "val", spec.root, yaml_path));
    }
    ASSIGN_OR_RETURN(spec.names, ParseNames(doc, yaml_path));
    return spec;
  } catch (const YAML::Exception& e) {
    // A node of the wrong kind (e.g. `path: [a, b]`) surfaces as a conversion exception.
    return absl::InvalidArgumentError(
        absl::StrCat(yaml_path, ":", e.mark.line + 1, ": unexpected value: ", e.msg));
  }
}

absl::StatusOr<DatasetSpec> ParseDatasetYaml(const std::string& yaml_path,
                                             const std::string& datasets_dir) {
  if (const std::optional<std::string> kind = NonRegularFileKind(yaml_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset YAML '", yaml_path, "' is ", *kind, ", not a file"));
  }
  std::ifstream in(yaml_path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("dataset YAML '", yaml_path, "' cannot be opened; check the path"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseDatasetYamlText(text.str(), yaml_path, datasets_dir);
}

absl::StatusOr<DatasetSpec> ResolveDataset(const std::string& data,
                                           const std::string& datasets_dir) {
  if (IsSyntheticName(data)) return SyntheticSpec(data);
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (fs::is_regular_file(data, ec)) {
    candidates = {data};
  } else if (fs::is_directory(data, ec)) {
    // A dataset folder given directly: its data.yaml or <folder>.yaml.
    const fs::path dir = fs::path(data).lexically_normal();
    const std::string stem = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
    candidates = {dir / "data.yaml", dir / (stem + ".yaml")};
  } else if (data.empty() || absl::EndsWith(data, ".yaml") || absl::EndsWith(data, ".yml") ||
             data.find('/') != std::string::npos) {
    return absl::NotFoundError(
        absl::StrCat("dataset YAML '", data,
                     "' not found; check the path, or give a dataset name (looked up "
                     "in ",
                     datasets_dir, ", set by $", kDatasetsEnvVar,
                     ") or 'synthetic' for the built-in "
                     "dataset"));
  } else {
    const fs::path dir(datasets_dir);
    candidates = {dir / (data + ".yaml"), dir / data / (data + ".yaml"), dir / data / "data.yaml"};
  }
  std::vector<std::string> tried;
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) {
      ASSIGN_OR_RETURN(DatasetSpec spec, ParseDatasetYaml(candidate.string(), datasets_dir));
      spec.name = data;
      return spec;
    }
    tried.push_back(candidate.string());
  }
  return absl::NotFoundError(
      absl::StrCat("dataset '", data, "' not found; looked for ", absl::StrJoin(tried, ", "),
                   ". ", kNeverDownloads,
                   ": put the dataset there (its YAML plus images/ and labels/ beside it), "
                   "point $",
                   kDatasetsEnvVar,
                   " at the folder that holds it, pass the path of its YAML, or use "
                   "'synthetic' for the built-in dataset"));
}

}  // namespace libreyolo::engine
