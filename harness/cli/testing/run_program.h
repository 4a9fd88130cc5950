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

// `<build dir>/<suite>/<name>` for a run's `--out`: what a previous test run left there is
// removed (lockstep refuses an existing directory it did not make) and the parent is created.
std::filesystem::path FreshOutDir(const std::string& suite, const std::string& name);

// The `lockstep` executable of this build.
std::filesystem::path LockstepBinary();

// Lines of `text` without their line ends.
std::vector<std::string> Lines(const std::string& text);

}  // namespace lockstep::testing
