// The launchers people type, around the probe: a job that torchrun starts on its own with the
// probe's environment (docs/PROBE.md, "Without exec"), judged afterwards by `lockstep check DIR`;
// and `lockstep exec --launcher torchrun|accelerate` when that launcher is not installed. (The
// examples under `--launcher torchrun` and `--launcher accelerate` run in
// example_catalog_exec_test; the launcher's own ends under torchrun in launcher_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"
#include "harness/result/run_result_json.h"
#include "probe/catalog_expectation.h"
#include "harness/core/testing/scoped_env.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kExamples = fs::path(LOCKSTEP_SOURCE_DIR) / "examples";
const fs::path kPythonBin = fs::path(LOCKSTEP_PROBE_PYTHON).parent_path();

using testing::ScopedEnv;

// A Python program that imports torch and never initializes torch.distributed: exec quotes what
// the probe said at the rank's exit, not a guess.
TEST(LauncherExecTest, ExecQuotesWhatTheProbeSawWhenNoTraceWasWritten) {
  const fs::path out = testing::FreshOutDir("launcher_exec_test", "never_initialized");
  const fs::path program = out.parent_path() / "never_initialized.py";
  {
    std::ofstream(program) << "import torch\nprint('trained alone', torch.ones(1).item())\n";
  }
  const testing::ProgramResult r = testing::RunProgram(
      testing::LockstepBinary(),
      {"exec", "--ranks", "2", "--out", (out / "run").string(), "--", LOCKSTEP_PROBE_PYTHON, program.string()},
      LOCKSTEP_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  Result<RunResult> report = ReadRunResultFile((out / "run" / "report.json").string());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::string& reason = report.value().scenarios.at(0).reason;
  EXPECT_NE(reason.find("rank 0's probe said: no trace: this process imported torch (the probe attached) but never "
                        "initialized torch.distributed"),
            std::string::npos)
      << reason;
}

// torchrun as a user types it, the probe switched on by the environment alone (no lockstep
// process around the job), then `lockstep check DIR`: the finding names checker, step, rank and
// tensor as under `lockstep exec`; the clean program passes.
TEST(LauncherExecTest, AnyLauncherWithTheProbeEnvironmentThenCheck) {
  const fs::path probe_dir = testing::LockstepBinary().parent_path().parent_path() / "python";
  ASSERT_TRUE(fs::is_directory(probe_dir / "lockstep")) << "the build stages the probe in " << probe_dir;
  for (const std::string name : {"inplace_weight_edit", "clean_ddp_adamw"}) {
    SCOPED_TRACE(name);
    Result<CatalogExpectation> read = ReadCatalogExpectation(kExamples / (name + ".expect.json"));
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    const CatalogExpectation& e = read.value();
    const fs::path out = testing::FreshOutDir("launcher_exec_test", name);
    const fs::path traces = out / "traces";
    fs::create_directories(traces);
    {
      const char* path = std::getenv("PATH");
      ScopedEnv on("LOCKSTEP_PROBE", "1");
      ScopedEnv dir("LOCKSTEP_TRACE_DIR", traces.string());
      ScopedEnv python_path("PYTHONPATH", probe_dir.string());
      ScopedEnv bin("PATH", kPythonBin.string() + (path ? std::string(":") + path : ""));
      const testing::ProgramResult run = testing::RunProgram(
          kPythonBin / "torchrun",
          {"--standalone", "--nproc-per-node", std::to_string(e.ranks), "--max-restarts", "0", e.program.string()},
          LOCKSTEP_SOURCE_DIR);
      ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    }
    const testing::ProgramResult check =
        testing::RunProgram(testing::LockstepBinary(), {"check", traces.string(), "--out", (out / "checked").string()},
                            LOCKSTEP_SOURCE_DIR);
    ASSERT_EQ(check.exit_code, e.findings.empty() ? 0 : 1) << check.out << check.err;
    Result<RunResult> report = ReadRunResultFile((out / "checked" / "report.json").string());
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_EQ(report.value().scenarios.size(), 1u);
    const ScenarioResult& s = report.value().scenarios[0];
    EXPECT_GT(s.steps, 0);
    // `check` has no launch to judge: crash and hang are skipped, the others judge the traces.
    const std::vector<std::string> problems = MatchCatalogExpectation(e, s.findings);
    std::string text;
    for (const std::string& p : problems) text += "  " + p + "\n";
    EXPECT_TRUE(problems.empty()) << text << check.out << check.err;
  }
}

// A program that starts its own ranks (PyTorch's DDP tutorial: mp.spawn) launched on 2 ranks:
// each copy would spawn a world of its own on the program's fixed port (once a false crash). The
// probe refuses the first spawn before any process starts, and exec says why (exit 3), no finding.
TEST(LauncherExecTest, AProgramThatSpawnsItsOwnRanksIsRefusedUnderSeveralRanks) {
  const fs::path out = testing::FreshOutDir("launcher_exec_test", "spawn_under_two_ranks");
  ScopedEnv no_gpu("CUDA_VISIBLE_DEVICES", "");
  const testing::ProgramResult r = testing::RunProgram(
      testing::LockstepBinary(),
      {"exec", "--ranks", "2", "--out", (out / "run").string(), "--name", "tutorial", "--", LOCKSTEP_PROBE_PYTHON,
       (kExamples / "ddp_tutorial_spawn.py").string()},
      LOCKSTEP_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  Result<RunResult> report = ReadRunResultFile((out / "run" / "report.json").string());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const ScenarioResult& s = report.value().scenarios.at(0);
  EXPECT_EQ(s.outcome, Outcome::kError);
  EXPECT_TRUE(s.findings.empty()) << s.findings.front().message;
  EXPECT_THAT(s.reason, HasSubstr("the program starts its own ranks with torch.multiprocessing.spawn (2 processes of "
                                  "demo_basic), and lockstep started it on 2 ranks"));
  EXPECT_THAT(s.reason, HasSubstr("run it with --ranks 1"));
  EXPECT_FALSE(fs::exists(out / "run" / "tutorial" / "traces" / "spawn-1")) << "no spawning started";
}

// Not installed: a harness error (exit 3) whose message names the flag and what to install;
// nothing of the program ran.
TEST(LauncherExecTest, MissingLauncherIsAHarnessErrorNamingTheFlag) {
  for (const std::string launcher : {"torchrun", "accelerate"}) {
    SCOPED_TRACE(launcher);
    const fs::path out = testing::FreshOutDir("launcher_exec_test", "missing_" + launcher);
    ScopedEnv bin("PATH", std::string("/nonexistent-lockstep-test-bin"));
    const testing::ProgramResult r = testing::RunProgram(
        testing::LockstepBinary(),
        {"exec", "--ranks", "2", "--launcher", launcher, "--out", out.string(), "--", LOCKSTEP_PROBE_PYTHON,
         (kExamples / "clean_ddp_adamw.py").string()},
        LOCKSTEP_SOURCE_DIR);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_THAT(r.out + r.err, HasSubstr(launcher + " not found on PATH (--launcher " + launcher + " needs"));
    EXPECT_FALSE(fs::exists(out / "clean_ddp_adamw" / "traces" / "rank-0.trace"));
  }
}

}  // namespace
}  // namespace lockstep::probe
