// Fuzz target: the scenario loader (YAML parsing, the strict typed reader, every validation
// rule) on arbitrary bytes. Whatever the input, loading returns a scenario or diagnostics; a
// crash, a hang or a sanitizer report is a bug. Seeds: scenarios/ and fixtures/bad_scenarios/.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/scenario/scenario_loader.h"

namespace {

// One private folder per process; a `.git` in it stops the search for defaults files there.
const std::filesystem::path& ScratchFile() {
  static const std::filesystem::path file = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "lockstep_fuzz_scenario_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) abort();
    std::filesystem::create_directories(std::filesystem::path(pattern) / ".git");
    return std::filesystem::path(pattern) / "fuzz.yaml";
  }();
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(ScratchFile(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::vector<lockstep::Diagnostic> diagnostics;
  lockstep::Result<lockstep::Scenario> scenario = lockstep::LoadScenarioFile(ScratchFile(), {}, &diagnostics);
  // A refusal always says why.
  if (!scenario.ok() && diagnostics.empty()) abort();
  return 0;
}
