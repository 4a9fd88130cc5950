#include "harness/runner/exec_program.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace lockstep {
namespace {

Scenario Named(const std::string& name) {
  Scenario s;
  s.name = name;
  return s;
}

TEST(ExecProgramTest, LocalRanksRunTheCommandAsItIsWithTheProbesEnvironment) {
  ExecProgramOptions options;
  options.command = {"/usr/bin/python3", "train.py", "--lr", "0.1"};
  options.probe_dir = "/opt/lockstep/python";
  options.python_path = "/home/me/lib";
  const ExecProgram program(options);
  EXPECT_TRUE(program.Supports(RankRun::kMain));
  for (RankRun run : {RankRun::kReference, RankRun::kReferenceSplit, RankRun::kRepeat, RankRun::kRepro}) {
    EXPECT_FALSE(program.Supports(run)) << ToString(run);
  }
  const RankInvocation inv =
      program.Invocation(Named("train"), RankRun::kMain, LaunchPaths{"/runs/out/train/traces", ""});
  EXPECT_EQ(inv.argv, options.command);
  EXPECT_EQ(inv.env.at("LOCKSTEP_PROBE"), "1");
  EXPECT_EQ(inv.env.at("LOCKSTEP_TRACE_DIR"), "/runs/out/train/traces");
  EXPECT_EQ(inv.env.at("LOCKSTEP_RUN_NAME"), "train");
  EXPECT_EQ(inv.env.at("PYTHONPATH"), "/opt/lockstep/python:/home/me/lib");
}

TEST(ExecProgramTest, WithoutAProbeThePythonPathIsLeftAlone) {
  ExecProgramOptions options;
  options.command = {"/bin/true"};
  const RankInvocation inv = ExecProgram(options).Invocation(Named("x"), RankRun::kMain, LaunchPaths{"/t", ""});
  EXPECT_EQ(inv.env.count("PYTHONPATH"), 0u);
}

TEST(ExecProgramTest, UnderMpirunTorchrunsVariablesComeFromTheLaunchers) {
  ExecProgramOptions options;
  options.command = {"/usr/bin/python3", "train.py"};
  options.launcher = LauncherKind::kMpirun;
  const RankInvocation inv = ExecProgram(options).Invocation(Named("train"), RankRun::kMain, LaunchPaths{"/t", ""});
  ASSERT_EQ(inv.argv.size(), 6u);
  EXPECT_EQ(inv.argv[0], "/bin/sh");
  EXPECT_EQ(inv.argv[1], "-c");
  EXPECT_NE(inv.argv[2].find("OMPI_COMM_WORLD_RANK"), std::string::npos);
  EXPECT_NE(inv.argv[2].find("SLURM_PROCID"), std::string::npos);
  EXPECT_EQ(inv.argv[4], "/usr/bin/python3");
  EXPECT_EQ(inv.argv[5], "train.py");
}

// Runs the invocation's job-environment prelude under `env` (and nothing else) and returns what
// the program would see: "RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE".
std::string TorchrunVariablesUnder(const std::vector<std::string>& env) {
  ExecProgramOptions options;
  options.command = {"/bin/sh", "-c", "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE"};
  options.launcher = LauncherKind::kSrun;
  RankInvocation inv = ExecProgram(options).Invocation(Named("x"), RankRun::kMain, LaunchPaths{"/t", ""});
  std::string command = "env -i";
  for (const std::string& e : env) command += " '" + e + "'";
  for (const std::string& a : inv.argv) {
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  FILE* p = ::popen(command.c_str(), "r");
  std::string out;
  char buf[256];
  while (p && std::fgets(buf, sizeof(buf), p)) out += buf;
  if (p) ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Under srun a rank's LOCAL_WORLD_SIZE is its node's count of the step's tasks, not the world
// size (the cluster run of 2026-11-28: 4 where 2 ran on each node).
TEST(ExecProgramTest, UnderSrunTheLocalWorldIsThisNodesTasks) {
  const std::string path = std::string("PATH=") + std::getenv("PATH");
  EXPECT_EQ(TorchrunVariablesUnder({path, "SLURM_PROCID=3", "SLURM_NTASKS=5", "SLURM_LOCALID=1",
                                    "SLURM_STEP_TASKS_PER_NODE=2(x2),1", "SLURM_NODEID=1"}),
            "3 5 1 2");
  EXPECT_EQ(TorchrunVariablesUnder({path, "SLURM_PROCID=4", "SLURM_NTASKS=5", "SLURM_LOCALID=0",
                                    "SLURM_STEP_TASKS_PER_NODE=2(x2),1", "SLURM_NODEID=2"}),
            "4 5 0 1");
  // --ntasks-per-node without the step's table, and a launcher's own value, are kept.
  EXPECT_EQ(TorchrunVariablesUnder({path, "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_NTASKS_PER_NODE=2"}), "0 4 0 2");
  EXPECT_EQ(TorchrunVariablesUnder({path, "SLURM_PROCID=0", "SLURM_NTASKS=4", "LOCAL_WORLD_SIZE=3",
                                    "SLURM_STEP_TASKS_PER_NODE=4", "SLURM_NODEID=0"}),
            "0 4 0 3");
}

TEST(ExecProgramTest, TheScenarioIdIsTheScriptsStem) {
  EXPECT_EQ(ExecScenarioId({"python3", "examples/ddp_clean.py", "--steps", "3"}), "ddp_clean");
  EXPECT_EQ(ExecScenarioId({"python3", "-u", "-m", "mypkg.train"}), "mypkg.train");
  EXPECT_EQ(ExecScenarioId({"/opt/bin/trainer", "--config", "a.yaml"}), "trainer");
  EXPECT_EQ(ExecScenarioId({"python3", "-u", "train.py"}), "train");
  EXPECT_EQ(ExecScenarioId({"python3", "train.py", "--config", "conf.py"}), "train") << "an option's value";
}

// A wrapper's script is not the program: the script it hands on is.
TEST(ExecProgramTest, TheScenarioIdIsTheProgramsScriptNotAWrappers) {
  EXPECT_EQ(ExecScenarioId({"python3", "tools/run_unchanged.py", "examples/train.py", "--epochs", "1"}), "train");
  EXPECT_EQ(ExecScenarioId({"python3", "-m", "torch.distributed.run", "--nproc-per-node", "2", "fsdp.py"}), "fsdp");
  EXPECT_EQ(ExecScenarioId({"/bin/sh", "-c", "cd examples && python3 test_sync.py"}), "test_sync");
  EXPECT_EQ(ExecScenarioId({"accelerate", "launch", "test_script.py"}), "test_script");
}

}  // namespace
}  // namespace lockstep
