// `lockstep repro` end to end: a run with an injected bitflip (rank 1, step 3, one element of
// blocks.0.linear.weight), its repro on real ranks, the saved tensors and their comparison; and
// the inputs repro refuses.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::LockstepBinary;
using testing::ProgramResult;
using testing::RunProgram;

constexpr const char* kScenario = "bitflip_fail_fast";
constexpr const char* kTensorFile = "param__blocks.0.linear.weight.pt";

fs::path RunDir(const std::string& name) { return testing::FreshOutDir("e2e", name); }

ProgramResult Lockstep(const std::vector<std::string>& args) {
  return RunProgram(LockstepBinary(), args, LOCKSTEP_SOURCE_DIR);
}

fs::path TensorsBinary() { return fs::path(LOCKSTEP_BINARY_DIR) / "bin" / "lockstep-tensors"; }

// The bits of a float32 value as lockstep-tensors prints it: "-0.165881604 (0xbe29dcde)".
unsigned long Bits(const std::string& text) {
  const size_t at = text.find("(0x");
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + 3, 8), nullptr, 16);
}

// Runs the bitflip scenario and its repro into DIR = <build>/e2e/<name>.
struct BitflipRepro {
  explicit BitflipRepro(const std::string& name)
      : dir(RunDir(name)),
        run(Lockstep({"run", "fixtures/e2e/bitflip_fail_fast.yaml", "--out", dir.string()})),
        repro(Lockstep({"repro", dir.string(), kScenario})) {}
  fs::path TensorsDir() const { return dir / kScenario / "repro" / "tensors"; }

  fs::path dir;
  ProgramResult run;
  ProgramResult repro;
};

// One test: ctest runs each test of a binary as a process of its own, in parallel, so a shared
// fixture would run the scenario several times into the same folder.
TEST(ReproBitflipTest, SavesEveryRanksTensorAndNamesTheTensorTheRankAndOneElement) {
  const BitflipRepro r("repro_bitflip");
  ASSERT_EQ(r.run.exit_code, 0) << r.run.out << r.run.err;  // xfail: the injection was caught as expected
  ASSERT_EQ(r.repro.exit_code, 0) << r.repro.out << r.repro.err;

  for (int rank = 0; rank < 3; ++rank) {
    const fs::path rank_dir = r.TensorsDir() / ("rank-" + std::to_string(rank));
    EXPECT_TRUE(fs::is_regular_file(rank_dir / kTensorFile)) << rank_dir;
    std::ifstream in(rank_dir / "index.json");
    ASSERT_TRUE(in.good()) << rank_dir;
    const nlohmann::json index = nlohmann::json::parse(in);
    EXPECT_EQ(index["step"], 3);
    ASSERT_EQ(index["tensors"].size(), 1u) << index.dump(2);
    EXPECT_EQ(index["tensors"][0]["name"], "blocks.0.linear.weight");
    EXPECT_EQ(index["tensors"][0]["kind"], "param");
    EXPECT_EQ(index["tensors"][0]["file"], kTensorFile);
  }
  // The ranks stopped cleanly after step 3: the repro's traces end there, with a footer.
  for (int rank = 0; rank < 3; ++rank) {
    std::ifstream in(r.dir / kScenario / "repro" / "traces" / ("rank-" + std::to_string(rank) + ".trace"));
    int64_t last_step = -1;
    bool footer = false;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.value("type", "") == "step") last_step = j["step"].get<int64_t>();
      footer |= j.value("type", "") == "footer";
    }
    EXPECT_EQ(last_step, 3) << "rank " << rank;
    EXPECT_TRUE(footer) << "rank " << rank;
  }

  const std::string& out = r.repro.out;
  EXPECT_NE(out.find("finding: replica_weights at step 3, rank 1, tensor blocks.0.linear.weight"), std::string::npos)
      << out;
  EXPECT_NE(out.find("param:blocks.0.linear.weight  float32"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 differs from the majority, ranks 0, 2"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  rank 1: 1 differing element of \d+, max abs diff)"))) << out;
  EXPECT_NE(out.find("1 of 1 tensor differs across ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("torch.load(\"" + (r.TensorsDir() / "rank-1" / kTensorFile).string() + "\")"), std::string::npos)
      << out;
  EXPECT_NE(out.find("reproduced: the ranks differ after step 3"), std::string::npos) << out;

  // The same comparison as JSON: exactly one element, on rank 1 only.
  ProgramResult json = RunProgram(TensorsBinary(), {"compare", r.TensorsDir().string(), "--json"}, LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(json.exit_code, 1) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["tensors"].size(), 1u);
  const auto& t = j["tensors"][0];
  EXPECT_EQ(t["key"], "param:blocks.0.linear.weight");
  EXPECT_EQ(t["differing_elements"], 1);
  EXPECT_EQ(t["reference_ranks"], nlohmann::json::array({0, 2}));
  ASSERT_EQ(t["differing_ranks"].size(), 1u);
  EXPECT_EQ(t["differing_ranks"][0]["rank"], 1);
  EXPECT_EQ(t["differing_ranks"][0]["differing_elements"], 1);
  // The injection flips bit 22 of flat element 0: rank 1's bits differ from rank 0's in it alone.
  ASSERT_EQ(t["first_differences"].size(), 1u);
  EXPECT_EQ(t["first_differences"][0]["flat_index"], 0);
  const std::string bits0 = t["first_differences"][0]["values"][0]["text"];
  const std::string bits1 = t["first_differences"][0]["values"][1]["text"];
  EXPECT_EQ(Bits(bits0) ^ Bits(bits1), 1ul << 22) << bits0 << " vs " << bits1;

  // The same scenario without its injection (a bug that does not come back): not reproduced.
  const fs::path clean = r.dir / "no_injection.yaml";
  {
    std::ofstream yaml(clean);
    yaml << "ranks: 3\nsteps: 8\nmodel: {kind: mlp, hidden: 32}\n";
  }
  ProgramResult again = Lockstep({"repro", r.dir.string(), kScenario, "--scenario-file", clean.string()});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("param:blocks.0.linear.weight  float32 [32, 32]: identical on ranks 0, 1, 2"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("not reproduced: the saved tensors are identical across ranks after step 3"),
            std::string::npos)
      << again.out;
}

// The Python that has torch: $LOCKSTEP_PYTHON, then the build's (the repository's .venv, filled by
// ci/install-deps.sh), then the first python3 on PATH (which, under pyenv, may lack it).
std::string PythonWithTorch() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("LOCKSTEP_PYTHON"); env && *env) candidates.push_back(env);
  if (*LOCKSTEP_PYTHON) candidates.push_back(LOCKSTEP_PYTHON);
  candidates.push_back("python3");
  for (const std::string& python : candidates) {
    if (RunProgram("/bin/sh", {"-c", "\"$0\" -c 'import torch' 2>/dev/null", python}, LOCKSTEP_SOURCE_DIR).exit_code ==
        0) {
      return python;
    }
  }
  return "";
}

TEST(ReproBitflipTest, PythonTorchLoadReadsTheSavedTensor) {
  const std::string python = PythonWithTorch();
  if (python.empty()) {
    GTEST_SKIP() << "no python3 with torch here ($LOCKSTEP_PYTHON, " LOCKSTEP_PYTHON ", python3 on PATH; "
                    "ci/install-deps.sh installs torch into .venv): the Python side of the saved files is not checked "
                    "(they are written by torch::pickle_save, whose format torch.load reads)";
  }
  const BitflipRepro r("repro_bitflip_python");
  ASSERT_EQ(r.repro.exit_code, 0) << r.repro.out << r.repro.err;
  const fs::path file = r.TensorsDir() / "rank-1" / kTensorFile;
  ProgramResult py = RunProgram(
      "/bin/sh",
      {"-c", "\"$0\" -c 'import sys, torch; t = torch.load(sys.argv[1]); print(tuple(t.shape), t.dtype, "
             "format(t.flatten()[0].view(torch.int32).item() & 0xffffffff, \"08x\"))' \"$1\"",
       python, file.string()},
      LOCKSTEP_SOURCE_DIR);
  ASSERT_EQ(py.exit_code, 0) << py.out << py.err;
  ProgramResult json = RunProgram(TensorsBinary(), {"compare", r.TensorsDir().string(), "--json"}, LOCKSTEP_SOURCE_DIR);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const std::string text = j["tensors"][0]["first_differences"][0]["values"][1]["text"];
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08lx", Bits(text));
  EXPECT_NE(py.out.find("(32, 32) torch.float32 " + std::string(hex)), std::string::npos)
      << py.out << " should show rank 1's bits " << hex;
}

// Inputs repro refuses, on a canned report (nothing runs).
class ReproInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = RunDir(std::string("repro_inputs_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    fs::copy_file(fs::path(LOCKSTEP_SOURCE_DIR) / "fixtures" / "reports" / "mixed.report.json", dir_ / "report.json");
  }
  fs::path dir_;
};

TEST_F(ReproInputTest, ScenarioNotInTheReport) {
  ProgramResult r = Lockstep({"repro", dir_.string(), "no_such_scenario"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no scenario 'no_such_scenario'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ddp_grad_not_reduced"), std::string::npos) << "lists the ids there are: " << r.err;
}

TEST_F(ReproInputTest, ScenarioWithoutAStepFinding) {
  ProgramResult r = Lockstep({"repro", dir_.string(), "ddp_mlp_basic"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'ddp_mlp_basic' (pass) has no finding with a step"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "ddp_mlp_basic" / "repro"));
}

TEST_F(ReproInputTest, PrefersATensorFindingAndNeedsTheScenarioFile) {
  // ddp_lr_blowup has only a finite finding (step 2, no tensor); ddp_grad_not_reduced a synced_grads one.
  ProgramResult tensor = Lockstep({"repro", dir_.string(), "ddp_grad_not_reduced"});
  EXPECT_EQ(tensor.exit_code, 2);
  EXPECT_NE(tensor.out.find("finding: synced_grads at step 3"), std::string::npos) << tensor.out;
  EXPECT_NE(tensor.out.find("(the first tensor finding with a step)"), std::string::npos) << tensor.out;
  EXPECT_NE(tensor.err.find("scenarios/bugs/ddp_grad_not_reduced.yaml"), std::string::npos) << tensor.err;

  ProgramResult finite = Lockstep({"repro", dir_.string(), "ddp_lr_blowup"});
  EXPECT_EQ(finite.exit_code, 2);
  EXPECT_NE(finite.out.find("finding: finite at step 2"), std::string::npos) << finite.out;
  EXPECT_NE(finite.out.find("every tensor is saved"), std::string::npos) << finite.out;
}

// torchrun and accelerate start a user's Python program (`lockstep exec`), never lockstep-rank.
TEST_F(ReproInputTest, RefusesTheLaunchersOfExecOnly) {
  for (const std::string launcher : {"torchrun", "accelerate"}) {
    ProgramResult r = Lockstep({"repro", dir_.string(), "ddp_grad_not_reduced", "--scenario-file",
                                "scenarios/clean/ddp_mlp.yaml", "--launcher", launcher});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("lockstep repro: --launcher " + launcher + ": only for `lockstep exec`"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "ddp_grad_not_reduced" / "repro"));
  }
}

TEST_F(ReproInputTest, NotARunDirectory) {
  ProgramResult r = Lockstep({"repro", (dir_ / "missing").string(), "ddp_mlp_basic"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lockstep repro: "), std::string::npos) << r.err;
}

TEST(ReproTensorsTest, CompareRefusesAFolderThatIsNotADump) {
  ProgramResult r = RunProgram(TensorsBinary(), {"compare", LOCKSTEP_SOURCE_DIR}, LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no rank-<r> folders"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lockstep
