#include <memory>

#include "harness/cli/command.h"

namespace lockstep {

Command AddValidateCommand(CLI::App& app, const CommandEnvironment& env) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check scenario files strictly, before anything runs. Every problem is printed on stderr as "
      "path:line:col: message. Exit 0 when all are valid, 2 otherwise.");
  cmd->add_option("paths", *paths, "Scenario files, or folders searched recursively for *.yaml and *.yml")
      ->required()
      ->type_name("FILE|DIR");
  return {cmd, [paths, &env]() -> CommandResult {
            LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Scenario> loaded, LoadScenariosPrinting(*paths, env));
            for (const Scenario& s : loaded) {
              // Not an error: the same file runs on a machine with NCCL; here it is a skip.
              if (s.backend == Backend::kNccl && !env.load_options.nccl_available) {
                *env.err << s.location.file << ": note: backend nccl is not built here; \"" << s.name
                         << "\" will be skipped at run time\n";
              }
            }
            *env.out << loaded.size() << (loaded.size() == 1 ? " scenario" : " scenarios") << " valid\n";
            return CommandVerdict::kPassed;
          }};
}

}  // namespace lockstep
