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
#include "harness/core/testing/build_paths.h"

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

// --skip-check leaves a checker out of the program's checks (its verdict is gone from the report,
// and the console says so); a name that is no checker, or a judge of how the launch ended (run
// whatever the checks list), is bad input that writes nothing.
TEST(ExecTest, SkipCheckLeavesACheckerOutAndRefusesWhatItCannotSkip) {
  const fs::path dir = RunDir("skip_check");
  ProgramResult r = Exec(2, dir, {"--name", "regroup", "--skip-check", "discovery_count"},
                         {"--steps", "4", "--regroup-step", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "pass") << s.dump(2);
  EXPECT_EQ(Verdict(s, "discovery_count"), nullptr) << s.dump(2);
  EXPECT_NE(Verdict(s, "replica_weights"), nullptr);
  EXPECT_NE(r.err.find("lockstep exec: note: not checked: discovery_count (--skip-check)"), std::string::npos)
      << r.err;

  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"discovery_cnt", "--skip-check discovery_cnt: no such checker (the checkers: replica_weights, "},
           {"hang", "--skip-check hang: it judges a launch that ends in hang, which is judged whatever checkers "
                    "run; it cannot be skipped"}}) {
    const fs::path bad = RunDir("skip_check_" + flag);
    r = Exec(2, bad, {"--skip-check", flag}, {"--steps", "2"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(bad)) << "nothing is written for bad flags";
  }
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
  // A C++ program: no probe in it to say what it saw, so the reason guesses nothing
  // (probe/tests/launcher_exec_test.cc has the probe's own word for a Python program).
  EXPECT_NE(s["reason"].get<std::string>().find("no trace from rank 0"), std::string::npos) << s.dump(2);
  EXPECT_NE(s["reason"].get<std::string>().find("the probe said nothing"), std::string::npos) << s.dump(2);
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

// A user's train/ holding logs/ (TensorBoard beside train.py, whose id is `train`) was deleted by
// `exec --out . --reuse-out`, and by any run into a marked run directory: its entry names looked
// like a scenario folder's. Only lockstep's own marker makes a folder lockstep's.
TEST(ExecTest, AUsersFolderThatLooksLikeARunsIsNeverDeleted) {
  const fs::path dir = RunDir("users_train");
  fs::create_directories(dir / "train" / "logs");
  std::ofstream(dir / "train" / "logs" / "events.out.tfevents") << "tensorboard";
  std::ofstream(dir / "train.py") << "print('hi')";
  ProgramResult r = Exec(1, dir, {"--name", "train", "--reuse-out"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("lockstep did not make"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(dir / "train" / "logs" / "events.out.tfevents"), "tensorboard");

  const fs::path marked = RunDir("marked_train");
  r = Exec(1, marked, {"--name", "first"}, {"--steps", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::create_directories(marked / "train" / "logs");
  std::ofstream(marked / "train" / "logs" / "events.out.tfevents") << "tensorboard";
  fs::create_directories(marked / "train" / "traces");
  r = Exec(1, marked, {"--name", "train"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(ReadFile(marked / "train" / "logs" / "events.out.tfevents"), "tensorboard");
  // Its own folders it replaces.
  r = Exec(1, marked, {"--name", "first"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

pid_t StartExec(const std::vector<std::string>& args);

// Two runs into one --out overwrote each other's traces and report: the second is refused while
// the first lives, and the first finishes untouched.
TEST(ExecTest, ASecondRunIntoALiveRunsDirectoryIsRefused) {
  const fs::path dir = RunDir("locked");
  const pid_t first = StartExec({"exec", "--ranks", "2", "--out", dir.string(), "--name", "long", "--", FakeProgram(),
                                 "--steps", "100000", "--step-ms", "50"});
  ASSERT_GT(first, 0);
  const fs::path trace = dir / "long" / "traces" / "rank-1.trace";
  for (int i = 0; i < 1200 && !(fs::exists(trace) && fs::file_size(trace) > 1024); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(trace)) << "the first run never started";
  for (const char* name : {"long", "other"}) {
    ProgramResult r = Exec(1, dir, {"--name", name}, {"--steps", "1"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("another lockstep run is writing into it (pid " + std::to_string(first) + ")"),
              std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "other"));
  EXPECT_TRUE(fs::exists(trace)) << "the first run's traces are untouched";
  kill(first, SIGINT);
  int status = 0;
  waitpid(first, &status, 0);
  // Once it has ended, the directory is free again.
  ProgramResult r = Exec(1, dir, {"--name", "other"}, {"--steps", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A program that starts ranks of its own (mp.spawn under --ranks 1) wrote traces exec never
// judged: it passed while `check` of the same folder found the divergence.
TEST(ExecTest, TracesOfRanksTheProgramStartedItselfAreNeverIgnored) {
  const fs::path dir = RunDir("self_spawned");
  const std::string fake = FakeProgram();
  const std::string script = "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 " + fake +
                             " --steps 3 --diverge-rank 1 --diverge-step 2 & RANK=0 WORLD_SIZE=2 " + fake +
                             " --steps 3; wait";
  const ProgramResult r = RunProgram(LockstepBinary(),
                                     {"exec", "--ranks", "1", "--out", dir.string(), "--name", "spawn", "--",
                                      "/bin/sh", "-c", script},
                                     LOCKSTEP_SOURCE_DIR);
  EXPECT_NE(r.exit_code, 0) << "never a pass\n" << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_EQ(s["outcome"], "error") << s.dump(2);
  EXPECT_NE(s["reason"].get<std::string>().find("the program started more ranks than --ranks 1"), std::string::npos)
      << s.dump(2);
}

// A rank's exit code is the program's own: a user's sys.exit(3) (or 2) on one rank is a crash of
// that rank at its step, not a harness error; its peers are no harness errors either. A user's
// sys.exit(0) mid-run blames the rank that left, never rank 0 whose collective failed first.
TEST(ExecTest, AProgramsOwnExitCodeIsItsCrashNeverAHarnessError) {
  for (const char* code : {"3", "2", "0"}) {
    const fs::path dir = RunDir(std::string("leave_") + code);
    ProgramResult r = Exec(2, dir, {"--name", "leave"},
                           {"--steps", "5", "--leave-rank", "1", "--leave-step", "2", "--leave-code", code});
    EXPECT_EQ(r.exit_code, 1) << "a finding against the program, exit code " << code << "\n" << r.out << r.err;
    const nlohmann::json s = Scenario0(dir);
    EXPECT_EQ(s["outcome"], "fail") << code << "\n" << s.dump(2);
    EXPECT_EQ(s["reason"].get<std::string>().find("harness error"), std::string::npos) << code << "\n" << s.dump(2);
    const nlohmann::json* crash = Verdict(s, "crash");
    ASSERT_NE(crash, nullptr) << s.dump(2);
    EXPECT_EQ(crash->at("outcome"), "fail") << code << "\n" << s.dump(2);
    bool named = false;
    for (const auto& f : s["findings"]) {
      if (f["checker"] != "crash") continue;
      EXPECT_EQ(f["ranks"], nlohmann::json::array({1})) << code << "\n" << f.dump(2);
      named = true;
    }
    EXPECT_TRUE(named) << code << "\n" << s.dump(2);
    EXPECT_EQ(s["reason"].get<std::string>().find("stopped on a harness error"), std::string::npos) << s.dump(2);
  }
}

// A start-up timeout names the rank that never reached the first collective, not the ones that
// wait in it for that rank.
TEST(ExecTest, AStartupTimeoutNamesOnlyTheRankTheOthersWaitFor) {
  const fs::path dir = RunDir("startup_culprit");
  ProgramResult r = Exec(3, dir, {"--name", "stall", "--startup-timeout", "3"}, {"--startup-stall-rank", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json s = Scenario0(dir);
  EXPECT_NE(s["reason"].get<std::string>().find("start-up timeout: rank 2 had not recorded step 0"), std::string::npos)
      << s.dump(2);
  for (const auto& f : s["findings"]) {
    if (f["checker"] == "startup") {
      EXPECT_EQ(f["ranks"], nlohmann::json::array({2})) << f.dump(2);
    }
  }
}

// --expect-discovery and --mpirun-args are repeatable, as documented and as in `run`.
TEST(ExecTest, RepeatableFlagsRepeat) {
  const fs::path dir = RunDir("repeat_flags");
  ProgramResult r = Exec(2, dir, {"--name", "regroup", "--expect-discovery", "torch.new_group", "--expect-discovery",
                                  "torch.init_process_group=2"},
                         {"--steps", "4", "--regroup-step", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path mpi = RunDir("repeat_mpirun_args");
  // Each value reaches mpirun: -x exports a variable to the ranks, which the program prints.
  r = Exec(2, mpi, {"--name", "mpi", "--launcher", "mpirun", "--mpirun-args=--mca", "--mpirun-args=btl",
                    "--mpirun-args=self,vader,tcp", "--mpirun-args=-x", "--mpirun-args=LOCKSTEP_TEST_MARK=repeated"},
           {"--steps", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(ReadFile(mpi / "mpi" / "logs" / "rank-1.log").find("mark=repeated"), std::string::npos)
      << ReadFile(mpi / "mpi" / "logs" / "rank-1.log");
}

// A 5 MB last line of a rank's output was copied whole into the console and three times into
// report.json: quoted output is cut, first and last bytes with the count.
TEST(ExecTest, LongOutputIsCutInMessagesAndReports) {
  const fs::path dir = RunDir("long_line");
  ProgramResult r = Exec(1, dir, {"--name", "long"}, {"--no-init", "--print-bytes", "5000000"});
  EXPECT_EQ(r.exit_code, 3) << r.err.substr(0, 2000);
  EXPECT_LT(r.out.size() + r.err.size(), 100000u);
  const std::string report = ReadFile(dir / "report.json");
  EXPECT_LT(report.size(), 100000u);
  EXPECT_NE(report.find("bytes cut]"), std::string::npos) << report.substr(0, 3000);
  EXPECT_EQ(fs::file_size(dir / "long" / "logs" / "rank-0.log") > 5000000, true) << "the log itself is whole";
}

// `lockstep exec ... | head`: a closed stdout killed lockstep by SIGPIPE, with no report.
TEST(ExecTest, AClosedStdoutIsNoDeathAndTheReportIsWritten) {
  const fs::path dir = RunDir("closed_stdout");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // nobody reads
  const std::string binary = LockstepBinary().string();
  const std::string program = FakeProgram();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);
    dup2(fds[1], 1);
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(binary.c_str(), binary.c_str(), "exec", "--ranks", "2", "--out", dir.c_str(), "--name", "piped", "--",
          program.c_str(), "--steps", "3", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_TRUE(fs::exists(dir / "report.json"));
  EXPECT_EQ(Scenario0(dir)["outcome"], "pass");
}

// Processes that hard-code world_size=1 each call themselves rank 0: they wrote one
// rank-0.trace together, read back as "not a JSON trace record". The second is refused by name.
TEST(ExecTest, TwoProcessesThatBothCallThemselvesRankZeroAreNamed) {
  const fs::path dir = RunDir("world_size_1");
  const std::string script = "RANK=0 WORLD_SIZE=1 exec " + FakeProgram() + " --steps 3 --step-ms 100";
  const ProgramResult r = RunProgram(LockstepBinary(),
                                     {"exec", "--ranks", "2", "--out", dir.string(), "--name", "w1", "--", "/bin/sh",
                                      "-c", script},
                                     LOCKSTEP_SOURCE_DIR);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  const std::string said = r.out + r.err + ReadFile(dir / "report.json");
  EXPECT_NE(said.find("another process of this run already writes rank 0's trace"), std::string::npos) << said;
  EXPECT_EQ(said.find("not a JSON trace record"), std::string::npos) << said;
}

// `repro` of an exec run printed "scenario file : : 1 error": an exec run has no scenario file.
TEST(ExecTest, ReproOfAnExecRunSaysItHasNoScenarioFile) {
  const fs::path dir = RunDir("repro_exec");
  ProgramResult r = Exec(2, dir, {"--name", "drift"}, {"--diverge-rank", "1", "--diverge-step", "2"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  r = RunProgram(LockstepBinary(), {"repro", dir.string(), "drift"}, LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("has no scenario file (it was run by `lockstep exec`"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("scenario file :"), std::string::npos) << r.err;
}

// Every live process whose environment mentions `needle` (exec gives each rank its run
// directory in LOCKSTEP_TRACE_DIR; mpirun carries it too).
std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadFile(e.path() / "stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    const std::string env{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (env.find(needle) != std::string::npos) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Starts `lockstep exec ARGS` in the background (output to /dev/null); returns its pid.
pid_t StartExec(const std::vector<std::string>& args) {
  const std::string binary = LockstepBinary().string();
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execv(binary.c_str(), c.data());
    _exit(127);
  }
  return pid;
}

// SIGKILL of `lockstep exec` at start-up (ranks that run no code of lockstep's: a shell, a
// program that never reaches init_process_group) and mid-run (a program that never watches the
// lifeline), under the local launcher and under mpirun: 2 s later no process of the run is left.
struct OrphanCase {
  std::string name;
  std::string launcher;
  bool mid_run;  // the fake training program has recorded a step; else a shell that only sleeps
};

class ExecSigkillTest : public ::testing::TestWithParam<OrphanCase> {};

TEST_P(ExecSigkillTest, NoProcessOfTheRunOutlivesLockstep) {
  const OrphanCase& c = GetParam();
  const fs::path dir = RunDir("sigkill_" + c.name);
  std::vector<std::string> args = {"exec", "--ranks", "2", "--launcher", c.launcher, "--out", dir.string(),
                                   "--name", "orphans", "--startup-timeout", "600", "--hang-timeout", "600", "--"};
  if (c.mid_run) {
    for (const std::string& a : {FakeProgram(), std::string("--steps"), std::string("100000"), std::string("--step-ms"),
                                 std::string("50"), std::string("--ignore-lifeline")}) {
      args.push_back(a);
    }
  } else {
    for (const char* a : {"/bin/sh", "-c", "sleep 300; echo never"}) args.push_back(a);
  }
  const pid_t pid = StartExec(args);
  ASSERT_GT(pid, 0);
  const std::string needle = (dir / "orphans").string();
  // Bounds a stuck test only: the ranks start within seconds.
  bool started = false;
  for (int i = 0; i < 1200 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (c.mid_run) {
      const fs::path trace = dir / "orphans" / "traces" / "rank-1.trace";
      std::error_code ec;
      started = fs::exists(trace, ec) && fs::file_size(trace, ec) > 1024;
    } else {
      started = ProcessesMentioning(needle).size() >= 2;  // both ranks (and mpirun) are up
    }
  }
  ASSERT_TRUE(started) << "the ranks never started";
  ASSERT_FALSE(ProcessesMentioning(needle).empty());
  ::kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::vector<pid_t> left = ProcessesMentioning(needle);
  std::string names;
  for (pid_t p : left) names += " " + std::to_string(p) + ":" + ReadFile("/proc/" + std::to_string(p) + "/comm");
  EXPECT_TRUE(left.empty()) << "processes of the run outlived lockstep exec by 2 s:" << names;
  for (pid_t p : left) ::kill(p, SIGKILL);  // leave the machine clean either way
}

INSTANTIATE_TEST_SUITE_P(Launchers, ExecSigkillTest,
                         ::testing::Values(OrphanCase{"local_startup", "local", false},
                                           OrphanCase{"local_mid_run", "local", true},
                                           OrphanCase{"mpirun_startup", "mpirun", false},
                                           OrphanCase{"mpirun_mid_run", "mpirun", true}),
                         [](const ::testing::TestParamInfo<OrphanCase>& info) { return info.param.name; });

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
