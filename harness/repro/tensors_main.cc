// lockstep-tensors: looks at tensors that ranks saved with `lockstep-rank --dump-tensors` (what
// `lockstep repro` runs). A program of its own because it needs LibTorch to read them and the
// `lockstep` CLI must not link it.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/core/exit_code.h"
#include "harness/repro/tensor_compare.h"
#include "harness/repro/tensor_compare_output.h"
#include "harness/repro/tensor_dump_reader.h"

int main(int argc, char** argv) {
  using namespace lockstep;
  CLI::App app{"lockstep-tensors: inspect tensors saved by `lockstep repro` (lockstep-rank --dump-tensors)",
               "lockstep-tensors"};
  app.require_subcommand(1);
  std::string dir;
  bool json = false;
  CompareOptions options;
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Load every rank's saved tensors (DIR/rank-<r>/) and compare each tensor across ranks element by element, "
      "against the majority (or, without one, the lowest rank's group): per differing rank the number of "
      "differing elements and the max absolute and relative difference, then the first differing indices with "
      "the value on every rank. Exit 0 all identical, 1 a tensor differs, 2 not a readable dump.");
  compare->add_option("dir", dir, "The dump folder (lockstep-rank --dump-dir)")->required()->type_name("DIR");
  compare->add_flag("--json", json, "Print JSON (schema lockstep.tensor_compare/1) instead of text");
  compare->add_option("--max-indices", options.max_indices, "How many differing elements to show per tensor")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? ToInt(ExitCode::kPassed) : ToInt(ExitCode::kUsageError);
  }

  try {
    Result<TensorDumpContents> dump = ReadTensorDump(dir);
    if (!dump.ok()) {
      std::cerr << "lockstep-tensors compare: " << dump.status().message() << "\n";
      return ToInt(ExitCode::kUsageError);
    }
    const TensorDumpComparison comparison = CompareTensorDump(*dump, options);
    if (json) {
      std::cout << TensorComparisonJson(comparison).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << TensorComparisonText(comparison);
    }
    return ToInt(comparison.DifferingCount() > 0 ? ExitCode::kCheckFailed : ExitCode::kPassed);
  } catch (const std::exception& e) {
    // c10::Error from a tensor operation on a dump we did not expect (an exotic dtype).
    std::cerr << "lockstep-tensors: internal error: " << e.what() << "\n";
    return ToInt(ExitCode::kHarnessError);
  }
}
