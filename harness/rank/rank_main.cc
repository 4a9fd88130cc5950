// lockstep-rank: the program the launcher starts on every rank (docs/ARCHITECTURE.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "harness/core/compare_mode.h"
#include "harness/core/lifeline.h"
#include "harness/rank/run_rank.h"
#include "harness/scenario/scenario.h"

int main(int argc, char** argv) {
  // First of all: a rank must not outlive the `lockstep run` that started it, even a SIGKILLed one.
  lockstep::WatchLifeline();
  CLI::App app{"lockstep-rank: one rank of a lockstep scenario (started by `lockstep run`)"};
  lockstep::RankOptions options;
  std::string scenario, trace_dir;
  app.add_option("--scenario", scenario, "the scenario file as the runner resolved it (overrides applied)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--trace-dir", trace_dir, "directory for rank-<r>.trace")->required();
  CLI::Option* reference = app.add_flag("--reference", options.reference, "run the 1-rank reference variant of the scenario");
  app.add_flag("--reference-split", options.reference_split,
               "run the 1-rank reference that computes the global batch in the N ranks' pieces (noise measurement)")
      ->excludes(reference);
  app.add_flag("--fail-fast", options.fail_fast,
               "compare digests across ranks every step; stop at the first mismatch (= --compare in-band)");
  std::string compare;
  app.add_option("--compare", compare, "post-run (default) or in-band (= --fail-fast)")
      ->check(CLI::IsMember(lockstep::NameList<lockstep::CompareMode>()))
      ->type_name("MODE");
  int64_t stop_after_step = 0;
  std::string dump_dir;
  CLI::Option* stop = app.add_option("--stop-after-step", stop_after_step,
                                     "stop cleanly after recording step K (0: after initialization)")
                          ->check(CLI::NonNegativeNumber)
                          ->type_name("K");
  CLI::Option* dump = app.add_option("--dump-tensors", options.dump.patterns,
                                     "at step K, save every tensor whose \"<kind>:<name>\" or name matches one of "
                                     "these globs (comma-separated) to DIR/rank-<r>/<kind>__<name>.pt")
                          ->delimiter(',')
                          ->type_name("GLOB[,GLOB...]")
                          ->needs(stop);
  CLI::Option* dir = app.add_option("--dump-dir", dump_dir, "where --dump-tensors writes")->type_name("DIR")->needs(dump);
  dump->needs(dir);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return lockstep::ToInt(lockstep::ExitCode::kUsageError);
  }
  std::string compare_error;
  const std::optional<lockstep::CompareMode> mode = lockstep::ResolveCompareMode(options.fail_fast, compare, &compare_error);
  if (!mode) {
    std::fprintf(stderr, "lockstep-rank: %s\n", compare_error.c_str());
    return lockstep::ToInt(lockstep::ExitCode::kUsageError);
  }
  options.fail_fast = *mode == lockstep::CompareMode::kInBand;
  options.scenario_file = scenario;
  options.trace_dir = trace_dir;
  if (stop->count() > 0) options.stop_after_step = stop_after_step;
  options.dump.dir = dump_dir;
  const lockstep::ExitCode code = lockstep::RunRank(options);
  if (code != lockstep::ExitCode::kPassed) {
    // A rank that stops on an error leaves at once, without MPI_Finalize at exit: the others
    // may be waiting in a collective, and finalizing would wait for them (a hang instead of an
    // error). mpirun then ends the job; the footer and stderr already carry the message.
    std::fflush(nullptr);
    std::_Exit(lockstep::ToInt(code));
  }
  return 0;
}
