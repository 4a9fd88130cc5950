#include <algorithm>
#include <memory>

#include "harness/cli/command.h"

namespace lockstep {

Command AddListCommand(CLI::App& app, const CommandEnvironment& env) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "list", "Print the ids of the scenarios found, one per line, sorted. Invalid files are reported as "
              "`validate` reports them, and then nothing is listed (exit 2).");
  cmd->add_option("paths", *paths, "Folders searched recursively for *.yaml and *.yml, or scenario files")
      ->required()
      ->type_name("DIR|FILE");
  return {cmd, [paths, &env]() -> CommandResult {
            LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Scenario> loaded, LoadScenariosPrinting(*paths, env));
            std::vector<std::string> ids;
            for (const Scenario& s : loaded) ids.push_back(s.name);
            std::sort(ids.begin(), ids.end());
            for (const std::string& id : ids) *env.out << id << "\n";
            return CommandVerdict::kPassed;
          }};
}

}  // namespace lockstep
