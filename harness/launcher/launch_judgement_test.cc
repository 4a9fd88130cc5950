// The rules of how a launch ended, on canned observations: no process, no clock.
#include "harness/launcher/launch_judgement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

namespace lockstep {
namespace {

using ::testing::HasSubstr;

// `n` ranks that each recorded steps 0..`steps` and wrote an "ok" footer, under `kind`.
LaunchObservation Finished(int n, int64_t steps = 5, LauncherKind kind = LauncherKind::kLocal) {
  LaunchObservation seen;
  seen.kind = kind;
  seen.direct = kind == LauncherKind::kLocal || kind == LauncherKind::kNone;
  seen.hang_timeout_s = 60;
  for (int r = 0; r < n; ++r) {
    RankObservation o;
    o.exit.rank = r;
    o.progress.file_seen = true;
    o.progress.last_step = steps;
    o.progress.footer = true;
    o.progress.footer_status = "ok";
    o.progress.begun_seq_by_group["world"] = static_cast<uint64_t>(steps) * 2;
    o.describe = "rank " + std::to_string(r) + ": last step " + std::to_string(steps);
    seen.ranks.push_back(o);
  }
  return seen;
}

// Rank `r` stopped in step `last` + 1 without a footer.
void Unfinished(LaunchObservation& seen, int r, int64_t last) {
  RankProgress& p = seen.ranks[static_cast<size_t>(r)].progress;
  p.footer = false;
  p.footer_status.clear();
  p.last_step = last;
}

TEST(LaunchJudgementTest, EveryRankFinished) {
  const LaunchReport report = JudgeLaunch(Finished(3));
  EXPECT_EQ(report.ending, LaunchEnding::kClean);
  EXPECT_EQ(report.message, "all 3 ranks finished");
  for (const RankExit& e : report.ranks) EXPECT_TRUE(e.trace_finished);
}

// A rank killed at step 3 under the local spawn: its crash, and the rank still running is one
// the launcher stopped, not a second crash.
TEST(LaunchJudgementTest, ACrashNamesTheDeadRankAndNotTheOnesStopped) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kCrash;
  Unfinished(seen, 0, 3);
  Unfinished(seen, 1, 3);
  seen.ranks[1].exit.signal = SIGKILL;
  seen.ranks[1].exit.note = "killed by signal 9 (Killed)";
  seen.failed_ranks = {1};
  seen.ranks[0].still_running = true;
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kCrash);
  EXPECT_THAT(report.message, HasSubstr("rank 1: killed by signal 9 (Killed); last step 3"));
  EXPECT_TRUE(report.ranks[0].killed_by_launcher);
  EXPECT_EQ(report.ranks[0].note, "stopped by the launcher after rank 1 failed");
  EXPECT_FALSE(report.ranks[1].killed_by_launcher);
}

// gloo's survivors stop on "Connection reset by peer" when a peer dies: the peer's crash, not a
// harness error of theirs.
TEST(LaunchJudgementTest, ASurvivorsFailedCollectiveIsItsDeadPeersCrash) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kRankError;
  seen.ranks[0].progress.footer_status = "communication: Connection reset by peer";
  Unfinished(seen, 1, 2);
  seen.ranks[1].exit.signal = SIGSEGV;
  seen.ranks[1].exit.note = "killed by signal 11 (Segmentation fault)";
  seen.failed_ranks = {1};
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kCrash);
  EXPECT_TRUE(report.ranks[0].failed_after_peer);
  EXPECT_TRUE(report.ranks[0].error.empty());
  EXPECT_THAT(report.ranks[0].note, HasSubstr("its collective failed after rank 1 died (communication: "));
  EXPECT_THAT(report.message, HasSubstr("rank 1: killed by signal 11"));
}

// Alone, the same failed collective is the harness's error (nothing died).
TEST(LaunchJudgementTest, AFailedCollectiveWithNoDeathIsAHarnessError) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kRankError;
  seen.ranks[0].progress.footer_status = "communication: timed out";
  seen.ranks[1].progress.begun_seq_by_group["world"] = 99;  // ahead, not behind: no one left
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kRankError);
  EXPECT_EQ(report.message, "rank 0 stopped on a harness error: communication: timed out");
}

// A user's sys.exit(0) mid-run: a clean footer, but its peers wait in a collective it never
// began. That rank is the cause.
TEST(LaunchJudgementTest, ARankThatLeftItsPeersWaitingIsTheCrash) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kRankError;
  seen.ranks[0].progress.footer_status = "communication: Connection closed by peer";
  seen.ranks[0].progress.begun_seq_by_group["world"] = 7;
  seen.ranks[1].progress.begun_seq_by_group["world"] = 6;
  seen.ranks[1].exit.exit_code = 0;
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kCrash);
  EXPECT_TRUE(report.ranks[1].left_peers_waiting);
  EXPECT_EQ(report.ranks[1].note, "exited with code 0 while its peers waited in a collective it never began");
}

// A rank seen ending by its own SIGSEGV (its end slow: a core dump) as a job launcher named the
// survivor first: the dying rank is the crash.
TEST(LaunchJudgementTest, ARankSeenEndingIsTheCrashWhenAJobLauncherNamedAPeer) {
  LaunchObservation seen = Finished(2, 5, LauncherKind::kMpirun);
  seen.ending = LaunchEnding::kRankError;
  seen.ranks[0].progress.footer_status = "communication: Connection reset by peer";
  Unfinished(seen, 1, 4);
  seen.ending_ranks[1] = SIGSEGV;
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kCrash);
  EXPECT_EQ(report.ranks[1].signal, SIGSEGV);
  EXPECT_THAT(report.ranks[1].note, HasSubstr("seen as its process ended as its peers' collectives failed; mpirun named a peer first"));
}

// A failed rank without a footer: its log's last lockstep-rank line is the harness's word; a
// full disk comes first.
TEST(LaunchJudgementTest, ARanksLastWordsOrAFullDiskAreHarnessErrors) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kCrash;
  Unfinished(seen, 1, 0);
  seen.ranks[1].exit.exit_code = 3;
  seen.failed_ranks = {1};
  seen.ranks[1].log_error = "cannot read scenario.yaml";
  LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kRankError);
  EXPECT_EQ(report.message, "rank 1 stopped on a harness error: cannot read scenario.yaml");
  seen.ranks[1].full_disk_error = "no space left on the file system of /t/rank-1.trace (0 bytes free)";
  report = JudgeLaunch(seen);
  EXPECT_THAT(report.message, HasSubstr("harness error: no space left"));
  // Without either, an exit code 3 is the program's own: a crash.
  seen.ranks[1].log_error.clear();
  seen.ranks[1].full_disk_error.clear();
  EXPECT_EQ(JudgeLaunch(seen).ending, LaunchEnding::kCrash);
}

// Under a job launcher, after a rank's death the others were stopped by it: not crashes.
TEST(LaunchJudgementTest, RanksAJobLauncherStoppedAreNotCrashes) {
  LaunchObservation seen = Finished(3, 5, LauncherKind::kSrun);
  seen.ending = LaunchEnding::kCrash;
  for (int r = 0; r < 3; ++r) Unfinished(seen, r, 2);
  seen.ranks[2].exit.exit_code = 1;
  seen.failed_ranks = {2};
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_TRUE(report.ranks[0].killed_by_launcher);
  EXPECT_TRUE(report.ranks[1].killed_by_launcher);
  EXPECT_FALSE(report.ranks[2].killed_by_launcher);
}

TEST(LaunchJudgementTest, AHangNamesTheRanksTheOthersWaitFor) {
  LaunchObservation seen = Finished(3);
  seen.ending = LaunchEnding::kHang;
  for (int r = 0; r < 3; ++r) {
    Unfinished(seen, r, 3);
    seen.ranks[static_cast<size_t>(r)].still_running = true;
  }
  seen.stall = StallVerdict{StallKind::kWaiting, {0, 1}, {2}, {}, {}};
  seen.quiet_for_s = 61;
  seen.watcher_stalled = {2};
  LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kHang);
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{2});
  EXPECT_THAT(report.message, HasSubstr("no trace progress for 61 s (hang_timeout_s = 60 s, --hang-timeout sets it); "
                                        "ranks 0,1 waited inside a collective; rank 2 neither recorded progress nor "
                                        "used CPU outside any collective; stalled ranks: 2"));
  EXPECT_THAT(report.ranks[0].note, HasSubstr("stopped by the launcher after the launch ended: hang; rank 0: last step 5"));
  // Behind no one: the idle ranks are named.
  seen.watcher_stalled.clear();
  report = JudgeLaunch(seen);
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{2});
}

TEST(LaunchJudgementTest, AQuietPhaseTooLongNamesTheBusyRanks) {
  LaunchObservation seen = Finished(2);
  seen.ending = LaunchEnding::kHang;
  seen.quiet_timeout_s = 30;
  Unfinished(seen, 0, 4);
  Unfinished(seen, 1, 4);
  seen.stall = StallVerdict{StallKind::kQuietTooLong, {0}, {}, {}, {1}};
  seen.quiet_for_s = 31;
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{1});
  EXPECT_THAT(report.message, HasSubstr("while rank 1 was still running (CPU use not visible from this host) outside "
                                        "any collective, after step 4"));
}

TEST(LaunchJudgementTest, AStartupTimeoutNamesTheLateAndTheirVictims) {
  LaunchObservation seen = Finished(3);
  seen.ending = LaunchEnding::kStartupTimeout;
  seen.startup_timeout_s = 300;
  for (int r = 0; r < 3; ++r) {
    RankProgress& p = seen.ranks[static_cast<size_t>(r)].progress;
    p.footer = false;
    p.last_step.reset();
  }
  seen.startup_stalled = {2};
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kStartupTimeout);
  EXPECT_THAT(report.message, HasSubstr("start-up timeout: rank 2 had not recorded step 0 (communicator, model, "
                                        "initial broadcast) after startup_timeout_s = 300 s (ranks 0,1 wait for it in "
                                        "a collective)"));
}

// A host that stopped answering: its ranks are lost with it, the survivors are neither crashes
// nor harness errors, and nothing else is blamed.
TEST(LaunchJudgementTest, ALostHostNamesItselfAndBlamesNoSurvivor) {
  LaunchObservation seen = Finished(4, 9, LauncherKind::kSrun);
  seen.ending = LaunchEnding::kNodeLost;
  for (int r = 0; r < 4; ++r) Unfinished(seen, r, r < 2 ? 64 : 63);
  seen.ranks[0].progress.footer = true;
  seen.ranks[0].progress.footer_status = "communication: Connection reset by peer";
  seen.ranks[1].still_running = true;
  seen.failed_ranks = {0};
  seen.lost_hosts.push_back(LostHost{"node1", {2, 3}, 63, 10.4});
  const LaunchReport report = JudgeLaunch(seen);
  EXPECT_EQ(report.ending, LaunchEnding::kNodeLost);
  EXPECT_EQ(report.message,
            "node lost: node1 (ranks 2, 3), last heard at step 63 (10 s without a word from its agent)");
  ASSERT_EQ(report.lost_hosts.size(), 1u);
  EXPECT_TRUE(report.ranks[0].failed_after_peer);
  EXPECT_THAT(report.ranks[0].note, HasSubstr("its collective failed after node1 was lost"));
  EXPECT_TRUE(report.ranks[1].killed_by_launcher);
  EXPECT_EQ(report.ranks[1].note, "stopped by the launcher after node1 was lost");
  for (int r : {2, 3}) {
    EXPECT_EQ(report.ranks[static_cast<size_t>(r)].note, "on node1, which was lost");
    EXPECT_FALSE(report.ranks[static_cast<size_t>(r)].killed_by_launcher);
  }
  for (const RankExit& e : report.ranks) EXPECT_TRUE(e.error.empty());
}

TEST(LaunchJudgementTest, AnInterruptSaysBySignal) {
  LaunchObservation seen = Finished(1);
  seen.ending = LaunchEnding::kInterrupted;
  seen.interrupt_signal = SIGINT;
  EXPECT_EQ(JudgeLaunch(seen).message, "interrupted by Interrupt; the ranks were stopped");
  // No signal to lockstep: the job the ranks ran in ended (a user's scancel), as the loop said.
  seen.interrupt_signal = 0;
  seen.launcher_message = "the Slurm job 7 of this launch was cancelled or ended";
  EXPECT_EQ(JudgeLaunch(seen).message, "the Slurm job 7 of this launch was cancelled or ended");
}

}  // namespace
}  // namespace lockstep
