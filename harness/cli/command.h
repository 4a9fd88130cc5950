// The `lockstep` subcommands. Each one lives in its own file (validate_command.cc, ...) and is
// registered by main.cc through one function of this shape:
//
//   Command AddFooCommand(CLI::App& app, const CommandEnvironment& env);
//
// It adds the subcommand to `app` with its flags and help text, and returns it together with the
// function main calls when the user picked it. That function returns how the command came out, or
// the error that stopped it; main prints the error ("lockstep <command>: <message>") and maps
// either to the process exit code (harness/core/exit_code.h), once, and nothing else does.
//
// Adding a subcommand: write foo_command.cc, declare AddFooCommand below, add one line to main.cc
// and the file to CMakeLists.txt.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/core/exit_code.h"
#include "harness/scenario/scenario_loader.h"

namespace lockstep {

// What every subcommand may need from the process; built once in main.
struct CommandEnvironment {
  LoadOptions load_options;               // what this build supports, for loading scenarios
  std::ostream* out = nullptr;            // results
  std::ostream* err = nullptr;            // diagnostics
  std::vector<std::string> command_line;  // argv as given, for reports
  std::filesystem::path program_dir;      // the folder of this executable: <build>/bin, where siblings live
};

// How a command that ran to its end came out.
enum class CommandVerdict {
  kPassed,        // exit 0: every scenario passed (or failed as expected); the command did its work
  kFailed,        // exit 1: a check found a problem (the report says which)
  kHarnessError,  // exit 3: a scenario hit a harness error, or the run was interrupted (the report says)
};

// A command's verdict, or the error that stopped it: InvalidArgument or NotFound is bad input
// (exit 2, nothing ran), anything else the harness failing (exit 3).
using CommandResult = Result<CommandVerdict>;

struct Command {
  CLI::App* app = nullptr;             // the subcommand, owned by the parent app
  std::function<CommandResult()> run;  // called after a successful parse when `app` was picked
};

// LoadOptions from this build (LibTorch version, NCCL), the streams, argv and the program folder.
CommandEnvironment MakeCommandEnvironment(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// Loads the scenario files and folders of `paths` (LoadScenarios) and prints every diagnostic
// (path:line:col: message) to env.err; the error says how many there were.
Result<std::vector<Scenario>> LoadScenariosPrinting(const std::vector<std::string>& paths,
                                                    const CommandEnvironment& env);

// The text of `lockstep --version`: versions built against, and which optional parts were built.
std::string VersionText();

Command AddValidateCommand(CLI::App& app, const CommandEnvironment& env);
Command AddListCommand(CLI::App& app, const CommandEnvironment& env);
Command AddRunCommand(CLI::App& app, const CommandEnvironment& env);
Command AddSelftestCommand(CLI::App& app, const CommandEnvironment& env);
Command AddBlessCommand(CLI::App& app, const CommandEnvironment& env);
Command AddReportCommand(CLI::App& app, const CommandEnvironment& env);
Command AddDiffCommand(CLI::App& app, const CommandEnvironment& env);
Command AddReproCommand(CLI::App& app, const CommandEnvironment& env);
Command AddCheckCommand(CLI::App& app, const CommandEnvironment& env);
Command AddExecCommand(CLI::App& app, const CommandEnvironment& env);
Command AddTraceCommand(CLI::App& app, const CommandEnvironment& env);

}  // namespace lockstep
