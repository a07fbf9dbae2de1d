// `libreyolo` with a gate in its artifact downloads, for daemon_private_share_test only (never
// installed). With LIBREYOLO_TEST_GATE_DIR=DIR and LIBREYOLO_TEST_GATE_ARTIFACT=NAME, just
// before it starts downloading NAME it creates DIR/paused and waits (up to 120 s) for DIR/go:
// the test kills the daemon at that exact point, with the earlier artifacts already written.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "client/app/cli.h"
#include "client/remote/artifact_download.h"

namespace {

void Gate(const std::string& name, int64_t received) {
  static bool passed = false;
  const char* dir = std::getenv("LIBREYOLO_TEST_GATE_DIR");
  const char* artifact = std::getenv("LIBREYOLO_TEST_GATE_ARTIFACT");
  if (passed || dir == nullptr || artifact == nullptr || received != 0 || name != artifact) return;
  passed = true;
  const std::filesystem::path gate(dir);
  { std::ofstream paused(gate / "paused"); }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(gate / "go") && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  libreyolo::cli::SetDownloadObserver(Gate);
  std::vector<std::string> args(argv + 1, argv + argc);
  return libreyolo::cli::RunCli(args, std::cout, std::cerr);
}
