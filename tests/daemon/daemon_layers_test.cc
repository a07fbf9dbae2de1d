// The folders under server/daemon/ are layers: no folder includes, directly or through others,
// a folder that includes it back (issue 39 §2 cut jobs/ <-> rpc/ and config/ <-> security/).
// Reads the sources' #include lines; fails naming the cycle and the files that make it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// folder -> included folder -> the first file (folder/name) that includes it
using Edges = std::map<std::string, std::map<std::string, std::string>>;

Edges FolderIncludes(const fs::path& root) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*"server/daemon/([A-Za-z0-9_]+)/)");
  Edges edges;
  for (const fs::directory_entry& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string from = dir.path().filename().string();
    edges[from];
    for (const fs::directory_entry& file : fs::recursive_directory_iterator(dir.path())) {
      const std::string ext = file.path().extension().string();
      if (!file.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
      std::ifstream in(file.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, kInclude) || m[1] == from) continue;
        edges[from].emplace(m[1], fs::relative(file.path(), root).string());
      }
    }
  }
  return edges;
}

// Depth first from `at`: every include that leads back into `path` (the folders being walked)
// closes a cycle, written as "a -> b (a/x.h) -> ... -> a".
void FindCycles(const Edges& edges, const std::string& at, std::vector<std::string>* path,
                std::set<std::string>* done, std::set<std::string>* cycles) {
  path->push_back(at);
  auto it = edges.find(at);
  if (it != edges.end()) {
    for (const auto& [to, file] : it->second) {
      const auto back = std::find(path->begin(), path->end(), to);
      if (back != path->end()) {
        std::string cycle;
        for (auto f = back; f != path->end(); ++f) {
          const std::string& next = f + 1 != path->end() ? *(f + 1) : to;
          cycle += *f + " -> " + next + " (" + edges.at(*f).at(next) + ")  ";
        }
        cycles->insert(cycle);
      } else if (!done->count(to)) {
        FindCycles(edges, to, path, done, cycles);
      }
    }
  }
  path->pop_back();
  done->insert(at);
}

TEST(DaemonLayers, NoFolderIncludesOneThatIncludesItBack) {
  const Edges edges = FolderIncludes(fs::path(LIBREYOLO_SOURCE_DIR) / "server" / "daemon");
  ASSERT_GE(edges.size(), 8u) << "server/daemon/ has fewer folders than expected";
  std::set<std::string> done;
  std::set<std::string> cycles;
  for (const auto& [folder, _] : edges) {
    std::vector<std::string> path;
    if (!done.count(folder)) FindCycles(edges, folder, &path, &done, &cycles);
  }
  for (const std::string& cycle : cycles) {
    ADD_FAILURE() << "server/daemon/ folders include each other: " << cycle
                  << "\nmove what both need into the lower folder (or a new one) so that "
                     "includes go one way";
  }
}

}  // namespace
