// A node's agent against the launcher's hub on loopback, with a stand-in rank process: what the
// rank writes on the node arrives byte for byte, its CPU use and its end are reported, the files
// the launcher puts reach the stage, and the agent ends as told (or, the launcher gone, stops the
// node's processes of the launch first). Nothing is left behind: not the stage, not a process.
#include "harness/agent/node_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "harness/core/testing/temp_dir.h"
#include "harness/launcher/agent_hub.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/launch_spec.h"
#include "harness/launcher/process_tree.h"
#include "harness/trace/trace_parser.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The bytes of a trace a reader takes: a trace being written, or left by a killed writer, ends at
// its first zero byte (trace_writer.h).
std::string TraceData(const fs::path& p) {
  std::string bytes = ReadAll(p);
  bytes.resize(TraceDataLength(bytes));
  return bytes;
}

// Kills a stand-in rank left running when an assertion ends the test early: a spinning child
// holding the test's output open would keep ctest waiting for it.
struct KillOnExit {
  pid_t pid = 0;
  ~KillOnExit() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
};

std::string ThisHost() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

// Polls the hub until `done` or ~10 s.
template <typename F>
bool PollUntil(AgentHub& hub, F done) {
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(hub.Poll().ok());
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

// A stand-in rank: marked with the launch id, it writes rank `rank`'s trace (header and step 0)
// and a line of log into the stage, then spins until killed.
pid_t StartRank(const fs::path& stage, const std::string& launch_id, int rank) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setenv(kLaunchIdEnv, launch_id.c_str(), 1);
  TraceHeader h;
  h.rank = rank;
  h.world_size = 2;
  h.host = ThisHost();
  h.pid = ::getpid();
  Result<std::unique_ptr<TraceWriter>> w = TraceWriter::Open(RankTracePath(StageTraceDir(stage), rank), h);
  if (!w.ok()) ::_exit(2);
  StepRecord s;
  s.step = 0;
  (void)(*w)->WriteStep(s);
  std::ofstream(RankLogPath(StageLogDir(stage), rank)) << "rank " << rank << " says hello\n";
  // Marked in /proc only once exec'd or the environment is written: re-exec ourselves is heavy;
  // a shell with the variable set carries the marker visibly.
  ::execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
  ::_exit(3);
}

struct Agent {
  std::thread thread;
  int status = -1;
};

void StartAgent(Agent& a, const AgentHub& hub, const NodeAgentOptions& base) {
  NodeAgentOptions o = base;
  o.launcher = {"127.0.0.1:" + std::to_string(hub.port())};
  o.token = hub.token();
  a.thread = std::thread([&a, o] { a.status = RunNodeAgent(o); });
}

NodeAgentOptions Options(const fs::path& stage, const std::string& launch_id) {
  NodeAgentOptions o;
  o.launch_id = launch_id;
  o.stage = stage;
  o.ranks = 2;
  o.heartbeat_s = 0.1;
  o.launcher_timeout_s = 5;
  o.kill_grace_s = 0.5;
  return o;
}

TEST(NodeAgentTest, StreamsTheStageReportsTheRankAndEndsAsTold) {
  const testing::TempDir temp("lockstep_node_agent_");
  const fs::path out = temp.path() / "out", stage = temp.path() / "node" / "lockstep-x";
  fs::create_directories(out / "traces");
  fs::create_directories(out / "logs");
  Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open(NewLaunchId(), out / "traces", out / "logs");
  ASSERT_TRUE(hub.ok()) << hub.status().ToString();
  const std::string launch_id = NewLaunchId();
  Agent agent;
  StartAgent(agent, **hub, Options(stage, launch_id));
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->hosts().size() == 1; }));
  EXPECT_EQ((*hub)->hosts()[0].name, ThisHost());
  EXPECT_EQ((*hub)->hosts()[0].address, "127.0.0.1");
  EXPECT_GT((*hub)->hosts()[0].free_port, 0);

  (*hub)->PutFile("scenario.yaml", "steps: 3\n");
  ASSERT_TRUE(PollUntil(**hub, [&] { return ReadAll(stage / "scenario.yaml") == "steps: 3\n"; }));

  const pid_t rank = StartRank(stage, launch_id, 1);
  KillOnExit rank_guard{rank};
  ASSERT_TRUE(PollUntil(**hub, [&] {
    const std::string here = ReadAll(out / "traces" / "rank-1.trace");
    return !here.empty() && here == TraceData(RankTracePath(StageTraceDir(stage), 1)) &&
           ReadAll(out / "logs" / "rank-1.log") == "rank 1 says hello\n";
  }));
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->rank(1) && (*hub)->rank(1)->cpu_s.has_value(); }));
  EXPECT_EQ((*hub)->rank(1)->pid, rank);
  EXPECT_EQ((*hub)->TakeCpuSamples(), std::vector<int>{1});

  ::kill(rank, SIGKILL);
  ::waitpid(rank, nullptr, 0);
  rank_guard.pid = 0;
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->rank(1)->gone; }));
  EXPECT_TRUE((*hub)->LostHosts(5).empty());

  (*hub)->Stop();
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->AllDone(5); }));
  agent.thread.join();
  EXPECT_EQ(agent.status, 0);
  EXPECT_FALSE(fs::exists(stage)) << "the agent removes its stage";
}

// The launcher's heartbeats keep an agent whose ranks record nothing for longer than its
// timeout (a hang being judged): the 2026-11-28 cluster run took its launcher for gone after 10 s
// and lost every node instead of judging the hang.
TEST(NodeAgentTest, TheLaunchersHeartbeatsKeepItsAgentsThroughAQuietRun) {
  const testing::TempDir temp("lockstep_node_agent_");
  fs::create_directories(temp.path() / "t");
  fs::create_directories(temp.path() / "l");
  Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open(NewLaunchId(), temp.path() / "t", temp.path() / "l");
  ASSERT_TRUE(hub.ok());
  NodeAgentOptions o = Options(temp.path() / "lockstep-q", NewLaunchId());
  o.launcher_timeout_s = 1.5;
  Agent agent;
  StartAgent(agent, **hub, o);
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->hosts().size() == 1; }));
  const auto until = std::chrono::steady_clock::now() + 4s;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE((*hub)->Poll().ok());
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE((*hub)->hosts()[0].connected);
  EXPECT_TRUE((*hub)->LostHosts(1.5).empty());
  (*hub)->Stop();
  ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->AllDone(5); }));
  agent.thread.join();
  EXPECT_EQ(agent.status, 0);
}

TEST(NodeAgentTest, WithTheLauncherGoneItStopsTheNodesProcessesOfTheLaunch) {
  const testing::TempDir temp("lockstep_node_agent_");
  const fs::path stage = temp.path() / "lockstep-y";
  const std::string launch_id = NewLaunchId();
  Agent agent;
  pid_t rank = 0;
  KillOnExit guard;
  {
    fs::create_directories(temp.path() / "t");
    fs::create_directories(temp.path() / "l");
    Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open(NewLaunchId(), temp.path() / "t", temp.path() / "l");
    ASSERT_TRUE(hub.ok());
    StartAgent(agent, **hub, Options(stage, launch_id));
    ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->hosts().size() == 1; }));
    rank = StartRank(stage, launch_id, 0);
    guard.pid = rank;
    ASSERT_TRUE(PollUntil(**hub, [&] { return (*hub)->rank(0) && (*hub)->rank(0)->cpu_s.has_value(); }));
  }  // the launcher's end of the connection closes
  agent.thread.join();
  EXPECT_EQ(agent.status, 3);
  int status = 0;
  ASSERT_EQ(::waitpid(rank, &status, 0), rank);
  guard.pid = 0;
  EXPECT_TRUE(WIFSIGNALED(status)) << "the agent ends the rank";
  EXPECT_FALSE(fs::exists(stage));
}

TEST(NodeAgentTest, AStageSharedWithAnotherHostIsRefusedAndNotRemoved) {
  const testing::TempDir temp("lockstep_node_agent_");
  const fs::path stage = temp.path() / "lockstep-z";
  fs::create_directories(stage);
  std::ofstream(stage / ".host-othernode") << "1\n";
  Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open(NewLaunchId(), temp.path() / "t", temp.path() / "l");
  ASSERT_TRUE(hub.ok());
  Agent agent;
  StartAgent(agent, **hub, Options(stage, NewLaunchId()));
  ASSERT_TRUE(PollUntil(**hub, [&] { return !(*hub)->error_text().empty(); }));
  EXPECT_THAT((*hub)->error_text(), ::testing::HasSubstr("is shared between " + ThisHost() + " and othernode"));
  agent.thread.join();
  EXPECT_EQ(agent.status, 3);
  EXPECT_TRUE(fs::exists(stage / ".host-othernode")) << "a folder another host uses is not ours to remove";
}

TEST(NodeAgentTest, AHelloWithoutTheTokenIsNotAnAgent) {
  const testing::TempDir temp("lockstep_node_agent_");
  Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open("right", temp.path() / "t", temp.path() / "l");
  ASSERT_TRUE(hub.ok());
  NodeAgentOptions o = Options(temp.path() / "lockstep-w", NewLaunchId());
  o.launcher = {"127.0.0.1:" + std::to_string((*hub)->port())};
  o.token = "wrong";
  o.launcher_timeout_s = 1;
  int status = -1;
  std::thread t([&] { status = RunNodeAgent(o); });
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE((*hub)->Poll().ok());
    std::this_thread::sleep_for(20ms);
  }
  t.join();
  EXPECT_EQ(status, 3);
  EXPECT_TRUE((*hub)->hosts().empty());
}

}  // namespace
}  // namespace lockstep
