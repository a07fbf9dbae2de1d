// The folders under server/daemon/, common/ and client/ are layers: no folder includes, directly
// or through others, a folder that includes it back (issue 39 §2 cut jobs/ <-> rpc/ and config/
// <-> security/ in the daemon, profile/ <-> analysis/ <-> trace/ in common/, cli/ <-> commands/
// <-> remote/ in the client). Reads the sources' #include lines; fails naming the cycle and the
// files that make it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// folder -> included folder -> the first file (folder/name) that includes it
using Edges = std::map<std::string, std::map<std::string, std::string>>;

// The include edges between the folders right under `root`, whose includes are spelled
// "<prefix>/<folder>/...". Files directly in `root` belong to no folder and are skipped.
Edges FolderIncludes(const fs::path& root, const std::string& prefix) {
  const std::regex include(R"(^\s*#\s*include\s*")" + prefix + R"(/([A-Za-z0-9_]+)/)");
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
        if (!std::regex_search(line, m, include) || m[1] == from) continue;
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

std::set<std::string> Cycles(const Edges& edges) {
  std::set<std::string> done;
  std::set<std::string> cycles;
  for (const auto& [folder, _] : edges) {
    std::vector<std::string> path;
    if (!done.count(folder)) FindCycles(edges, folder, &path, &done, &cycles);
  }
  return cycles;
}

// `tree` (relative to the source root, e.g. "common") has at least `min_folders` folders and
// none of them takes part in an include cycle.
void ExpectLayered(const std::string& tree, size_t min_folders) {
  const Edges edges = FolderIncludes(fs::path(LIBREYOLO_SOURCE_DIR) / tree, tree);
  ASSERT_GE(edges.size(), min_folders) << tree << "/ has fewer folders than expected";
  for (const std::string& cycle : Cycles(edges)) {
    ADD_FAILURE() << tree << "/ folders include each other: " << cycle
                  << "\nmove what both need into the lower folder (or a new one) so that "
                     "includes go one way";
  }
}

// The top-level folders are layers too (architecture.md): proto/ is the contract and holds only
// .proto files (its generated headers, "libreyolo/...", depend on nothing of ours); common/ knows
// neither gRPC nor the other folders; wire/ converts between the contract and common/'s types;
// client/ and server/ sit on those three and never include each other.
TEST(FolderLayers, TopLevelFoldersKeepTheirLayers) {
  const fs::path root(LIBREYOLO_SOURCE_DIR);
  const std::map<std::string, std::set<std::string>> allowed = {
      {"common", {}},
      {"proto", {}},
      {"wire", {"common", "proto"}},
      {"client", {"common", "proto", "wire"}},
      {"server", {"common", "proto", "wire"}},
  };
  const std::regex include(R"(^\s*#\s*include\s*"(common|proto|wire|client|server|libreyolo)/)");
  for (const auto& [folder, may] : allowed) {
    for (const fs::directory_entry& file : fs::recursive_directory_iterator(root / folder)) {
      const std::string ext = file.path().extension().string();
      if (!file.is_regular_file()) continue;
      if (folder == "proto") {
        EXPECT_TRUE(ext == ".proto" || file.path().filename() == "CMakeLists.txt")
            << fs::relative(file.path(), root).string()
            << ": proto/ holds only the .proto contract; put code that converts its messages "
               "in wire/";
        continue;
      }
      if (ext != ".h" && ext != ".cc") continue;
      std::ifstream in(file.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, include)) continue;
        const std::string to = m[1] == "libreyolo" ? "proto" : m[1].str();
        if (to == folder) continue;
        EXPECT_TRUE(may.count(to)) << fs::relative(file.path(), root).string() << " includes "
                                   << to << "/: " << folder << "/ may include only the layers "
                                   << "below it (architecture.md)";
      }
    }
  }
}

TEST(FolderLayers, DaemonFoldersIncludeOneWay) { ExpectLayered("server/daemon", 8); }

TEST(FolderLayers, CommonFoldersIncludeOneWay) { ExpectLayered("common", 11); }

TEST(FolderLayers, ClientFoldersIncludeOneWay) { ExpectLayered("client", 4); }

// The check itself: a three-folder cycle in a scratch tree is found and names its files; a
// one-way include is not a cycle.
TEST(FolderLayers, FindsACycleAndNamesItsFiles) {
  const fs::path root = fs::temp_directory_path() / ("folder_layers_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto write = [&](const std::string& name, const std::string& text) {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name) << text;
  };
  write("a/a.h", "#include \"t/b/b.h\"\n");
  write("b/b.cc", "#include \"t/c/c.h\"\n#include \"t/b/b.h\"\n");
  write("c/c.h", "  #  include \"t/a/a.h\"\n");
  write("d/d.h", "#include \"t/a/a.h\"\n");
  std::set<std::string> cycles = Cycles(FolderIncludes(root, "t"));
  ASSERT_EQ(cycles.size(), 1u);
  const std::string& cycle = *cycles.begin();
  EXPECT_NE(cycle.find("a -> b (a/a.h)"), std::string::npos) << cycle;
  EXPECT_NE(cycle.find("b -> c (b/b.cc)"), std::string::npos) << cycle;
  EXPECT_NE(cycle.find("c -> a (c/c.h)"), std::string::npos) << cycle;
  write("c/c.h", "#include \"t/d/d.h\"\n");  // c -> d -> a -> b -> c: still one cycle
  EXPECT_EQ(Cycles(FolderIncludes(root, "t")).size(), 1u);
  write("c/c.h", "// no include\n");
  EXPECT_TRUE(Cycles(FolderIncludes(root, "t")).empty());
  fs::remove_all(root);
}

}  // namespace
