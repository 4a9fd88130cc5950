// Loads scenario files (YAML) strictly: every mistake is reported, with its position, before
// anything runs. The keys, their defaults and ranges are documented in docs/SCENARIOS.md.
//
// Per-folder defaults: a file named `lockstep.defaults.yaml` holds default values for the
// scenario files in its folder and below (like lit's local config). The nearest one wins key by
// key; the folders searched are the scenario file's own and its parents, up to and including the
// nearest folder named `scenarios` or holding `.git`.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/symptom.h"

namespace lockstep {

inline constexpr std::string_view kDefaultsFileName = "lockstep.defaults.yaml";
inline constexpr std::uintmax_t kMaxScenarioFileBytes = 1024 * 1024;


// What the build offers; filled by the caller (the CLI does it from build_info), so the loader
// itself does not depend on it.
struct LoadOptions {
  bool nccl_available = false;  // informational: `backend: nccl` without NCCL is a skip at run time
  // The checker vocabulary comes from the caller (the CLI passes the checker registry's,
  // checkers/checker_registry.h): scenario/ knows no checker itself. `checker_names` are the
  // names `checks:` and `expect: fail` may use; unset, names are taken as written (lockstep-rank
  // runs scenarios that `lockstep run` validated). `default_checks` gives the checks of a scenario
  // without `checks:`; unset, it has none.
  std::optional<std::vector<std::string>> checker_names;
  std::function<std::vector<std::string>(const Scenario&)> default_checks;
  // What a scenario's checks can see, and which checkers see what (the CLI passes the registry's
  // SymptomsSeenBy and CheckersSeeing): an injection none of whose symptoms the scenario's checks
  // see is refused, naming the checkers that would see it. Unset: not checked.
  std::function<Symptoms(const std::vector<std::string>& checks)> symptoms_seen_by;
  std::function<std::vector<std::string>(Symptoms)> checkers_seeing;
  // The file is a resolved scenario (scenario_writer.h: every key set, written for one launch;
  // a file with a top-level kResolvedFromKey is one whatever this says): no defaults file around
  // it applies, and an `inject` entry's kOriginKey says where the user wrote it, so that a
  // rank's error about it names the user's file, not the resolved one.
  bool resolved = false;
};

// "file:line:col" of an `inject` entry in a resolved scenario file (LoadOptions::resolved).
inline constexpr std::string_view kOriginKey = "at";
// The top-level key that makes a file a resolved scenario (scenario_writer.h writes it, naming
// the user's file it was resolved from): such a file loads as LoadOptions::resolved wherever it
// is read, so `lockstep run DIR/<id>/scenario.yaml` runs what that launch ran.
inline constexpr std::string_view kResolvedFromKey = "resolved_from";

// Loads and validates one scenario file. On failure the returned status says how many errors
// there were and `diagnostics` (which may be null) receives every one of them, in file order.
Result<Scenario> LoadScenarioFile(const std::filesystem::path& file, const LoadOptions& options,
                                  std::vector<Diagnostic>* diagnostics);

// Loads files and folders. Folders are searched recursively for *.yaml and *.yml (hidden entries
// and defaults files skipped) in sorted order; a folder with none is an error. The same file
// named twice is loaded once; two scenarios with the same id are an error. Every file is loaded
// even after an error, so that all diagnostics are reported at once.
Result<std::vector<Scenario>> LoadScenarios(const std::vector<std::string>& paths, const LoadOptions& options,
                                            std::vector<Diagnostic>* diagnostics);

// The id of a scenario file that does not set `name`: its path under the nearest folder named
// `scenarios`, without extension ("clean/ddp_mlp"), or the file stem elsewhere.
std::string DefaultScenarioName(const std::filesystem::path& file);

// Every key a scenario file may contain, as dotted paths ("model.heads", "inject[].rank"), in the
// order the documentation lists them.
std::vector<std::string> ScenarioKeyPaths();

}  // namespace lockstep
