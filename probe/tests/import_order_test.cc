// The probe's import hook (probe/lockstep/_startup.py) whatever comes before torch (issue 48):
// transformers asks `importlib.util.find_spec("torch")` and throws the spec away long before
// anything imports torch; a program may also import torch from a thread, or by
// `importlib.import_module` / `from torch import nn`. Each program of probe/tests/programs/
// import_order_*.py runs through `lockstep exec` twice: clean (exit 0), and with rank 1 editing a
// weight after step 2 (IMPORT_ORDER_BUG=1), which must be found at step 2 -- proof that torch was
// instrumented, not merely that the program ran (accelerate and lightning import torch themselves
// at once, so their program guards that road rather than the lookup). Then the hook itself, in one
// interpreter: it survives lookups, goes once torch has executed, and leaves a program without
// torch alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"
#include "harness/result/run_result_json.h"
#include "harness/core/testing/scoped_env.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kPrograms = fs::path(LOCKSTEP_SOURCE_DIR) / "probe" / "tests" / "programs";

using testing::ScopedEnv;

bool PythonHas(const std::string& module) {
  const testing::ProgramResult r = testing::RunProgram(
      LOCKSTEP_PROBE_PYTHON, {"-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('" + module +
                                        "') is None)"},
      LOCKSTEP_SOURCE_DIR);
  return r.exit_code == 0;
}

class ImportOrder : public ::testing::TestWithParam<std::string> {};

TEST_P(ImportOrder, CleanPassesAndAWeightEditIsFoundAtItsStep) {
  const std::string name = "import_order_" + GetParam();
  if (GetParam() == "accelerate" && !(PythonHas("accelerate") && PythonHas("lightning"))) {
    GTEST_SKIP() << "accelerate or lightning is not installed in " << LOCKSTEP_PROBE_PYTHON;
  }
  if (GetParam() == "transformers" && !PythonHas("transformers")) {
    GTEST_SKIP() << "transformers is not installed in " << LOCKSTEP_PROBE_PYTHON;
  }
  ScopedEnv cpu("CUDA_VISIBLE_DEVICES", std::string());
  for (const bool bug : {false, true}) {
    SCOPED_TRACE(bug ? "with the edit" : "clean");
    ScopedEnv edit("IMPORT_ORDER_BUG", bug ? "1" : "0");
    const fs::path out = testing::FreshOutDir("import_order_test", name + (bug ? "_edit" : "_clean"));
    const testing::ProgramResult r = testing::RunProgram(
        testing::LockstepBinary(),
        {"exec", "--ranks", "2", "--out", out.string(), "--name", name, "--", LOCKSTEP_PROBE_PYTHON,
         (kPrograms / (name + ".py")).string()},
        LOCKSTEP_SOURCE_DIR);
    ASSERT_EQ(r.exit_code, bug ? 1 : 0) << r.out << r.err;
    Result<RunResult> report = ReadRunResultFile((out / "report.json").string());
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_EQ(report.value().scenarios.size(), 1u);
    const ScenarioResult& s = report.value().scenarios[0];
    EXPECT_EQ(s.steps, 4) << r.out;
    if (!bug) {
      EXPECT_TRUE(s.findings.empty()) << r.out;
      continue;
    }
    ASSERT_EQ(s.findings.size(), 1u) << r.out;
    const Finding& f = s.findings[0];
    EXPECT_EQ(f.checker, "replica_weights");
    EXPECT_EQ(f.step, 2);
    EXPECT_EQ(f.tensor, "0.weight");
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, ImportOrder,
                         ::testing::Values("transformers", "find_spec", "accelerate", "thread"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The hook in one interpreter, as sitecustomize installs it under LOCKSTEP_PROBE=1: lookups of
// torch (their specs thrown away) leave it on sys.meta_path; executing torch attaches the probe
// and removes it; the loader torch keeps is still usable as its own (importlib.resources).
TEST(ImportOrderHook, SurvivesLookupsAndGoesOnceTorchHasExecuted) {
  const fs::path stage = testing::LockstepBinary().parent_path().parent_path() / "python";
  ASSERT_TRUE(fs::is_directory(stage / "lockstep")) << "the build stages the probe in " << stage;
  ScopedEnv on("LOCKSTEP_PROBE", "1");
  ScopedEnv path("PYTHONPATH", stage.string());
  ScopedEnv trace("LOCKSTEP_TRACE_DIR", std::nullopt);
  const std::string script = R"(
import importlib.util, sys
from lockstep import _startup
hooks = lambda: [f for f in sys.meta_path if isinstance(f, _startup._AfterTorchImport)]
assert len(hooks()) == 1, sys.meta_path
spec = importlib.util.find_spec("torch")
assert spec is not None and spec.origin.endswith("__init__.py"), spec
assert importlib.util.find_spec("torch") is not None
assert len(hooks()) == 1, "a lookup used up the hook"
assert "torch" not in sys.modules
_startup.install()  # a second install (sitecustomize and the .pth) adds nothing
assert len(hooks()) == 1
from torch import nn
from lockstep import _auto
assert _auto._installed, "torch was imported but not instrumented"
assert hooks() == [], "the hook outlived torch's import"
import torch, importlib.resources
assert torch.__loader__.is_package("torch")
assert importlib.resources.files("torch").joinpath("__init__.py").is_file()
print("hook ok")
)";
  const testing::ProgramResult r = testing::RunProgram(LOCKSTEP_PROBE_PYTHON, {"-c", script}, LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("hook ok"));
  EXPECT_THAT(r.err, Not(HasSubstr("lockstep probe:")));
}

// A program that never imports torch (it may still ask whether torch is there): runs as without
// the probe, says nothing, and exits with its own code.
TEST(ImportOrderHook, AProgramWithoutTorchIsLeftAlone) {
  const fs::path stage = testing::LockstepBinary().parent_path().parent_path() / "python";
  ScopedEnv on("LOCKSTEP_PROBE", "1");
  ScopedEnv path("PYTHONPATH", stage.string());
  const testing::ProgramResult r = testing::RunProgram(
      LOCKSTEP_PROBE_PYTHON,
      {"-c", "import importlib.util, json, sys\nassert importlib.util.find_spec('torch') is not None\n"
             "assert importlib.util.find_spec('no_such_module_lockstep') is None\n"
             "print(json.dumps({'torch': 'torch' in sys.modules}))\nsys.exit(7)\n"},
      LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("{\"torch\": false}"));
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace lockstep::probe
