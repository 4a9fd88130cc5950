// What an example program of examples/ must produce, read from its sidecar
// `<example>.expect.json`, and the comparison of a run's findings against it. Shared by the
// probe's catalog test (its own launcher) and any test that runs the catalog through
// `lockstep exec`, so both hold the examples to the same expectations.
//
//   {
//     "ranks": 3,                      // how many ranks to start
//     "repeats": 5,                    // runs that must all match (clean programs: flakiness)
//     "why": "...",                    // one line for people
//     "launcher": "mpirun",            // how `lockstep exec` starts it: local (default), mpirun,
//                                      // torchrun or accelerate
//     "hang_timeout": 20,              // exec's --hang-timeout for a bug that hangs (default: the
//                                      // test's own, generous); seconds, at least 1
//     "startup_timeout": 30,           // exec's --startup-timeout for a bug that stops a rank
//                                      // before its first collective (default 300); at least 1
//     "findings": [                    // each must be reported, once, by its checker
//       {"checker": "synced_grads", "step": 4, "ranks": [2], "tensor": "0.weight",
//        "message_contains": ["..."],  // step, ranks, tensor, message_contains, cause_contains:
//        "cause_contains": ["..."]}    // optional (cause: Finding::cause, checkers/divergence_cause.h;
//                                      // "no_cause": true instead: the finding must have none)
//     ],
//     "also": ["replica_weights"],     // checkers that may report the bug's consequences too
//     "compared": {"replica_weights": 2}, // tensors each named checker compared (optional)
//     // The corpus of real bugs (examples/real_bugs/, docs/DETECTION.md) says what each program is;
//     // optional elsewhere, checked when present:
//     "source": "https://github.com/...",  // the public tracker thread (required for a bug of
//                                          // real_bugs/, i.e. a program not named *_fixed)
//     "project": "PyTorch",            // whose tracker
//     "class": "skipped_sync",         // kBugClasses below
//     "onset": 1,                      // the step where the bug starts (0: before the first step)
//     "best": "...",                   // one line: the verdict the best tool would give
//     "today": "onset"                 // kDetectionToday below: what lockstep gives now; must agree
//                                      // with `findings` (missed/error: none; the others: some)
//   }
//
// Any finding of a checker that is neither expected nor in `also` is a mismatch: a clean
// program ("findings": []) passes only with no finding at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/result/finding.h"

namespace lockstep::probe {

// The corpus's bug classes, what goes wrong (docs/DETECTION.md explains each).
inline constexpr const char* kBugClasses[] = {
    "skipped_sync",        // a gradient all-reduce silently not made (or not over every rank)
    "replica_drift",       // replicas start or drift apart with every sync made (init, buffers, RNG)
    "one_rank_state",      // state loaded, copied or edited on one rank only
    "hyperparameter_drift",  // learning rate or other hyperparameters differ (not "optimizer_settings")
    "wrong_collective",    // ranks call different collectives (one leaves, skips or adds one)
    "argument_mismatch",   // the same collective with arguments that do not match
    "stuck_collective",    // a collective nobody else joins, with no divergence before it
    "stalled_training",    // every rank alike, and the model does not learn
    "sharded_grads",       // a sharded computation made as if local (norms, clipping)
    "tp_input_mismatch",   // tensor-parallel ranks fed inputs that should be identical (not "tp_inputs": a checker's name)
    "group_lifecycle",     // process-group set-up or tear-down (not "teardown": a checker's name)
};

// What lockstep reports for a bug of the corpus today.
inline constexpr const char* kDetectionToday[] = {
    "onset",  // a finding at the onset step that names the bug's symptom
    "late",   // the symptom named, after the onset step
    "wrong",  // a finding at the onset step, of something else than the bug
    "failed_only",  // only the program's own failure (crash, error), not what led to it
    "missed", // no finding
    "error",  // no verdict: the run cannot be checked (exec exits 3)
};

struct ExpectedFinding {
  std::string checker;
  std::optional<int64_t> step;
  std::optional<std::vector<int>> ranks;
  std::string tensor;                         // "" = any
  std::vector<std::string> message_contains;
  std::vector<std::string> cause_contains;
  bool no_cause = false;
};

struct CatalogExpectation {
  std::filesystem::path program;  // the example, next to its sidecar
  int ranks = 2;
  int repeats = 1;
  std::string why;
  std::string launcher = "local";  // `lockstep exec --launcher`: local, mpirun (an MPI program), torchrun, accelerate
  std::optional<double> hang_timeout_s;  // `lockstep exec --hang-timeout`; unset: the test's default
  std::optional<double> startup_timeout_s;  // `lockstep exec --startup-timeout`; unset: the test's default
  std::vector<ExpectedFinding> findings;
  std::vector<std::string> also;
  // Checker -> how many tensors its verdict says it compared (CheckerVerdict::judged): 0 for a
  // program with nothing replicated of that kind, which passes only by saying so.
  std::map<std::string, int64_t> compared_tensors;
  // The corpus fields ("" / unset when the sidecar has none).
  std::string source;
  std::string project;
  std::string bug_class;
  std::optional<int64_t> onset;
  std::string best;
  std::string today;
};

// Reads `<dir>/<name>.expect.json`; `program` is `<dir>/<name>.py`. Errors name the file and
// the field.
Result<CatalogExpectation> ReadCatalogExpectation(const std::filesystem::path& sidecar);

// Every `*.expect.json` of `dir`, sorted by name.
Result<std::vector<CatalogExpectation>> ReadCatalog(const std::filesystem::path& dir);

// One line per difference between `findings` and the expectation; empty when they match.
std::vector<std::string> MatchCatalogExpectation(const CatalogExpectation& expected,
                                                 const std::vector<Finding>& findings);

}  // namespace lockstep::probe
