// End-to-end launches of bin/fake_rank, with the local spawn and with mpirun: clean runs, a rank
// killed at a step, a rank hung before a collective, SIGINT/SIGTERM to us, a timeout, a missing
// program. After every launch no process carrying the launch's marker may remain.
#include "harness/launcher/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "harness/core/testing/build_paths.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/process_tree.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

const std::string kFakeRank = std::string(LOCKSTEP_BINARY_DIR) + "/bin/fake_rank";

}  // namespace

// Readable test names in ctest ("GetParam() = mpirun").
void PrintTo(LauncherKind kind, std::ostream* os) { *os << ToString(kind); }

namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LauncherTest : public ::testing::TestWithParam<LauncherKind> {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockstep-launcher-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  LaunchSpec Spec(int ranks, std::vector<std::string> args) {
    LaunchSpec spec;
    spec.kind = GetParam();
    spec.ranks = ranks;
    spec.rank_command = {kFakeRank, "--trace-dir", (dir_ / "traces").string()};
    spec.rank_command.insert(spec.rank_command.end(), args.begin(), args.end());
    spec.trace_dir = dir_ / "traces";
    spec.log_dir = dir_ / "logs";
    spec.hang_timeout_s = 2.0;
    spec.timeout_s = 60.0;
    spec.kill_grace_s = 0.5;
    spec.launch_id = NewLaunchId();
    if (spec.kind == LauncherKind::kMpirun && ::geteuid() == 0) {
      // Containers run the tests as root; mpirun refuses that without both variables. They go
      // to mpirun through spec.env, whatever the test runner's environment holds.
      spec.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      spec.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
#ifdef LOCKSTEP_PYTHON_BIN_DIR
    if (spec.kind == LauncherKind::kTorchrun || spec.kind == LauncherKind::kAccelerate) {
      // The build's Python environment holds torchrun and accelerate (ci/requirements.txt).
      const char* path = std::getenv("PATH");
      spec.env["PATH"] = std::string(LOCKSTEP_PYTHON_BIN_DIR) + (path ? std::string(":") + path : "");
    }
#endif
    return spec;
  }

  // Seconds a job launcher written in Python (torchrun, accelerate launch: an interpreter that
  // imports torch) may take before its first rank starts; the bounds below count from the
  // launch's start. Generous: the machine may be loaded.
  double LauncherStartS() const {
    return GetParam() == LauncherKind::kTorchrun || GetParam() == LauncherKind::kAccelerate ? 30.0 : 0.0;
  }

  static void ExpectNoProcessLeft(const LaunchSpec& spec) {
    EXPECT_THAT(FindProcessesWithEnv(kLaunchIdEnv, spec.launch_id), ::testing::IsEmpty())
        << "processes of launch " << spec.launch_id << " survived";
  }

  // A launcher's verdict on 3 ranks of which rank 1 was killed at step 3 (`--crash-rank 1
  // --crash-step 3`): a crash of rank 1 by SIGKILL, the others stopped by the launcher, nothing left.
  static void ExpectRank1KilledAtStep3(const Result<LaunchReport>& report, const LaunchSpec& spec) {
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
    EXPECT_EQ(report->ranks[1].signal, SIGKILL) << report->ranks[1].note;
    EXPECT_EQ(report->ranks[1].last_step, 3);
    EXPECT_FALSE(report->ranks[1].killed_by_launcher);
    EXPECT_TRUE(report->ranks[0].killed_by_launcher) << report->ranks[0].note;
    EXPECT_TRUE(report->ranks[2].killed_by_launcher) << report->ranks[2].note;
    ExpectNoProcessLeft(spec);
  }

  std::filesystem::path dir_;
};

TEST_P(LauncherTest, CleanRun) {
  LaunchSpec spec = Spec(3, {"--steps", "4", "--step-ms", "20"});
  // A stale trace of an earlier run in the same directory must not be read as this run's.
  std::filesystem::create_directories(spec.trace_dir);
  std::ofstream(RankTracePath(spec.trace_dir, 0)) << R"({"type":"step","step":99})" "\n";

  std::mutex mu;
  std::map<int, std::vector<int64_t>> steps;
  auto report = Launch(spec, [&](int rank, int64_t step) {
    std::lock_guard<std::mutex> lock(mu);
    steps[rank].push_back(step);
  });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  ASSERT_EQ(report->ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    const RankExit& e = report->ranks[static_cast<size_t>(r)];
    EXPECT_EQ(e.rank, r);
    EXPECT_EQ(e.exit_code, 0);
    EXPECT_FALSE(e.signal.has_value());
    EXPECT_EQ(e.last_step, 4);
    EXPECT_TRUE(e.trace_finished);
    EXPECT_FALSE(e.killed_by_launcher);
    ASSERT_TRUE(e.last_collective_completed.has_value());
    EXPECT_EQ(e.last_collective_completed->seq, 3u);
    EXPECT_THAT(steps[r], ElementsAre(0, 1, 2, 3, 4));
    // Each rank's output lands in its own log, with the world it was promised.
    const std::string log = ReadFile(RankLogPath(spec.log_dir, r));
    EXPECT_THAT(log, HasSubstr("fake_rank: rank=" + std::to_string(r) + " world=3 expect=3"));
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(r) + " says hello on stderr"));
    if (GetParam() == LauncherKind::kLocal) {
      EXPECT_THAT(log, HasSubstr("local_rank=" + std::to_string(r) + " local_world=3 master=127.0.0.1:"));
    }
  }
  EXPECT_TRUE(report->stalled_ranks.empty());
  EXPECT_THAT(report->command, HasSubstr("fake_rank"));
  EXPECT_GT(report->duration_s, 0.0);
  ExpectNoProcessLeft(spec);
}

TEST_P(LauncherTest, RankKilledAtStep3IsACrash) {
  // Undisturbed, this run would take 100 x 100 ms = 10 s.
  LaunchSpec spec = Spec(3, {"--steps", "100", "--step-ms", "100", "--crash-rank", "1", "--crash-step", "3"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  const RankExit& crashed = report->ranks[1];
  EXPECT_EQ(crashed.signal, SIGKILL) << crashed.note;
  EXPECT_FALSE(crashed.exit_code.has_value());
  EXPECT_EQ(crashed.last_step, 3);
  EXPECT_FALSE(crashed.trace_finished);
  EXPECT_FALSE(crashed.killed_by_launcher);
  EXPECT_THAT(report->message, HasSubstr("rank 1"));
  EXPECT_THAT(report->message, HasSubstr("last step 3"));
  for (int r : {0, 2}) {
    const RankExit& other = report->ranks[static_cast<size_t>(r)];
    EXPECT_TRUE(other.killed_by_launcher) << other.note;
    EXPECT_FALSE(other.signal.has_value());  // stopped by us: not a crash of its own
    EXPECT_FALSE(other.exit_code.has_value());
  }
  // The crash happens ~0.4 s after the ranks start; it must be reported within seconds.
  EXPECT_LT(report->duration_s, 5.0 + LauncherStartS());
  ExpectNoProcessLeft(spec);
}

TEST_P(LauncherTest, NonZeroExitCodeIsACrash) {
  // Rank 0 is still starting when rank 1 exits: Open MPI 5 names a rank only while others run.
  LaunchSpec spec = Spec(2, {"--steps", "2", "--step-ms", "10", "--exit-code", "5", "--exit-rank", "1",
                             "--startup-rank", "0", "--startup-ms", "20000"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_EQ(report->ranks[1].exit_code, 5) << report->ranks[1].note;
  EXPECT_EQ(report->ranks[1].last_step, 2);
  EXPECT_THAT(report->message, HasSubstr("rank 1"));
  ExpectNoProcessLeft(spec);
}

// Exit code 3 is lockstep-rank's harness error: no crash of the system under test.
TEST_P(LauncherTest, HarnessErrorExitCodeIsARankError) {
  LaunchSpec spec = Spec(2, {"--steps", "2", "--step-ms", "10", "--exit-code", "3", "--exit-rank", "1"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kRankError) << report->message;
  EXPECT_EQ(report->ranks[1].error, "internal: exit 3");
  EXPECT_THAT(report->message, HasSubstr("rank 1 stopped on a harness error: internal: exit 3"));
  ExpectNoProcessLeft(spec);
}

// A user program's own exit code 3 (sys.exit(3)) with a clean footer is that rank's crash: the
// harness's error channel is the footer, never an exit code a program can return. Rank 0 is still
// starting when rank 1 exits, so every launcher names rank 1 and its code (Open MPI 5 names a rank
// only while others still run: the next test).
TEST_P(LauncherTest, AProgramsOwnExitCodeThreeIsACrashNotARankError) {
  LaunchSpec spec = Spec(2, {"--steps", "2", "--step-ms", "10", "--exit-code", "3", "--exit-rank", "1", "--ok-footer",
                             "--startup-rank", "0", "--startup-ms", "20000"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_EQ(report->ranks[1].exit_code, 3) << report->message;
  EXPECT_EQ(report->ranks[1].error, "") << report->message;
  EXPECT_LT(report->duration_s, 15.0) << "rank 0 was stopped after rank 1's exit";
  ExpectNoProcessLeft(spec);
}

// The rank that exits non-zero is the last to end (its peer finished and exited 0 long before).
// Open MPI 4, torchrun and the local launcher name it; Open MPI 5's prterun prints nothing then,
// and only its own exit status carries the code: the report says so instead of naming no cause.
TEST_P(LauncherTest, ANonZeroExitOfTheLastRankToEndIsACrashWithItsCode) {
  LaunchSpec spec = Spec(2, {"--steps", "2", "--step-ms", "10", "--exit-code", "3", "--exit-rank", "1", "--ok-footer",
                             "--startup-rank", "1", "--startup-ms", "1500"});
  spec.hang_timeout_s = 30.0;  // rank 1's start-up is no hang, however loaded the machine
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_EQ(report->ranks[1].error, "") << report->message;
  EXPECT_EQ(report->ranks[0].error, "") << report->message;
  if (report->ranks[1].exit_code) {
    EXPECT_EQ(report->ranks[1].exit_code, 3) << report->message;
  } else {
    EXPECT_EQ(GetParam(), LauncherKind::kMpirun) << "only Open MPI 5 leaves the rank unnamed: " << report->message;
    EXPECT_THAT(report->message, HasSubstr("mpirun exited with code 3 without naming a rank, after every rank had "
                                           "written its trace to the end"));
  }
  ExpectNoProcessLeft(spec);
}

// A full disk is the harness's I/O failure, naming the trace, never a crash of the program.
TEST_P(LauncherTest, AFullDiskIsAHarnessErrorNamingTheTrace) {
  LaunchSpec spec = Spec(2, {"--steps", "5", "--step-ms", "10", "--fill-disk-step", "2"});
  std::error_code ec;
  std::filesystem::create_directories(spec.trace_dir, ec);
  const std::string mount = "mount -t tmpfs -o size=4m tmpfs '" + spec.trace_dir.string() + "' 2>/dev/null";
  if (std::system(mount.c_str()) != 0) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  struct Unmount {
    std::string command;
    ~Unmount() { EXPECT_EQ(std::system(command.c_str()), 0) << command; }
  } unmount{"umount '" + spec.trace_dir.string() + "'"};
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kRankError) << report->message;
  EXPECT_THAT(report->message, HasSubstr("no space left"));
  EXPECT_THAT(report->message, HasSubstr((spec.trace_dir / "rank-").string()));
  ExpectNoProcessLeft(spec);
}

// The issue's hang: rank 1 stops on an internal error while the others wait for it in a
// collective. Its footer ends the launch at once (not after hang_timeout_s), with its message.
TEST_P(LauncherTest, ErrorFooterEndsTheLaunchWithTheRanksMessage) {
  LaunchSpec spec = Spec(3, {"--steps", "10", "--step-ms", "20", "--error-rank", "1", "--error-step", "2"});
  spec.hang_timeout_s = 600;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kRankError) << report->message;
  EXPECT_EQ(report->ranks[1].error, "internal: injected error at step 2");
  EXPECT_THAT(report->message, HasSubstr("rank 1 stopped on a harness error: internal: injected error at step 2"));
  EXPECT_TRUE(report->ranks[0].killed_by_launcher);
  EXPECT_LT(report->duration_s, 300.0);
  ExpectNoProcessLeft(spec);
}

// gloo's survivors of a dead peer fail their next collective ("Connection reset by peer") and
// stop with a communication error: the crash is the dead rank's, never a harness error.
TEST_P(LauncherTest, SurvivorsOfADeadPeerAreNotItsCrashNorAHarnessError) {
  LaunchSpec spec =
      Spec(3, {"--steps", "10", "--step-ms", "100", "--crash-rank", "1", "--crash-step", "3", "--peer-lost"});
  spec.hang_timeout_s = 600;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_EQ(report->ranks[1].signal, SIGKILL) << report->ranks[1].note;
  EXPECT_FALSE(report->ranks[1].failed_after_peer);
  for (int r : {0, 2}) {
    const RankExit& e = report->ranks[static_cast<size_t>(r)];
    // Either it failed its collective after the peer died, or the launcher stopped it first.
    EXPECT_TRUE(e.failed_after_peer || e.killed_by_launcher) << "rank " << r << ": " << e.note;
    EXPECT_TRUE(e.error.empty()) << e.error;
    if (e.failed_after_peer) {
      EXPECT_THAT(e.note, HasSubstr("after rank 1 died (communication: "));
    }
  }
  EXPECT_THAT(report->message, HasSubstr("rank 1: "));
  EXPECT_THAT(report->message, HasSubstr("signal 9"));
  EXPECT_THAT(report->message, Not(HasSubstr("harness error")));
  ExpectNoProcessLeft(spec);
}

// The 2026-11-27 GPU run: a rank killed by SIGSEGV took seconds to end (its CUDA context torn
// down, 16 ranks sharing one GPU) after its sockets had closed, and its survivors' communication
// errors were judged a harness error 3 s later. A rank whose process is ending is the one that
// died: awaited where lockstep started the ranks, named from /proc where a job launcher named a
// survivor first and stopped the job.
TEST_P(LauncherTest, SurvivorsOfAPeerThatTakesSecondsToDieAreNotAHarnessError) {
  LaunchSpec spec = Spec(3, {"--steps", "10", "--step-ms", "300", "--crash-rank", "1", "--crash-step", "3",
                             "--peer-lost", "--slow-death-ms", "6000"});
  spec.hang_timeout_s = 600;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_FALSE(report->ranks[1].failed_after_peer) << report->ranks[1].note;
  EXPECT_FALSE(report->ranks[1].killed_by_launcher) << report->ranks[1].note;
  // Where lockstep reaps it, how it died (the stand-in ends by SIGKILL).
  if (GetParam() == LauncherKind::kLocal) {
    EXPECT_EQ(report->ranks[1].signal, SIGKILL) << report->ranks[1].note;
  }
  EXPECT_EQ(report->ranks[1].last_step, 3);
  for (int r : {0, 2}) {
    const RankExit& e = report->ranks[static_cast<size_t>(r)];
    EXPECT_TRUE(e.failed_after_peer || e.killed_by_launcher) << "rank " << r << ": " << e.note;
    EXPECT_TRUE(e.error.empty()) << e.error;
  }
  EXPECT_THAT(report->message, HasSubstr("rank 1: "));
  EXPECT_THAT(report->message, Not(HasSubstr("harness error")));
  ExpectNoProcessLeft(spec);
}

// A communication error with no dead peer (a refused rendezvous, a broken network) stays the
// harness's error on that rank, with its message, once the peers had a while to show a death.
TEST_P(LauncherTest, ACommunicationErrorWithNoDeadPeerIsARankError) {
  LaunchSpec spec = Spec(3, {"--steps", "10", "--step-ms", "20", "--error-rank", "1", "--error-step", "2",
                             "--error-status", "communication: rendezvous: Connection refused"});
  spec.hang_timeout_s = 600;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kRankError) << report->message;
  EXPECT_EQ(report->ranks[1].error, "communication: rendezvous: Connection refused");
  EXPECT_FALSE(report->ranks[1].failed_after_peer);
  EXPECT_THAT(report->message, HasSubstr("rank 1 stopped on a harness error: communication: rendezvous"));
  EXPECT_TRUE(report->ranks[0].killed_by_launcher);
  ExpectNoProcessLeft(spec);
}

// Start-up is timed apart: a rank slower to start than hang_timeout_s is no hang.
TEST_P(LauncherTest, SlowStartUpIsNotAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "3", "--step-ms", "10", "--startup-rank", "1", "--startup-ms", "4000"});
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 120.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  ExpectNoProcessLeft(spec);
}

// A program under exec records its first step only when it ends: ranks that all began a
// collective of step 1 have started, and a hang there is judged after hang_timeout_s, not left to
// the start-up limit (Muon's skipped all_gather, examples/real_bugs/muon_skip_none_grad.py).
TEST_P(LauncherTest, AHangInsideTheFirstStepIsAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "3", "--step-ms", "10", "--no-step-zero", "--stuck-step", "1"});
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 600.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  ExpectNoProcessLeft(spec);
}

// Without a collective of step 1 on every rank it is still start-up: a rank not there yet.
TEST_P(LauncherTest, ARankThatNeverBeganTheFirstStepIsStillStartingUp) {
  LaunchSpec spec = Spec(2, {"--steps", "3", "--step-ms", "10", "--no-step-zero", "--hang-step", "1", "--hang-rank", "1"});
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 8.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kStartupTimeout) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(1));
  ExpectNoProcessLeft(spec);
}

TEST_P(LauncherTest, StartUpTimeoutNamesTheRanksThatNeverStarted) {
  LaunchSpec spec = Spec(3, {"--steps", "3", "--step-ms", "10", "--startup-rank", "2", "--startup-ms", "600000"});
  spec.startup_timeout_s = 10.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kStartupTimeout) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(2));
  EXPECT_THAT(report->message, HasSubstr("start-up timeout: rank 2 had not recorded step 0"));
  ExpectNoProcessLeft(spec);
}

// A rank that exits 0 in the middle of the run: Open MPI does not count that as a failure of a
// non-MPI program, so under mpirun the launcher sees the process gone without a footer itself.
TEST_P(LauncherTest, EarlyQuietExitIsACrash) {
  LaunchSpec spec = Spec(3, {"--steps", "100", "--step-ms", "100", "--quit-rank", "2", "--quit-step", "2"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  const RankExit& quit = report->ranks[2];
  EXPECT_THAT(quit.note, HasSubstr("writing its trace footer"));
  EXPECT_EQ(quit.last_step, 2);
  EXPECT_FALSE(quit.killed_by_launcher);
  EXPECT_TRUE(report->ranks[0].killed_by_launcher);
  EXPECT_LT(report->duration_s, 6.0 + LauncherStartS());
  ExpectNoProcessLeft(spec);
}

TEST_P(LauncherTest, HungRankIsNamedAndEverythingIsKilled) {
  // Rank 1 blocks forever before step 2's collective (and ignores SIGTERM); the others wait in it.
  LaunchSpec spec = Spec(3, {"--steps", "10", "--step-ms", "20", "--hang-rank", "1", "--hang-step", "2",
                             "--ignore-sigterm-rank", "1"});
  spec.kill_grace_s = 2.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(1));
  EXPECT_LT(report->duration_s, spec.hang_timeout_s + 5.0 + LauncherStartS());
  for (int r = 0; r < 3; ++r) {
    const RankExit& e = report->ranks[static_cast<size_t>(r)];
    EXPECT_EQ(e.last_step, 1);
    EXPECT_TRUE(e.killed_by_launcher);
    EXPECT_FALSE(e.signal.has_value());
    ASSERT_TRUE(e.last_collective_begun.has_value());
    EXPECT_EQ(e.last_collective_begun->group, "world");
    EXPECT_EQ(e.last_collective_begun->seq, r == 1 ? 0u : 1u);
    ASSERT_TRUE(e.last_collective_completed.has_value());
    EXPECT_EQ(e.last_collective_completed->seq, 0u);
  }
  EXPECT_THAT(report->message, HasSubstr("stalled ranks: 1"));
  EXPECT_THAT(report->message, HasSubstr("rank 0: last step 1; last collective begun: world seq 1 all_reduce (step 2)"));
  ExpectNoProcessLeft(spec);
}

// An evaluation between two steps: every rank computes for longer than hang_timeout_s and records
// nothing. No rank waits on another, so it is no hang (the issue's false alarm on Fabric's example).
TEST_P(LauncherTest, AQuietPhaseThatComputesIsNotAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "4", "--step-ms", "20", "--quiet-step", "3", "--quiet-ms", "5000"});
  spec.hang_timeout_s = 1.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  ExpectNoProcessLeft(spec);
}

std::atomic<int> g_test_handler_calls{0};
void TestHandler(int) { g_test_handler_calls.fetch_add(1); }

TEST_P(LauncherTest, InterruptStopsTheRanks) {
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig);
    LaunchSpec spec = Spec(2, {"--steps", "1000", "--step-ms", "50"});
    // The caller's handler: Launch must put it back, and it keeps a signal that comes too late
    // (Launch already returned) from ending the test binary.
    struct sigaction mine {}, original {};
    mine.sa_handler = TestHandler;
    sigemptyset(&mine.sa_mask);
    ::sigaction(sig, &mine, &original);
    g_test_handler_calls = 0;
    // The signal comes once both ranks run (a step recorded), however long they took to start.
    std::set<int> running;
    auto report = Launch(spec, [&](int rank, int64_t step) {
      if (step < 1 || !running.insert(rank).second || running.size() < 2) return;
      ::kill(::getpid(), sig);
    });
    EXPECT_EQ(g_test_handler_calls.load(), 0);  // the signal went to Launch
    struct sigaction after {};
    ::sigaction(sig, &original, &after);
    EXPECT_EQ(after.sa_handler, &TestHandler);  // our handler was restored
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->ending, LaunchEnding::kInterrupted) << report->message;
    EXPECT_THAT(report->message, HasSubstr("interrupted by"));
    EXPECT_LT(report->duration_s, 10.0 + LauncherStartS());
    for (const RankExit& e : report->ranks) {
      EXPECT_TRUE(e.killed_by_launcher);
      EXPECT_TRUE(e.last_step.has_value());  // they were running when the signal came
    }
    ExpectNoProcessLeft(spec);
  }
}

TEST_P(LauncherTest, WholeLaunchTimeout) {
  LaunchSpec spec = Spec(2, {"--steps", "1000", "--step-ms", "50"});
  spec.timeout_s = 2.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kTimeout) << report->message;
  EXPECT_GE(report->duration_s, 2.0);
  EXPECT_LT(report->duration_s, 6.0 + LauncherStartS());
  ExpectNoProcessLeft(spec);
}

TEST_P(LauncherTest, MissingProgramFailsToLaunch) {
  LaunchSpec spec = Spec(2, {});
  spec.rank_command = {"/nonexistent/lockstep-rank", "--x"};
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kLaunchFailed);
  EXPECT_THAT(report->message, HasSubstr("cannot start the rank program '/nonexistent/lockstep-rank'"));

  spec.rank_command = {"lockstep-no-such-program"};
  report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kLaunchFailed);
  EXPECT_THAT(report->message, HasSubstr("'lockstep-no-such-program': not found on PATH"));
  ExpectNoProcessLeft(spec);
}

// A rank that leaves a process behind in a session of its own (one that ignores SIGTERM):
// the launch still ends with nothing left.
TEST_P(LauncherTest, LeftoverProcessesAreCleanedUp) {
  LaunchSpec spec = Spec(2, {"--steps", "2", "--step-ms", "10", "--spawn-escapee"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  ExpectNoProcessLeft(spec);
}

// torchrun starts fake_rank as any program (--no-python): the same ends, seen through torchrun.
std::vector<LauncherKind> KindsUnderTest() {
  std::vector<LauncherKind> kinds = {LauncherKind::kLocal, LauncherKind::kMpirun};
#ifdef LOCKSTEP_PYTHON_BIN_DIR
  kinds.push_back(LauncherKind::kTorchrun);
#endif
  return kinds;
}

INSTANTIATE_TEST_SUITE_P(Kinds, LauncherTest, ::testing::ValuesIn(KindsUnderTest()),
                         [](const ::testing::TestParamInfo<LauncherKind>& info) {
                           return std::string(ToString(info.param));
                         });

class LauncherOnlyLocalTest : public LauncherTest {};

// A heartbeat thread keeps the trace growing while the rank is stuck: still a hang.
TEST_P(LauncherOnlyLocalTest, HeartbeatsDoNotHideAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "10", "--step-ms", "20", "--hang-rank", "0", "--hang-step", "3",
                             "--heartbeat-ms", "100"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(0));
  ExpectNoProcessLeft(spec);
}

// Rank 0 alone evaluates while rank 1 waits for it inside the next collective: the waiting rank
// is no hang while the one it waits for computes.
TEST_P(LauncherOnlyLocalTest, APeerWaitingForARankThatComputesIsNotAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "4", "--step-ms", "20", "--quiet-step", "3", "--quiet-rank", "0",
                             "--quiet-ms", "5000"});
  spec.hang_timeout_s = 1.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
}

// The same, but rank 0 sleeps (blocked on something that never comes): it neither records nor
// uses CPU while rank 1 waits for it, so the ranks wait on each other: a hang, naming rank 0.
TEST_P(LauncherOnlyLocalTest, APeerWaitingForAnIdleRankIsAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "4", "--step-ms", "20", "--quiet-step", "3", "--quiet-rank", "0",
                             "--quiet-ms", "60000", "--quiet-sleeps"});
  spec.hang_timeout_s = 1.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(0));
  EXPECT_THAT(report->message, HasSubstr("rank 1 waited inside a collective"));
  EXPECT_THAT(report->message, HasSubstr("rank 0 neither recorded progress nor used CPU"));
  EXPECT_THAT(report->message, HasSubstr("--hang-timeout"));
  EXPECT_LT(report->duration_s, 30.0);
  ExpectNoProcessLeft(spec);
}

// Every rank blocked outside any collective, none using CPU: nothing moves, a hang.
TEST_P(LauncherOnlyLocalTest, RanksThatNeitherRecordNorComputeAreAHang) {
  LaunchSpec spec = Spec(2, {"--steps", "4", "--step-ms", "20", "--quiet-step", "2", "--quiet-ms", "60000",
                             "--quiet-sleeps"});
  spec.hang_timeout_s = 1.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_THAT(report->message, HasSubstr("ranks 0,1 neither recorded progress nor used CPU"));
  EXPECT_LT(report->duration_s, 30.0);
}

// A phase without collectives that outlasts quiet_timeout_s is a hang; the message names the
// phase (after which step, which ranks) and the flag that sets the limit.
TEST_P(LauncherOnlyLocalTest, AQuietPhaseLongerThanQuietTimeoutIsAHangNamingThePhaseAndTheFlag) {
  LaunchSpec spec = Spec(2, {"--steps", "4", "--step-ms", "20", "--quiet-step", "3", "--quiet-ms", "60000"});
  spec.hang_timeout_s = 1.0;
  spec.quiet_timeout_s = 3.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_THAT(report->stalled_ranks, ElementsAre(0, 1));
  EXPECT_THAT(report->message, HasSubstr("ranks 0,1 were still using CPU outside any collective, after step 2"));
  EXPECT_THAT(report->message, HasSubstr("quiet_timeout_s = 3 s (--quiet-timeout sets it"));
  EXPECT_LT(report->duration_s, 40.0);
  ExpectNoProcessLeft(spec);
}

// A machine so loaded that the launcher itself does not run for seconds starves its ranks too:
// neither records progress nor uses CPU, and that is no hang (a CI run at load 8 once judged one
// after 7 s under a 2 s hang timeout). Here the launcher's process and the ranks are stopped for 5 s
// (SIGSTOP from a helper process), the launcher resumed first: what it could not watch is not the
// ranks' quiet time.
TEST_P(LauncherOnlyLocalTest, ALauncherStarvedWithItsRanksJudgesNoHang) {
  LaunchSpec spec = Spec(2, {"--steps", "20", "--step-ms", "100"});
  spec.hang_timeout_s = 2.5;
  std::thread stopper([&spec] {
    std::vector<pid_t> ranks;
    for (int i = 0; i < 400 && ranks.size() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ranks = FindProcessesWithEnv(kLaunchIdEnv, spec.launch_id);
    }
    if (ranks.size() < 2) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ranks = FindProcessesWithEnv(kLaunchIdEnv, spec.launch_id);  // every process of the ranks
    const pid_t launcher = ::getpid();
    const pid_t helper = ::fork();
    if (helper == 0) {
      // Only async-signal-safe calls in the child of a threaded process.
      auto pause = [](long ms) {
        timespec t{ms / 1000, (ms % 1000) * 1000000L};
        while (::nanosleep(&t, &t) != 0) {
        }
      };
      for (pid_t p : ranks) ::kill(p, SIGSTOP);
      ::kill(launcher, SIGSTOP);
      pause(5000);
      ::kill(launcher, SIGCONT);
      pause(500);
      for (pid_t p : ranks) ::kill(p, SIGCONT);
      ::_exit(0);
    }
    int status = 0;
    if (helper > 0) ::waitpid(helper, &status, 0);
  });
  auto report = Launch(spec);
  stopper.join();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  EXPECT_GE(report->duration_s, 5.0) << "the ranks were not stopped: the test proves nothing";
  ExpectNoProcessLeft(spec);
}

// --launcher none: one child, this process's rank, inside the job we are in.
TEST_P(LauncherOnlyLocalTest, InJobRunsOneRank) {
  LaunchSpec spec = Spec(1, {"--steps", "2", "--step-ms", "10"});
  spec.kind = LauncherKind::kNone;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  EXPECT_EQ(report->ranks[0].exit_code, 0);
  EXPECT_EQ(report->ranks[0].last_step, 2);
  ExpectNoProcessLeft(spec);
}

// The rank program checks LOCKSTEP_EXPECT_WORLD_SIZE against the world it sees (here 1 of 2).
TEST_P(LauncherOnlyLocalTest, InJobWorldMismatchIsReported) {
  LaunchSpec spec = Spec(2, {"--steps", "2"});
  spec.kind = LauncherKind::kNone;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kCrash) << report->message;
  EXPECT_EQ(report->ranks[0].exit_code, 4);
  EXPECT_THAT(ReadFile(RankLogPath(spec.log_dir, 0)), HasSubstr("world size 1, but 2 was asked for"));
}

TEST(LaunchSpecTest, UnusableSpecIsAnError) {
  LaunchSpec spec;
  spec.ranks = 0;
  spec.rank_command = {"/bin/true"};
  spec.trace_dir = "/tmp";
  spec.log_dir = "/tmp";
  EXPECT_FALSE(Launch(spec).ok());
  spec.ranks = 1;
  spec.rank_command.clear();
  EXPECT_FALSE(Launch(spec).ok());
}

TEST(LaunchSpecTest, MissingMpirunFailsToLaunch) {
  const char* old_mpiexec = std::getenv("MPIEXEC");
  ::setenv("MPIEXEC", "/nonexistent/mpirun", 1);
  LaunchSpec spec;
  spec.kind = LauncherKind::kMpirun;
  spec.ranks = 2;
  spec.rank_command = {"/bin/true"};
  spec.trace_dir = std::filesystem::temp_directory_path() / "lockstep-no-mpirun";
  spec.log_dir = spec.trace_dir;
  auto report = Launch(spec);
  if (old_mpiexec) {
    ::setenv("MPIEXEC", old_mpiexec, 1);
  } else {
    ::unsetenv("MPIEXEC");
  }
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kLaunchFailed);
  EXPECT_THAT(report->message, HasSubstr("MPIEXEC"));
  std::filesystem::remove_all(spec.trace_dir);
}

#ifdef LOCKSTEP_PYTHON_BIN_DIR
// accelerate launch runs torchrun's agent in its own process: a clean run and a crash through it
// (the rest of LauncherTest holds for torchrun, which it shares).
class AccelerateLauncherTest : public LauncherTest {};

TEST_P(AccelerateLauncherTest, CleanRunGivesEachRankItsLog) {
  LaunchSpec spec = Spec(2, {"--steps", "3", "--step-ms", "20"});
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(report->ranks[static_cast<size_t>(r)].last_step, 3);
    EXPECT_THAT(ReadFile(RankLogPath(spec.log_dir, r)), HasSubstr("fake_rank: rank=" + std::to_string(r) + " world=2"));
  }
  EXPECT_THAT(report->command, HasSubstr("accelerate launch --multi_gpu --num_processes 2"));
  ExpectNoProcessLeft(spec);
}

TEST_P(AccelerateLauncherTest, RankKilledIsACrashOfThatRank) {
  LaunchSpec spec = Spec(3, {"--steps", "100", "--step-ms", "100", "--crash-rank", "1", "--crash-step", "3"});
  auto report = Launch(spec);
  ExpectRank1KilledAtStep3(report, spec);
}

INSTANTIATE_TEST_SUITE_P(Kinds, AccelerateLauncherTest, ::testing::Values(LauncherKind::kAccelerate),
                         [](const ::testing::TestParamInfo<LauncherKind>& info) {
                           return std::string(ToString(info.param));
                         });
#endif

// A torchrun slow to report: when a rank dies it stops the others at once, then prints its
// summary only 5 s later, as accelerate's Python agent did on the loaded Debian 13 root. The rank
// that died decides, in the launcher's words, with its signal: a crash, neither a hang of the
// stopped ranks (hang_timeout_s is shorter) nor a death "not reported" after 3 s.
class SlowTorchrunTest : public LauncherTest {};

TEST_P(SlowTorchrunTest, ADeathReportedLateIsACrashWithTheLaunchersWordsNotAHang) {
  const std::filesystem::path bin = dir_ / "slow-launcher-bin";
  std::filesystem::create_directories(bin);
  {
    // torchrun's command line: ... --nproc-per-node N ... --no-python PROGRAM ARGS...
    std::ofstream(bin / "torchrun") << R"(#!/bin/bash
n=1
while [[ $# -gt 0 && $1 != --no-python ]]; do [[ $1 == --nproc-per-node ]] && n=$2; shift; done
shift
declare -A rank_of
for ((r = 0; r < n; r++)); do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n "$@" &
  rank_of[$!]=$r
done
while [[ ${#rank_of[@]} -gt 0 ]]; do
  wait -n -p pid; code=$?
  r=${rank_of[$pid]}
  unset "rank_of[$pid]"
  [[ $code -eq 0 ]] && continue
  for p in "${!rank_of[@]}"; do echo "Sending process $p closing signal SIGTERM"; kill -TERM "$p"; done
  wait
  sleep 5
  sig=$((code > 128 ? code - 128 : 0))
  echo "Root Cause (first observed failure):"
  echo "[0]: time : now host : here rank : $r (local_rank: $r) exitcode : $((sig ? -sig : code)) (pid: $pid) error_file: <N/A> traceback : Signal $sig"
  exit 1
done
)";
  }
  std::filesystem::permissions(bin / "torchrun", std::filesystem::perms::owner_all);
  LaunchSpec spec = Spec(3, {"--steps", "100", "--step-ms", "100", "--crash-rank", "1", "--crash-step", "3"});
  const char* path = std::getenv("PATH");
  spec.env["PATH"] = bin.string() + (path ? std::string(":") + path : "");
  spec.hang_timeout_s = 1.0;
  auto report = Launch(spec);
  ExpectRank1KilledAtStep3(report, spec);
}

INSTANTIATE_TEST_SUITE_P(Kinds, SlowTorchrunTest, ::testing::Values(LauncherKind::kTorchrun),
                         [](const ::testing::TestParamInfo<LauncherKind>& info) {
                           return std::string(ToString(info.param));
                         });

// Not installed: the launch fails, and the message names the flag and what to install.
TEST(LaunchSpecTest, MissingTorchrunOrAccelerateFailsToLaunch) {
  for (LauncherKind kind : {LauncherKind::kTorchrun, LauncherKind::kAccelerate}) {
    SCOPED_TRACE(ToString(kind));
    LaunchSpec spec;
    spec.kind = kind;
    spec.ranks = 2;
    spec.rank_command = {"/bin/true"};
    spec.env["PATH"] = "/nonexistent";
    spec.trace_dir = std::filesystem::temp_directory_path() / ("lockstep-no-" + std::string(ToString(kind)));
    spec.log_dir = spec.trace_dir;
    auto report = Launch(spec);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->ending, LaunchEnding::kLaunchFailed);
    EXPECT_THAT(report->message, HasSubstr(std::string(ToString(kind)) + " not found on PATH"));
    EXPECT_THAT(report->message, HasSubstr(std::string("--launcher ") + ToString(kind)));
    std::filesystem::remove_all(spec.trace_dir);
  }
}

// A program that starts its own ranks (mp.spawn under `lockstep exec --ranks 1`), played by a
// shell: each spawning gets its folder and spawning.json (as probe/lockstep/_spawn.py makes them),
// then its two fake ranks with `args`, waited for; the shell itself records nothing. `after` runs
// once the spawnings are over (the program's own last phase).
LaunchSpec SpawningProgram(LaunchSpec spec, int spawnings, const std::string& args, const std::string& after = "") {
  const std::string traces = spec.trace_dir.string();
  std::string script = "set -e\n";
  for (int k = 1; k <= spawnings; ++k) {
    const std::string dir = traces + "/spawn-" + std::to_string(k);
    script += "mkdir -p " + dir + "\n";
    script += "echo '{\"spawning\": " + std::to_string(k) + ", \"function\": \"demo\", \"nprocs\": 2}' > " + dir +
              "/spawning.json.tmp && mv " + dir + "/spawning.json.tmp " + dir + "/spawning.json\n";
    for (int r = 0; r < 2; ++r) {
      script += "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCKSTEP_EXPECT_WORLD_SIZE=2 " + kFakeRank +
                " --trace-dir " + dir + " " + args + " &\n";
    }
    script += "wait\n";
  }
  script += after + "\n";
  spec.rank_command = {"/bin/sh", "-c", script};
  return spec;
}

// Rank 1 of the spawned world blocks before step 2's collective while rank 0 waits in it: a hang
// of that world, judged after hang_timeout_s as a launched world's is, naming its rank 1. The
// launched process (its waiting parent) records nothing and is not what hangs.
TEST_P(LauncherOnlyLocalTest, AHangInASpawnedWorldIsThatWorldsHang) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 1, "--steps 10 --step-ms 20 --hang-rank 1 --hang-step 2");
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 600.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_EQ(report->spawning, 1);
  ASSERT_EQ(report->ranks.size(), 2u) << "the spawned world's ranks";
  EXPECT_THAT(report->stalled_ranks, ElementsAre(1));
  EXPECT_THAT(report->message, HasSubstr("stalled ranks: 1"));
  EXPECT_THAT(report->message, HasSubstr("rank 0: last step 1; last collective begun: world seq 1 all_reduce (step 2)"));
  EXPECT_TRUE(report->ranks[0].killed_by_launcher);
  EXPECT_LT(report->duration_s, 60.0);
  ExpectNoProcessLeft(spec);
}

// What the spawned ranks do is read from their own processes, as a launched rank's: rank 0
// evaluating alone (using CPU) while rank 1 waits for it in the next collective is no hang...
TEST_P(LauncherOnlyLocalTest, ASpawnedRankThatComputesWhileItsPeerWaitsIsNoHang) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 1, "--steps 4 --step-ms 20 --quiet-step 3 --quiet-rank 0 --quiet-ms 5000");
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 600.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  ExpectNoProcessLeft(spec);
}

// ...and the same rank blocked (no CPU, no records) is the hang, named.
TEST_P(LauncherOnlyLocalTest, AnIdleSpawnedRankThatItsPeerWaitsForIsTheHang) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 1,
                                    "--steps 4 --step-ms 20 --quiet-step 3 --quiet-rank 0 --quiet-ms 60000 --quiet-sleeps");
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 600.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kHang) << report->message;
  EXPECT_EQ(report->spawning, 1);
  EXPECT_THAT(report->stalled_ranks, ElementsAre(0));
  EXPECT_THAT(report->message, HasSubstr("rank 0 neither recorded progress nor used CPU"));
  EXPECT_LT(report->duration_s, 30.0);
  ExpectNoProcessLeft(spec);
}

// Two spawnings that each train for longer than startup_timeout_s, after a quick start-up: the
// limit is each world's start-up (and the launched process's own phases), not the program's run.
TEST_P(LauncherOnlyLocalTest, SpawnedWorldsThatTrainPastTheStartUpLimitAreNoTimeout) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 2, "--steps 40 --step-ms 100");
  spec.hang_timeout_s = 30.0;
  spec.startup_timeout_s = 3.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kClean) << report->message;
  EXPECT_EQ(report->spawning, 0);
  EXPECT_GT(report->duration_s, 2 * spec.startup_timeout_s) << "the program must outlast the limit";
  ExpectNoProcessLeft(spec);
}

// A spawned rank that never starts (its step 0 never comes) while its peer has: the spawning's
// start-up timeout, naming that rank of that world.
TEST_P(LauncherOnlyLocalTest, ASpawnedRankThatNeverStartsIsItsSpawningsStartUpTimeout) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 1, "--steps 3 --step-ms 10 --startup-rank 1 --startup-ms 600000");
  spec.startup_timeout_s = 4.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kStartupTimeout) << report->message;
  EXPECT_EQ(report->spawning, 1);
  EXPECT_THAT(report->stalled_ranks, ElementsAre(1));
  EXPECT_THAT(report->message, HasSubstr("start-up timeout: rank 1 had not recorded step 0"));
  ExpectNoProcessLeft(spec);
}

// After its spawnings the launched process neither spawns again nor ends: its own phase is
// bounded by startup_timeout_s, counted from the end of its last spawning, and it is the launched
// process's ending (spawning 0), not a world's.
TEST_P(LauncherOnlyLocalTest, ALaunchedProcessStuckAfterItsSpawningsIsBoundedByTheStartUpLimit) {
  LaunchSpec spec = SpawningProgram(Spec(1, {}), 1, "--steps 3 --step-ms 10", "sleep 600");
  spec.hang_timeout_s = 1.0;
  spec.startup_timeout_s = 3.0;
  auto report = Launch(spec);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ending, LaunchEnding::kStartupTimeout) << report->message;
  EXPECT_EQ(report->spawning, 0);
  ASSERT_EQ(report->ranks.size(), 1u);
  EXPECT_THAT(report->stalled_ranks, ElementsAre(0));
  ExpectNoProcessLeft(spec);
}

INSTANTIATE_TEST_SUITE_P(Kinds, LauncherOnlyLocalTest, ::testing::Values(LauncherKind::kLocal),
                         [](const ::testing::TestParamInfo<LauncherKind>& info) {
                           return std::string(ToString(info.param));
                         });

}  // namespace
}  // namespace lockstep
