// `lockstep diff DIR_A DIR_B [--scenario ID] [--json]`: compares two runs of the same scenarios
// through their traces (harness/diff/) and names the first step and tensor where they differ.
#include <memory>
#include <optional>

#include "harness/cli/command.h"
#include "harness/diff/run_diff.h"
#include "harness/diff/run_diff_output.h"

namespace lockstep {
namespace {

struct DiffFlags {
  std::string a;
  std::string b;
  std::string scenario;
  bool json = false;
};

}  // namespace

Command AddDiffCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two runs of the same scenarios (tonight vs last good, mpi vs gloo, CPU vs GPU) through their "
      "traces: every rank's loss and every tensor digest, step by step. Prints, per scenario in both runs, "
      "`identical` or the first step where they differ: which tensors, which ranks, by how much (loss "
      "absolute and relative difference, norm relative difference, digest A vs B). Scenarios in only one run "
      "are listed. Exit 0 identical, 1 different, 2 bad input (a folder that is not a run, an unreadable "
      "trace, no scenario in both runs).");
  cmd->add_option("dir_a", flags->a, "Run A: the --out folder of a `lockstep run`")->required()->type_name("DIR_A");
  cmd->add_option("dir_b", flags->b, "Run B, compared against A")->required()->type_name("DIR_B");
  cmd->add_option("--scenario", flags->scenario, "Compare only the scenario with this id (it must be in both runs)")
      ->type_name("ID");
  cmd->add_flag("--json", flags->json,
                "Print the comparison as JSON (schema lockstep.diff/1, every difference uncapped) instead of text");

  return {cmd, [flags, &env]() -> CommandResult {
            RunDiffOptions options;
            if (!flags->scenario.empty()) options.scenario = flags->scenario;
            Result<RunDiff> diff = DiffRunDirs(flags->a, flags->b, options);
            if (!diff.ok()) return InvalidArgumentError(diff.status().message());
            if (flags->json) {
              *env.out << RunDiffToJson(*diff).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                       << "\n";
            } else {
              *env.out << RunDiffText(*diff);
            }
            if (diff->Count(ScenarioDiff::Verdict::kDifferent) > 0) return CommandVerdict::kFailed;
            if (diff->Identical()) return CommandVerdict::kPassed;
            return InvalidArgumentError("nothing to compare: no scenario in both runs has traces in both");
          }};
}

}  // namespace lockstep
