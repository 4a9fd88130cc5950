// lockstep-rank: the program the launcher starts on every rank (docs/ARCHITECTURE.md).
#include <CLI/CLI.hpp>

#include "harness/rank/rank_program.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep-rank: one rank of a lockstep scenario (started by `lockstep run`)"};
  lockstep::RankOptions options;
  std::string scenario, trace_dir;
  app.add_option("--scenario", scenario, "scenario file")->required()->check(CLI::ExistingFile);
  app.add_option("--trace-dir", trace_dir, "directory for rank-<r>.trace")->required();
  app.add_flag("--reference", options.reference, "run the 1-rank reference variant of the scenario");
  app.add_option("--backend", options.backend, "override the scenario's backend")
      ->check(CLI::IsMember({"mpi", "gloo", "nccl"}));
  app.add_flag("--fail-fast", options.fail_fast, "compare digests across ranks every step; stop at the first mismatch");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return lockstep::ToInt(lockstep::ExitCode::kUsageError);
  }
  options.scenario_file = scenario;
  options.trace_dir = trace_dir;
  return lockstep::ToInt(lockstep::RunRank(options));
}
