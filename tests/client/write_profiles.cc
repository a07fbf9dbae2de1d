// Writes profile.json for each trace or profile named on the command line, as our jobs write
// them (LoadProfile, then WriteProfileJson): the input of python_reads_our_profiles_test.py,
// which runs the Python LibreYOLO's own readers on what we write.
// usage: write_profiles OUT_DIR INPUT...   (OUT_DIR/<input's base name>.profile.json)
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "common/analysis/profile_json_write.h"
#include "common/load/load_profile.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: write_profiles OUT_DIR INPUT...\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  for (int i = 2; i < argc; ++i) {
    auto p = libreyolo::LoadProfile(argv[i]);
    if (!p.ok()) {
      std::cerr << argv[i] << ": " << p.status() << "\n";
      return 1;
    }
    std::string name = std::filesystem::path(argv[i]).filename().string();
    name = name.substr(0, name.find('.'));
    std::ofstream(out / (name + ".profile.json")) << libreyolo::WriteProfileJson(*p);
  }
  return 0;
}
