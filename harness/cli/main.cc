// `lockstep`: builds the command line from the subcommands (harness/cli/command.h) and turns
// what happened into the exit code, here and nowhere else.
#include <csignal>
#include <exception>
#include <iostream>
#include <vector>

#include "harness/cli/command.h"

namespace {

using lockstep::CommandResult;
using lockstep::CommandVerdict;
using lockstep::ExitCode;
using lockstep::StatusCode;

// The process exit code of a command's result: the program's one mapping.
ExitCode ExitCodeOf(const CommandResult& result) {
  if (!result.ok()) {
    const StatusCode code = result.status().code();
    // Bad input: nothing ran. Anything else is the harness failing.
    const bool input = code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound;
    return input ? ExitCode::kUsageError : ExitCode::kHarnessError;
  }
  switch (*result) {
    case CommandVerdict::kPassed: return ExitCode::kPassed;
    case CommandVerdict::kFailed: return ExitCode::kCheckFailed;
    case CommandVerdict::kHarnessError: return ExitCode::kHarnessError;
  }
  return ExitCode::kHarnessError;
}

// "trace dump": the command and the subcommands of it that were picked.
std::string CommandPath(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* sub : app.get_subcommands()) path += " " + CommandPath(*sub);
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep;
  // A closed stdout (`lockstep exec ... | head`) is a failed write, never a SIGPIPE death: the run
  // goes on, and its report.json is written. (Every rank starts with default dispositions.)
  std::signal(SIGPIPE, SIG_IGN);
  CommandEnvironment env = MakeCommandEnvironment(argc, argv, std::cout, std::cerr);
  try {
    CLI::App app{"lockstep: a correctness harness for data-parallel training. It runs scenarios on local ranks, "
                 "records what every rank did, and finds the step, tensor and rank where replicas diverge.",
                 "lockstep"};
    app.set_version_flag("--version", [] { return VersionText(); },
                         "Print the lockstep version, the LibTorch, MPI, CUDA and NCCL versions it was built "
                         "with, and which optional backends were built; then exit");
    app.require_subcommand(0, 1);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
      return "lockstep: " + std::string(e.what()) + "\nRun 'lockstep --help' for more information.\n";
    });

    std::vector<Command> commands = {
        AddValidateCommand(app, env),
        AddListCommand(app, env),
        AddRunCommand(app, env),
        AddCheckCommand(app, env),
        AddExecCommand(app, env),
        AddSelftestCommand(app, env),
        AddBlessCommand(app, env),
        AddReportCommand(app, env),
        AddDiffCommand(app, env),
        AddReproCommand(app, env),
        AddTraceCommand(app, env),
    };
    // Set after the subcommands so that they do not inherit it.
    app.footer(
        "Exit codes: 0 all passed (or failed as expected), 1 a check failed, 2 usage or input error "
        "(nothing ran), 3 the harness itself failed.\nRun 'lockstep SUBCOMMAND --help' for a subcommand's flags.");

    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version arrive here too, with exit code 0.
      const int code = app.exit(e, *env.out, *env.err);
      return code == 0 ? ToInt(ExitCode::kPassed) : ToInt(ExitCode::kUsageError);
    }
    for (const Command& command : commands) {
      if (!command.app->parsed()) continue;
      const CommandResult result = command.run();
      if (!result.ok()) *env.err << "lockstep " << CommandPath(*command.app) << ": " << result.status().message() << "\n";
      return ToInt(ExitCodeOf(result));
    }
    *env.err << app.help();
    return ToInt(ExitCode::kUsageError);
  } catch (const std::exception& e) {
    *env.err << "lockstep: internal error: " << e.what() << "\n";
    return ToInt(ExitCode::kHarnessError);
  }
}
