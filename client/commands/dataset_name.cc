#include "client/commands/dataset_name.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/python_cli.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The Python LibreYOLO's built-in dataset YAML `file` in the package beside its CLI
// (<prefix>/bin/libreyolo -> <prefix>/lib/python3.X/{site,dist}-packages/libreyolo/...).
std::optional<fs::path> PythonBuiltinYaml(const std::string& cli, const std::string& file) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (const fs::path& bin : {fs::path(cli), fs::canonical(cli, ec)}) {
    if (bin.empty()) continue;
    const fs::path lib = bin.parent_path().parent_path() / "lib";
    for (auto it = fs::directory_iterator(lib, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (!absl::StartsWith(it->path().filename().string(), "python3")) continue;
      for (const char* packages : {"site-packages", "dist-packages"}) {
        candidates.push_back(it->path() / packages / "libreyolo" / "config" / "datasets" / file);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c.lexically_normal();
  }
  return std::nullopt;
}

// The YAML's top-level `path:` scalar (the Python tool's built-in YAMLs: `path: coco128`,
// a trailing comment, optional quotes); "" when it has none.
std::string TopLevelPath(const fs::path& yaml) {
  std::ifstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    if (!absl::StartsWith(line, "path:")) continue;
    std::string v = line.substr(5);
    if (const size_t hash = v.find(" #"); hash != std::string::npos) v.resize(hash);
    absl::StripAsciiWhitespace(&v);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    return v;
  }
  return "";
}

// The dataset root the Python tool resolves for `yaml` (its _resolve_dataset_path): no path:
// the YAML's folder; absolute: as is; else <python datasets>/path if it exists, else beside
// the YAML if that exists, else <python datasets>/path (where its download goes).
fs::path PythonDatasetRoot(const fs::path& yaml, const std::string& python_datasets) {
  const std::string path = TopLevelPath(yaml);
  if (path.empty()) return yaml.parent_path();
  if (fs::path(path).is_absolute()) return fs::path(path).lexically_normal();
  const fs::path under = fs::path(python_datasets) / path;
  if (Exists(under)) return under.lexically_normal();
  if (Exists(yaml.parent_path() / path)) return (yaml.parent_path() / path).lexically_normal();
  return under.lexically_normal();
}

bool NonEmptyDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::directory_iterator(p, ec) != fs::directory_iterator();
}

}  // namespace

DatasetPlaces CurrentDatasetPlaces() {
  DatasetPlaces p;
  const fs::path home(Env("HOME", "."));
  p.ours = Env("LIBREYOLO_DATASETS", (home / ".cache/libreyolo/datasets").string());
  p.python_datasets = Env("LIBREYOLO_DATASETS_DIR", (home / "datasets").string());
  if (auto cli = FindPythonCli(CurrentPythonCliSearch()); cli.ok()) p.python_cli = *cli;
  std::error_code ec;
  p.cwd = fs::current_path(ec).string();
  return p;
}

absl::StatusOr<std::string> ResolveDatasetName(const std::string& data,
                                               const DatasetPlaces& places) {
  if (data.empty() || absl::StrContains(data, '/')) return data;
  const bool has_ext = absl::EndsWith(data, ".yaml") || absl::EndsWith(data, ".yml");
  const std::string stem = has_ext ? data.substr(0, data.rfind('.')) : data;
  if (!has_ext) {
    // 1. The daemon's own datasets directory: it resolves the name itself.
    const fs::path ours(places.ours);
    for (const fs::path& c : {ours / (data + ".yaml"), ours / data / (data + ".yaml"),
                              ours / data / "data.yaml", ours / data}) {
      if (Exists(c)) return data;
    }
    // 2. ./NAME.yaml, as the Python tool looks in the current directory (./NAME.yaml given
    // whole is an existing path, sent before this is asked).
    const fs::path here = fs::path(places.cwd) / (data + ".yaml");
    if (Exists(here)) return here.lexically_normal().string();
  }
  // 3. The Python LibreYOLO's built-in YAML.
  if (!places.python_cli) {
    const fs::path ours(places.ours);
    return absl::NotFoundError(absl::StrCat(
        "dataset '", data, "' not found (looked at ", (ours / (stem + ".yaml")).string(), ", ",
        (ours / stem / (stem + ".yaml")).string(), ", ", (ours / stem / "data.yaml").string(), ", ",
        (fs::path(places.cwd) / (stem + ".yaml")).string(),
        "), and libreyolo never downloads a dataset. A built-in dataset of the Python LibreYOLO "
        "(coco8, coco128, ...) is downloaded by its `libreyolo doctor ",
        stem,
        " --download` (`pip install libreyolo` first: this libreyolo hands `doctor` to it). "
        "Or put the dataset's YAML in ",
        places.ours,
        " ($LIBREYOLO_DATASETS), pass the path of its YAML, or use 'synthetic' for "
        "the built-in dataset"));
  }
  const auto yaml = PythonBuiltinYaml(*places.python_cli, stem + ".yaml");
  if (!yaml) return data;
  const fs::path root = PythonDatasetRoot(*yaml, places.python_datasets);
  if (NonEmptyDirectory(root)) return yaml->string();
  return absl::NotFoundError(absl::StrCat(
      "dataset '", data, "' is not downloaded: the Python LibreYOLO's ", stem, ".yaml (",
      yaml->string(), ") keeps it in ", root.string(),
      ", which does not exist or is empty, and libreyolo never downloads a dataset. `libreyolo "
      "doctor ",
      stem,
      " --download` downloads it there (the Python LibreYOLO, from the YAML's download "
      "URL); then `libreyolo profile run ",
      data,
      "` finds it. Or pass the path of a dataset YAML whose images are on this machine, "
      "or 'synthetic' for the built-in dataset"));
}

}  // namespace libreyolo::cli
