// `lockstep exec` end to end with bin/fake_training_program (tests/testdata/): real processes
// under the local launcher and the real watchdog, but no probe, Python or LibTorch, so these
// tests pin exec itself: the environment each rank gets, the verdicts, the bad inputs that must
// never pass, SIGINT, and the run directory's safety rules.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/cli/testing/run_program.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::LockstepBinary;
using testing::ProgramResult;
using testing::RunProgram;

fs::path RunDir(const std::string& name) { return testing::FreshOutDir("exec_test", name); }

std::string FakeProgram() { return (fs::path(LOCKSTEP_BINARY_DIR) / "bin" / "fake_training_program").string(); }

// lockstep exec --ranks N --out DIR [extra...] -- fake_training_program [args...]
ProgramResult Exec(int ranks, const fs::path& dir, std::vector<std::string> extra, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"exec", "--ranks", std::to_string(ranks), "--out", dir.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--");
  argv.push_back(FakeProgram());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(LockstepBinary(), argv, LOCKSTEP_SOURCE_DIR);
}

nlohmann::json Scenario0(const fs::path& dir) {
  std::ifstream in(dir / "report.json");
  EXPECT_TRUE(in.good()) << "no report.json in " << dir;
  if (!in.good()) return nlohmann::json::object();
  nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["scenarios"].size(), 1u) << "an exec'd program is one scenario";
  return report["scenarios"][0];
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const nlohmann::json* Verdict(const nlohmann::json& scenario, const std::string& checker) {
  for (const auto& c : scenario["checkers"]) {
    if (c["checker"] == checker) return &c;
  }
  return nullptr;
}

TEST(ExecTest, ACleanProgramPassesWithTorchrunsEnvironmentAndTheProbesOnEveryRank) {
  const fs::path dir = RunDir("clean");
  const fs::path probe = dir.parent_path() / "probe_stand_in";
  fs::create_directories(probe);
  ::setenv("LOCKSTEP_PROBE_PATH", probe.c_str(), 1);
  const ProgramResult r = Exec(2, dir, {"--name", "clean"}, {"--steps", "4"});
  ::unsetenv("LOCKSTEP_PROBE_PATH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["id"], "clean");
  EXPECT_EQ(s["outcome"], "pass") << s.dump(2);
  EXPECT_EQ(s["steps"], 4);
  EXPECT_EQ(s["ranks"], 2);
  EXPECT_EQ(s["backend"], "gloo") << "from the traces' header";
  ASSERT_NE(Verdict(s, "replica_weights"), nullptr);
  EXPECT_EQ((*Verdict(s, "replica_weights"))["outcome"], "pass");
  ASSERT_NE(Verdict(s, "reference"), nullptr);
  EXPECT_EQ((*Verdict(s, "reference"))["outcome"], "skipped");
  ASSERT_NE(Verdict(s, "config_agreement"), nullptr);
  EXPECT_EQ((*Verdict(s, "config_agreement"))["outcome"], "pass");
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = ReadFile(dir / "clean" / "logs" / ("rank-" + std::to_string(rank) + ".log"));
    EXPECT_NE(log.find("RANK=" + std::to_string(rank) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(rank) +
                       " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("LOCKSTEP_RUN_NAME=clean PYTHONPATH=" + fs::weakly_canonical(probe).string()), std::string::npos)
        << log;
    EXPECT_NE(log.find("lifeline=yes"), std::string::npos) << log;
  }
}

TEST(ExecTest, TheIdIsTheCommandsStemWithoutName) {
  const fs::path dir = RunDir("stem");
  const ProgramResult r = Exec(1, dir, {}, {"--steps", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Scenario0(dir)["id"], "fake_training_program");
  EXPECT_TRUE(fs::exists(dir / "fake_training_program" / "traces" / "rank-0.trace"));
}

TEST(ExecTest, ADriftingRankIsCaughtAtItsStepOnThatRank) {
  const fs::path dir = RunDir("drift");
  const ProgramResult r = Exec(3, dir, {"--name", "drift"}, {"--steps", "4", "--diverge-rank", "2", "--diverge-step", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "fail");
  ASSERT_GE(s["findings"].size(), 1u) << s.dump(2);
  const nlohmann::json& f = s["findings"][0];
  EXPECT_EQ(f["checker"], "replica_weights");
  EXPECT_EQ(f["step"], 3);
  EXPECT_EQ(f["ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(f["tensor"], "fc.weight");
}

TEST(ExecTest, AnExtraCollectiveOnOneRankIsACollectiveOrderFinding) {
  const fs::path dir = RunDir("extra_collective");
  const ProgramResult r =
      Exec(2, dir, {"--name", "extra"}, {"--steps", "3", "--extra-collective-rank", "0", "--extra-step", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  bool found = false;
  for (const auto& f : s["findings"]) found |= f["checker"] == "collective_order";
  EXPECT_TRUE(found) << ReadFile(dir / "report.json");
}

// The multi-slice bug's shape: every rank builds a process group mid-training. discovery_count
// names it by default; --expect-discovery allows it; a name that is no discovery call is bad input.
TEST(ExecTest, ADiscoveryCallAfterStartupIsAFindingUnlessAllowed) {
  const fs::path dir = RunDir("regroup");
  ProgramResult r = Exec(2, dir, {"--name", "regroup"}, {"--steps", "4", "--regroup-step", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  nlohmann::json s = Scenario0(dir);
  ASSERT_EQ(s["findings"].size(), 1u) << s.dump(2);
  const nlohmann::json& f = s["findings"][0];
  EXPECT_EQ(f["checker"], "discovery_count");
  EXPECT_EQ(f["step"], 3);
  EXPECT_EQ(f["ranks"], nlohmann::json::array({0, 1}));
  EXPECT_NE(f["message"].get<std::string>().find("torch.new_group at step 3 in step (from model.py:41 in forward)"),
            std::string::npos)
      << f["message"];

  const fs::path allowed = RunDir("regroup_allowed");
  r = Exec(2, allowed, {"--name", "regroup", "--expect-discovery", "torch.new_group"},
           {"--steps", "4", "--regroup-step", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Verdict(Scenario0(allowed), "discovery_count")->at("outcome"), "pass");

  const fs::path bad = RunDir("regroup_bad");
  r = Exec(2, bad, {"--expect-discovery", "torch.new_grp=2"}, {"--steps", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--expect-discovery torch.new_grp=2: unknown discovery call \"torch.new_grp\""),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(bad)) << "nothing is written for bad flags";
}

// --recorders names what it cannot do: an unknown recorder is bad input, before anything is
// written.
TEST(ExecTest, AnUnknownRecorderIsBadInput) {
  const fs::path bad = RunDir("recorders_bad");
  const ProgramResult r = Exec(2, bad, {"--recorders", "mpi,nvml"}, {"--steps", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--recorders mpi,nvml: unknown recorder \"nvml\""), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(bad)) << "nothing is written for bad flags";
}

TEST(ExecTest, ACrashIsTheCrashCheckersFinding) {
  const fs::path dir = RunDir("crash");
  const ProgramResult r = Exec(2, dir, {"--name", "crash"}, {"--steps", "4", "--crash-rank", "1", "--crash-step", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  ASSERT_GE(s["findings"].size(), 1u) << s.dump(2);
  bool crash = false;
  for (const auto& f : s["findings"]) crash |= f["checker"] == "crash" && f["ranks"] == nlohmann::json::array({1});
  EXPECT_TRUE(crash) << s.dump(2);
}

TEST(ExecTest, AHangIsStoppedAndNamed) {
  const fs::path dir = RunDir("hang");
  const ProgramResult r =
      Exec(2, dir, {"--name", "hang", "--hang-timeout", "2"}, {"--steps", "4", "--hang-rank", "1", "--hang-step", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  ASSERT_GE(s["findings"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["findings"][0]["checker"], "hang") << s.dump(2);
}

TEST(ExecTest, ACommandThatIsNotFoundIsAUsageError) {
  const fs::path dir = RunDir("not_found");
  const ProgramResult r = RunProgram(LockstepBinary(),
                                     {"exec", "--ranks", "2", "--out", dir.string(), "--", "no-such-program-xyz", "a.py"},
                                     LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("COMMAND 'no-such-program-xyz' not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir)) << "nothing is written for a command that cannot start";
}

TEST(ExecTest, AProgramThatExitsAtOnceIsAnErrorNeverAPass) {
  const fs::path dir = RunDir("exits_at_once");
  const ProgramResult r = RunProgram(LockstepBinary(), {"exec", "--ranks", "2", "--out", dir.string(), "--", "false"},
                                     LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("exited with code 1"), std::string::npos) << s.dump(2);
}

TEST(ExecTest, AProgramThatNeverInitializesIsAnError) {
  const fs::path dir = RunDir("no_init");
  const ProgramResult r = Exec(2, dir, {"--name", "no_init"}, {"--no-init"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("never initialized torch.distributed"), std::string::npos)
      << s.dump(2);
}

TEST(ExecTest, AProgramThatNeverStepsAnOptimizerIsAnError) {
  const fs::path dir = RunDir("no_step");
  const ProgramResult r = Exec(2, dir, {"--name", "no_step"}, {"--no-step"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("never stepped an optimizer"), std::string::npos) << s.dump(2);
}

TEST(ExecTest, TheRunDirectoryRulesOfRunApply) {
  const fs::path dir = RunDir("foreign_out");
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "mine";
  ProgramResult r = Exec(1, dir, {"--name", "x"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(ReadFile(dir / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(dir / "x"));
  r = Exec(1, dir, {"--name", "x", "--reuse-out"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(ReadFile(dir / "notes.txt"), "mine");
  // A folder under --out that lockstep did not make is never replaced.
  fs::create_directories(dir / "y");
  std::ofstream(dir / "y" / "data.bin") << "keep";
  r = Exec(1, dir, {"--name", "y"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(ReadFile(dir / "y" / "data.bin"), "keep");
  r = Exec(1, dir, {"--name", "../escape"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--name '../escape'"), std::string::npos) << r.err;
}

TEST(ExecTest, SigintStopsTheRanksAndIsAnError) {
  const fs::path dir = RunDir("sigint");
  const std::string binary = LockstepBinary().string();
  const std::string program = FakeProgram();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(binary.c_str(), binary.c_str(), "exec", "--ranks", "2", "--out", dir.c_str(), "--name", "long", "--",
          program.c_str(), "--steps", "100000", "--step-ms", "50", static_cast<char*>(nullptr));
    _exit(127);
  }
  const fs::path trace = dir / "long" / "traces" / "rank-1.trace";
  // Bounds a stuck test only; the ranks write their first step within a second.
  for (int i = 0; i < 600 && !(fs::exists(trace) && fs::file_size(trace) > 1024); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(trace)) << "the ranks never started";
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << "an interrupted run is not a pass";
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("interrupted"), std::string::npos) << s.dump(2);
}

// A rank whose program sets another NCCL_ALGO before it initializes: its trace header says so,
// and config_agreement names it against the majority.
TEST(ExecTest, ARankThatSetsADifferentNcclAlgoIsNamedByConfigAgreement) {
  const fs::path dir = RunDir("nccl_algo");
  ::setenv("NCCL_ALGO", "Ring", 1);  // every rank inherits it
  const ProgramResult r =
      Exec(3, dir, {"--name", "nccl_algo"}, {"--steps", "2", "--setting-rank", "1", "--setting", "NCCL_ALGO=Tree"});
  ::unsetenv("NCCL_ALGO");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "fail") << s.dump(2);
  ASSERT_EQ(s["findings"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["findings"][0]["checker"], "config_agreement");
  EXPECT_EQ(s["findings"][0]["ranks"], nlohmann::json::array({1}));
  EXPECT_NE(s["findings"][0]["message"].get<std::string>().find("rank 1 has \"Tree\" where ranks 0, 2 have \"Ring\""),
            std::string::npos)
      << s["findings"][0].dump();
}

}  // namespace
}  // namespace lockstep
