#include "probe/tests/testing/catalog_exec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"
#include "harness/result/run_result_json.h"
#include "probe/catalog_expectation.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;

// Why an MPI example cannot run with this Python, or "": it needs mpi4py, built for Open MPI
// (the MPI of lockstep's mpirun and of the PMPI wrappers exec preloads). The library version is
// asked without initializing MPI.
std::string WhyNoMpiPython() {
  const testing::ProgramResult r = testing::RunProgram(
      LOCKSTEP_PROBE_PYTHON,
      {"-c", "import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(MPI.Get_library_version())"},
      LOCKSTEP_SOURCE_DIR);
  if (r.exit_code != 0) {
    return std::string("no mpi4py for ") + LOCKSTEP_PROBE_PYTHON + " (Debian: apt-get install python3-mpi4py): " +
           r.err.substr(0, 200);
  }
  if (r.out.find("Open MPI") == std::string::npos) return "mpi4py is not built for Open MPI: " + r.out.substr(0, 120);
  return "";
}

// torchrun and accelerate are looked up on PATH: those of the probe's Python environment
// (ci/requirements.txt pins accelerate with the frameworks the examples use), as a user whose
// environment is active would have them.
void PutPythonEnvironmentFirstOnPath() {
  const std::string bin = fs::path(LOCKSTEP_PROBE_PYTHON).parent_path().string();
  const char* path = std::getenv("PATH");
  const std::string now = path ? path : "";
  if (now.rfind(bin + ":", 0) != 0) ::setenv("PATH", (bin + ":" + now).c_str(), 1);
}

bool SoakTier() {
  const char* soak = std::getenv("LOCKSTEP_SOAK");
  return soak != nullptr && std::string(soak) == "1";
}

}  // namespace

void ExecCatalogEntry(const fs::path& catalog, const std::string& suite, const std::string& name,
                      const std::string& launcher, int repeats) {
  Result<CatalogExpectation> read = ReadCatalogExpectation(catalog / (name + ".expect.json"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  CatalogExpectation e = read.value();
  if (!launcher.empty()) e.launcher = launcher;
  // A sidecar's repeats (3-5: a clean verdict that stays clean, a bug caught every time) are the
  // soak tier's (LOCKSTEP_SOAK=1, the nightly job: docs/CI.md); every push runs each program once,
  // as does a lent GPU machine, which has minutes for the whole catalog (ci/gpu-checks.sh).
  if (!SoakTier()) e.repeats = 1;
  if (repeats > 0) e.repeats = repeats;
  if (e.launcher == "mpirun") {
    const std::string why = WhyNoMpiPython();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  if (e.launcher == "torchrun" || e.launcher == "accelerate") PutPythonEnvironmentFirstOnPath();
  // The catalog is the CPU story, on any machine: its programs see no GPU. On a CUDA host torch
  // 2.11 changes what some of them do unasked, and they fail bare, without lockstep: a bare
  // init_process_group() (init_device_mesh("cpu") makes one) creates only NCCL, so a CPU
  // collective finds no backend; fully_shard's default mesh puts rank r on cuda:r, an invalid
  // ordinal with one GPU (the GPU run of 2026-11-28, tp_mesh_only, tp_mesh_only_bias_edit and
  // fsdp2_meta_init on one H100). The probe's CUDA road is its own cases' (probe_catalog_test's
  // cuda_weight_edit). Each ctest test is its own process, so the variable stays with this one.
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  // Generous: the frameworks take seconds to import on a loaded machine; a real hang is cut by
  // the watchdog. A bug that hangs says its own (still generous) limit in its sidecar.
  const std::string hang_timeout = std::to_string(static_cast<int>(e.hang_timeout_s.value_or(60)));
  const std::string startup_timeout = std::to_string(static_cast<int>(e.startup_timeout_s.value_or(300)));
  for (int repeat = 1; repeat <= e.repeats; ++repeat) {
    SCOPED_TRACE(name + " repeat " + std::to_string(repeat) + ": " + e.why);
    const fs::path out = testing::FreshOutDir(suite, name);
    const testing::ProgramResult r = testing::RunProgram(
        testing::LockstepBinary(),
        {"exec", "--ranks", std::to_string(e.ranks), "--launcher", e.launcher, "--out", out.string(), "--name", name,
         "--hang-timeout", hang_timeout,
         "--startup-timeout", startup_timeout, "--", LOCKSTEP_PROBE_PYTHON, e.program.string()},
        LOCKSTEP_SOURCE_DIR);
    const std::string said = "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
    ASSERT_EQ(r.exit_code, e.findings.empty() ? 0 : 1) << said;

    Result<RunResult> report = ReadRunResultFile((out / "report.json").string());
    ASSERT_TRUE(report.ok()) << report.status().ToString() << "\n" << said;
    ASSERT_EQ(report.value().scenarios.size(), 1u) << "an exec'd program is one scenario";
    const ScenarioResult& s = report.value().scenarios[0];
    EXPECT_EQ(s.id, name);
    // A clean verdict must have checked something; a bug may hang its ranks before their first
    // step ends (Muon's skipped all_gather), judged by what they began.
    if (e.findings.empty()) {
      EXPECT_GT(s.steps, 0) << "exec checked no step";
    }
    const std::vector<std::string> problems = MatchCatalogExpectation(e, s.findings);
    std::string text;
    for (const std::string& p : problems) text += "  " + p + "\n";
    EXPECT_TRUE(problems.empty()) << text << said;
    // What the verdicts say they compared (a pass that compared nothing says so).
    for (const auto& [checker, tensors] : e.compared_tensors) {
      const auto v = std::find_if(s.checkers.begin(), s.checkers.end(),
                                  [&](const CheckerVerdict& x) { return x.checker == checker; });
      ASSERT_NE(v, s.checkers.end()) << "no verdict of " << checker << "\n" << said;
      ASSERT_TRUE(v->judged.has_value()) << checker << " says nothing of what it compared\n" << said;
      EXPECT_EQ(v->judged->tensors, tensors) << checker << "\n" << said;
      if (tensors == 0 && checker == "replica_weights") {
        EXPECT_NE(r.out.find("no parameter had a replica to compare"), std::string::npos) << said;
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
}


}  // namespace lockstep::probe
