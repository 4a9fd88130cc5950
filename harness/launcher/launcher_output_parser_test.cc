#include "harness/launcher/launcher_output_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

namespace lockstep {
namespace {

using ::testing::HasSubstr;

// Captured from Open MPI 4.1.4's mpirun on this machine (a rank killed by SIGKILL).
constexpr const char* kOmpi4Signal = R"(--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
--------------------------------------------------------------------------
)";

// Captured from Open MPI 4.1.4's mpirun on this machine (a rank that exited with code 3).
constexpr const char* kOmpi4ExitCode = R"(--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[23619,1],1]
  Exit code:    3
--------------------------------------------------------------------------
)";

TEST(LauncherOutputParserTest, OpenMpiSignal) {
  const auto facts = ParseLauncherOutput(kOmpi4Signal);
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].rank, 1);
  EXPECT_EQ(facts.failures[0].signal, SIGKILL);
  EXPECT_FALSE(facts.failures[0].exit_code.has_value());
  EXPECT_THAT(facts.failures[0].message, HasSubstr("exited on signal 9 (Killed)"));
  EXPECT_FALSE(facts.launch_error.has_value());
}

TEST(LauncherOutputParserTest, OpenMpiExitCode) {
  const auto facts = ParseLauncherOutput(kOmpi4ExitCode);
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].rank, 1);
  EXPECT_EQ(facts.failures[0].exit_code, 3);
  EXPECT_FALSE(facts.failures[0].signal.has_value());
}

// The same message wrapped at other places, as other Open MPI versions print it.
TEST(LauncherOutputParserTest, WrappedSignalMessage) {
  const auto facts = ParseLauncherOutput(
      "mpirun noticed that process rank 12 with PID 4242 on node\n  gpu-node-07 exited on signal 11\n(Segmentation fault).\n");
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].rank, 12);
  EXPECT_EQ(facts.failures[0].signal, SIGSEGV);
}

TEST(LauncherOutputParserTest, OpenMpi5ProcessName) {
  const auto facts = ParseLauncherOutput(
      "prterun detected that one or more processes exited with non-zero status,\nthus causing the job to be "
      "terminated. The first process to do so was:\n\n   Process name: [prterun-node1-12345@1,2]\n   Exit code:    7\n");
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].rank, 2);
  EXPECT_EQ(facts.failures[0].exit_code, 7);
}

TEST(LauncherOutputParserTest, ExitingImproperly) {
  const auto facts = ParseLauncherOutput(
      "mpirun has exited due to process rank 3 with PID 999 on\nnode x exiting improperly. There are three reasons "
      "this could occur:\n");
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].rank, 3);
  EXPECT_FALSE(facts.failures[0].exit_code.has_value());
  EXPECT_FALSE(facts.failures[0].signal.has_value());
}

TEST(LauncherOutputParserTest, SrunTaskErrors) {
  const auto facts = ParseLauncherOutput(
      "srun: error: nid001: task 1: Killed\n"
      "srun: launch/slurm: _step_signal: Terminating StepId=12.0\n"
      "srun: error: nid002: tasks 2-3: Exited with exit code 3\n"
      "srun: error: nid001: task 0: Segmentation fault (core dumped)\n");
  ASSERT_EQ(facts.failures.size(), 4u);
  EXPECT_EQ(facts.failures[0].rank, 1);
  EXPECT_EQ(facts.failures[0].signal, SIGKILL);
  EXPECT_EQ(facts.failures[1].rank, 2);
  EXPECT_EQ(facts.failures[1].exit_code, 3);
  EXPECT_EQ(facts.failures[2].rank, 3);
  EXPECT_EQ(facts.failures[2].exit_code, 3);
  EXPECT_EQ(facts.failures[3].rank, 0);
  EXPECT_EQ(facts.failures[3].signal, SIGSEGV);
}

TEST(LauncherOutputParserTest, OneFailurePerRank) {
  const std::string both = std::string(kOmpi4Signal) + kOmpi4ExitCode;
  const auto facts = ParseLauncherOutput(both);
  ASSERT_EQ(facts.failures.size(), 1u);
  EXPECT_EQ(facts.failures[0].signal, SIGKILL);  // the first message wins
}

TEST(LauncherOutputParserTest, LaunchErrors) {
  const auto missing = ParseLauncherOutput(
      "--------------------------------------------------------------------------\n"
      "mpirun was unable to find the specified executable file, and therefore\n"
      "did not launch the job.  This error was first reported for process\n"
      "rank 0; it may have occurred for other processes as well.\n"
      "--------------------------------------------------------------------------\n");
  ASSERT_TRUE(missing.launch_error.has_value());
  EXPECT_THAT(*missing.launch_error, HasSubstr("unable to find the specified executable file"));
  EXPECT_THAT(*missing.launch_error, HasSubstr("rank 0"));
  EXPECT_TRUE(missing.failures.empty());

  const auto root = ParseLauncherOutput("mpirun has detected an attempt to run as root.\nRunning as root is *strongly* discouraged\n");
  ASSERT_TRUE(root.launch_error.has_value());
  EXPECT_THAT(*root.launch_error, HasSubstr("run as root"));
}

TEST(LauncherOutputParserTest, NothingToSay) {
  const auto facts = ParseLauncherOutput("hello from rank 0\n");
  EXPECT_TRUE(facts.failures.empty());
  EXPECT_FALSE(facts.launch_error.has_value());
  EXPECT_TRUE(ParseLauncherOutput("").failures.empty());
}

// Captured from torch 2.11's torchrun on this machine (--max-restarts 0, 3 ranks): rank 1 killed
// by SIGKILL first, rank 2 exited with code 3, and torchrun stopped rank 0 with SIGTERM.
constexpr const char* kTorchrunFailures = R"(W1125 12:19:29.124000 30277 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 30326 closing signal SIGTERM
E1125 12:19:29.132000 30277 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: -9) local_rank: 1 (pid: 30327) of binary: python
Traceback (most recent call last):
  ...
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
python FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-25_12:19:29
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : 3 (pid: 30328)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-11-25_12:19:29
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 30326)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 30326
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-25_12:19:29
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 30327)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 30327
============================================================

)";

TEST(LauncherOutputParserTest, TorchrunNamesTheFailedRanksRootCauseFirst) {
  const LauncherOutputFacts facts = ParseLauncherOutput(kTorchrunFailures);
  ASSERT_EQ(facts.failures.size(), 2u);  // rank 0 was torchrun's own victim: not a failure
  EXPECT_EQ(facts.failures[0].rank, 1);
  EXPECT_EQ(facts.failures[0].signal, SIGKILL);
  EXPECT_FALSE(facts.failures[0].exit_code.has_value());
  EXPECT_THAT(facts.failures[0].message, HasSubstr("rank 1 (pid 30327) killed by signal 9"));
  EXPECT_THAT(facts.failures[0].message, HasSubstr("first observed failure"));
  EXPECT_EQ(facts.failures[1].rank, 2);
  EXPECT_EQ(facts.failures[1].exit_code, 3);
  EXPECT_EQ(facts.failures[1].message, "rank 2 (pid 30328) exited with code 3");
  EXPECT_FALSE(facts.failures[1].signal.has_value());
  EXPECT_FALSE(facts.launch_error.has_value());
}

// A rank that torchrun did not stop itself but that died of SIGTERM is a failure like any other.
TEST(LauncherOutputParserTest, TorchrunSigtermFromElsewhereIsAFailure) {
  std::string text = kTorchrunFailures;
  const size_t closing = text.find("closing signal SIGTERM");
  ASSERT_NE(closing, std::string::npos);
  text.replace(closing, 7, "CLOSING");  // the agent's own "Sending process N closing signal" line gone
  const LauncherOutputFacts facts = ParseLauncherOutput(text);
  ASSERT_EQ(facts.failures.size(), 3u);
  EXPECT_EQ(facts.failures[2].rank, 0);
  EXPECT_EQ(facts.failures[2].signal, SIGTERM);
}

}  // namespace
}  // namespace lockstep
