// Runs a program as a subprocess for the CLI tests: its exit code and what it wrote on stdout
// and stderr, separately.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::testing {

struct ProgramResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string out;
  std::string err;
};

// Runs `program` with `args` in `cwd`; the test's environment is inherited.
ProgramResult RunProgram(const std::filesystem::path& program, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd);

// The `lockstep` executable of this build.
std::filesystem::path LockstepBinary();

// Lines of `text` without their line ends.
std::vector<std::string> Lines(const std::string& text);

}  // namespace lockstep::testing
