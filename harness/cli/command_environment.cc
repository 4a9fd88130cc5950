#include <system_error>

#include "checkers/checker_registry.h"
#include "harness/cli/command.h"
#include "harness/core/build_info.h"

namespace lockstep {

CommandEnvironment MakeCommandEnvironment(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const BuildInfo& build = GetBuildInfo();
  CommandEnvironment env;
  env.load_options.nccl_available = build.have_nccl;
  env.load_options.checker_names = CheckerNames();
  env.load_options.default_checks = DefaultChecks;
  env.load_options.symptoms_seen_by = SymptomsSeenBy;
  env.load_options.checkers_seeing = CheckersSeeing;
  env.out = &out;
  env.err = &err;
  env.command_line.assign(argv, argv + argc);
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec && argc > 0) self = std::filesystem::absolute(argv[0], ec);
  env.program_dir = self.parent_path();
  return env;
}

Result<std::vector<Scenario>> LoadScenariosPrinting(const std::vector<std::string>& paths,
                                                    const CommandEnvironment& env) {
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> loaded = LoadScenarios(paths, env.load_options, &diagnostics);
  for (const Diagnostic& d : diagnostics) *env.err << d.ToString() << "\n";
  return loaded;
}

}  // namespace lockstep
