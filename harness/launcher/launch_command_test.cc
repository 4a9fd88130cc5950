#include "harness/launcher/launch_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/core/testing/temp_dir.h"
#include "harness/core/testing/scoped_env.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::ScopedEnv;

LaunchSpec SampleSpec() {
  LaunchSpec spec;
  spec.ranks = 4;
  spec.rank_command = {"/opt/lockstep/bin/lockstep-rank", "--scenario", "my scenario.yaml"};
  spec.trace_dir = "/runs/a/traces";
  spec.log_dir = "/runs/a/logs";
  spec.env = {{"FOO", "bar"}};
  spec.launch_id = "id-1";
  return spec;
}

SrunStep SampleStep() {
  SrunStep step;
  step.job_id = "42";
  step.nodelist = "node0,node1";
  step.nodes = 2;
  step.ranks_per_node = 2;
  step.mpi = "pmix";
  step.name = "lockstep-id-1-ranks";
  return step;
}

TEST(LaunchCommandTest, SrunStepCommandLine) {
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kSrun;
  spec.mpirun_args = {"--exclusive"};
  const LaunchCommand cmd = SrunStepCommand(spec, "/usr/bin/srun", SampleStep());
  EXPECT_THAT(cmd.argv, ElementsAre("/usr/bin/srun", "--jobid=42", "--overlap", "--nodelist=node0,node1", "--nodes=2",
                                    "--cpu-bind=none", "--job-name=lockstep-id-1-ranks", "--ntasks=4",
                                    "--ntasks-per-node=2", "--mpi=pmix", "--kill-on-bad-exit=1",
                                    "--output=/runs/a/logs/rank-%t.log", "--exclusive",
                                    "/opt/lockstep/bin/lockstep-rank", "--scenario", "my scenario.yaml"));
  EXPECT_EQ(cmd.env.at("FOO"), "bar");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_LAUNCH_ID"), "id-1");
  EXPECT_EQ(cmd.output, "/runs/a/logs/launcher.log");
  EXPECT_THAT(cmd.ToString(), HasSubstr("'my scenario.yaml'"));
}

TEST(LaunchCommandTest, TorchrunPerNodeIsOneTaskPerNodeMeetingAtTheEndpoint) {
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kTorchrun;
  const LaunchCommand cmd = TorchrunPerNodeCommand(spec, "/usr/bin/srun", SampleStep(), "/venv/bin/torchrun", "10.1.0.2:29400");
  const std::string line = cmd.ToString();
  EXPECT_THAT(line, HasSubstr("/usr/bin/srun --jobid=42 --overlap --nodelist=node0,node1 --nodes=2 --cpu-bind=none "
                              "--job-name=lockstep-id-1-ranks --ntasks-per-node=1 --kill-on-bad-exit=1 --mpi=none "
                              "/venv/bin/torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "
                              "10.1.0.2:29400 --rdzv-id id-1 --max-restarts 0 --no-python /bin/sh -c "));
  EXPECT_THAT(line, HasSubstr("/opt/lockstep/bin/lockstep-rank --scenario 'my scenario.yaml'"));
  EXPECT_EQ(cmd.env.at("LOCKSTEP_LOG_DIR"), "/runs/a/logs");
}

TEST(LaunchCommandTest, MpirunCommandLineExportsTheEnvironment) {
  ScopedEnv pml("OMPI_MCA_pml", std::nullopt);
  LaunchSpec spec = SampleSpec();
  spec.ranks = 2;
  spec.mpirun_args = {"--mca", "btl", "self,vader"};
  const LaunchCommand cmd = MpirunCommand(spec, "/usr/bin/mpirun");
  ASSERT_GE(cmd.argv.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(cmd.argv.begin(), cmd.argv.begin() + 6),
              ElementsAre("/usr/bin/mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"));
  // Every variable of ours is passed with -x NAME; its value travels in mpirun's environment.
  for (const char* name : {"FOO", "LOCKSTEP_EXPECT_WORLD_SIZE", "LOCKSTEP_LAUNCH_ID", "LOCKSTEP_LOG_DIR"}) {
    bool exported = false;
    for (size_t i = 0; i + 1 < cmd.argv.size(); ++i) exported = exported || (cmd.argv[i] == "-x" && cmd.argv[i + 1] == name);
    EXPECT_TRUE(exported) << name;
    EXPECT_TRUE(cmd.env.count(name)) << name;
  }
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "2");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_LOG_DIR"), "/runs/a/logs");
  EXPECT_EQ(cmd.env.at("OMPI_MCA_pml"), "ob1");
  // Extra args, then the wrapper, then the rank program and its args.
  const size_t n = cmd.argv.size();
  EXPECT_THAT(std::vector<std::string>(cmd.argv.end() - 9, cmd.argv.end() - 3),
              ElementsAre("--mca", "btl", "self,vader", "/bin/sh", "-c", cmd.argv[n - 4]));
  EXPECT_THAT(std::vector<std::string>(cmd.argv.end() - 3, cmd.argv.end()),
              ElementsAre("/opt/lockstep/bin/lockstep-rank", "--scenario", "my scenario.yaml"));
  EXPECT_EQ(cmd.output, "/runs/a/logs/launcher.log");
}

TEST(LaunchCommandTest, MpirunKeepsAChosenPml) {
  ScopedEnv pml("OMPI_MCA_pml", std::nullopt);
  LaunchSpec spec = SampleSpec();
  spec.env["OMPI_MCA_pml"] = "ucx";
  EXPECT_EQ(MpirunCommand(spec, "mpirun").env.at("OMPI_MCA_pml"), "ucx");
  spec.env.erase("OMPI_MCA_pml");
  ScopedEnv pml_ucx("OMPI_MCA_pml", "ucx");
  EXPECT_EQ(MpirunCommand(spec, "mpirun").env.count("OMPI_MCA_pml"), 0u);  // inherited as is
}

// The /bin/sh wrapper must send each rank's output to its own file and still run the program
// with its arguments intact.
TEST(LaunchCommandTest, MpirunWrapperRedirectsPerRank) {
  const testing::TempDir temp("lockstep-launch-cmd-");
  const std::filesystem::path& dir = temp.path();
  LaunchSpec spec = SampleSpec();
  spec.log_dir = dir;
  spec.rank_command = {"/bin/echo", "hello", "two words"};
  const LaunchCommand cmd = MpirunCommand(spec, "mpirun");
  const auto sh = std::find(cmd.argv.begin(), cmd.argv.end(), "/bin/sh");
  ASSERT_NE(sh, cmd.argv.end());
  std::string line = "OMPI_COMM_WORLD_RANK=3 LOCKSTEP_LOG_DIR=" + ShellQuote(dir.string());
  for (auto it = sh; it != cmd.argv.end(); ++it) line += " " + ShellQuote(*it);
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
  std::ifstream in(dir / "rank-3.log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "hello two words\n");
}

TEST(LaunchCommandTest, LocalRankEnvironment) {
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kLocal;
  const LaunchCommand cmd = LocalRankCommand(spec, 2, 29500);
  EXPECT_EQ(cmd.argv, spec.rank_command);
  EXPECT_EQ(cmd.env.at("RANK"), "2");
  EXPECT_EQ(cmd.env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.at("LOCAL_RANK"), "2");
  EXPECT_EQ(cmd.env.at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(cmd.env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.at("FOO"), "bar");
  EXPECT_EQ(cmd.output, "/runs/a/logs/rank-2.log");

  spec.env["MASTER_PORT"] = "1234";
  EXPECT_EQ(LocalRankCommand(spec, 0, 29500).env.at("MASTER_PORT"), "1234");
}

// As torchrun: OMP_NUM_THREADS=1 for more than one local rank, unless the user set it.
TEST(LaunchCommandTest, LocalRanksGetOmpNumThreadsOneAsUnderTorchrun) {
  ScopedEnv unset("OMP_NUM_THREADS", std::nullopt);
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kLocal;
  EXPECT_EQ(LocalRankCommand(spec, 0, 29500).env.at("OMP_NUM_THREADS"), "1");
  spec.ranks = 1;
  EXPECT_EQ(LocalRankCommand(spec, 0, 29500).env.count("OMP_NUM_THREADS"), 0u) << "one rank has the host to itself";
  spec.ranks = 4;
  spec.env["OMP_NUM_THREADS"] = "3";
  EXPECT_EQ(LocalRankCommand(spec, 0, 29500).env.at("OMP_NUM_THREADS"), "3");
  spec.env.erase("OMP_NUM_THREADS");
  {
    ScopedEnv set("OMP_NUM_THREADS", "2");  // the user's own, inherited by the ranks
    EXPECT_EQ(LocalRankCommand(spec, 0, 29500).env.count("OMP_NUM_THREADS"), 0u);
    EXPECT_FALSE(LocalSetsOmpNumThreads(LauncherKind::kLocal, 4, spec.env));
  }
  EXPECT_TRUE(LocalSetsOmpNumThreads(LauncherKind::kLocal, 4, spec.env));
  EXPECT_FALSE(LocalSetsOmpNumThreads(LauncherKind::kMpirun, 4, spec.env));
}

TEST(LaunchCommandTest, InJobCommandRunsTheProgramOnce) {
  const LaunchCommand cmd = InJobRankCommand(SampleSpec(), 3);
  EXPECT_EQ(cmd.argv, SampleSpec().rank_command);
  EXPECT_EQ(cmd.output, "/runs/a/logs/rank-3.log");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.count("RANK"), 0u);  // the enclosing job's variables are inherited, not made up
}

TEST(LaunchCommandTest, RankFromEnvironment) {
  ScopedEnv a("RANK", std::nullopt), b("OMPI_COMM_WORLD_RANK", std::nullopt), c("PMIX_RANK", std::nullopt),
      d("SLURM_PROCID", std::nullopt), e("PMI_RANK", std::nullopt);
  EXPECT_EQ(RankFromEnvironment(), 0);
  ScopedEnv slurm("SLURM_PROCID", "5");
  EXPECT_EQ(RankFromEnvironment(), 5);
  ScopedEnv ompi("OMPI_COMM_WORLD_RANK", "2");
  EXPECT_EQ(RankFromEnvironment(), 2);
  ScopedEnv bad("RANK", "x");
  EXPECT_EQ(RankFromEnvironment(), 2);
}

TEST(LaunchCommandTest, FindExecutable) {
  EXPECT_EQ(FindExecutable("sh", "/nonexistent-dir:/bin").value(), "/bin/sh");
  EXPECT_FALSE(FindExecutable("lockstep-surely-not-a-program", "/bin:/usr/bin").has_value());
  EXPECT_FALSE(FindExecutable("/nonexistent/prog", "/bin").has_value());
  const testing::TempDir temp("lockstep-launch-cmd-");
  const std::filesystem::path& dir = temp.path();
  std::ofstream(dir / "data") << "not a program\n";
  std::filesystem::permissions(dir / "data", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_FALSE(FindExecutable((dir / "data").string(), "").has_value());  // no execute bit, even for root
  EXPECT_FALSE(FindExecutable("data", dir.string()).has_value());
  EXPECT_FALSE(FindExecutable("/bin", "").has_value());           // a directory
  EXPECT_FALSE(FindExecutable("", "/bin").has_value());
}

TEST(LaunchCommandTest, ShellQuote) {
  EXPECT_EQ(ShellQuote("abc-1.x/y=z"), "abc-1.x/y=z");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
}

TEST(LaunchCommandTest, LauncherKindNames) {
  for (LauncherKind k : {LauncherKind::kMpirun, LauncherKind::kSrun, LauncherKind::kLocal, LauncherKind::kNone,
                         LauncherKind::kTorchrun, LauncherKind::kAccelerate}) {
    EXPECT_EQ(FromString<LauncherKind>(ToString(k)), k);
  }
  // The names are the programs' own, as people type them.
  EXPECT_STREQ(ToString(LauncherKind::kTorchrun), "torchrun");
  EXPECT_STREQ(ToString(LauncherKind::kAccelerate), "accelerate");
  EXPECT_FALSE(FromString<LauncherKind>("torch.distributed.run").has_value());
}

TEST(LaunchCommandTest, TorchrunCommandLine) {
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kTorchrun;
  const LaunchCommand cmd = TorchrunCommand(spec, "/venv/bin/torchrun", 29123);
  EXPECT_THAT(cmd.argv, ElementsAre("/venv/bin/torchrun", "--nnodes", "1", "--nproc-per-node", "4", "--max-restarts",
                                    "0", "--master-addr", "127.0.0.1", "--master-port", "29123", "--no-python",
                                    "/bin/sh", "-c", ::testing::HasSubstr("rank-${RANK:-0}.log"),
                                    "/opt/lockstep/bin/lockstep-rank", "--scenario", "my scenario.yaml"));
  // The probe's and lockstep's variables reach the ranks through torchrun's environment.
  EXPECT_EQ(cmd.env.at("FOO"), "bar");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "4");
  EXPECT_EQ(cmd.env.at("LOCKSTEP_LAUNCH_ID"), "id-1");
  EXPECT_EQ(cmd.env.at(kLogDirEnv), "/runs/a/logs");
  EXPECT_EQ(cmd.output, "/runs/a/logs/launcher.log");
  // A rendezvous the caller chose wins.
  spec.env["MASTER_ADDR"] = "10.0.0.7";
  spec.env["MASTER_PORT"] = "4000";
  const LaunchCommand chosen = TorchrunCommand(spec, "torchrun", 29123);
  EXPECT_THAT(chosen.ToString(), HasSubstr("--master-addr 10.0.0.7 --master-port 4000 "));
}

TEST(LaunchCommandTest, AccelerateCommandLineNeedsNoConfigFile) {
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kAccelerate;
  spec.ranks = 2;
  const LaunchCommand cmd = AccelerateCommand(spec, "/venv/bin/accelerate", 29124);
  EXPECT_THAT(cmd.argv, ElementsAre("/venv/bin/accelerate", "launch", "--multi_gpu", "--num_processes", "2",
                                    "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                                    "--max_restarts", "0", "--main_process_ip", "127.0.0.1", "--main_process_port",
                                    "29124", "--no_python", "/bin/sh", "-c", ::testing::HasSubstr("rank-${RANK:-0}.log"),
                                    "/opt/lockstep/bin/lockstep-rank", "--scenario", "my scenario.yaml"));
  EXPECT_EQ(cmd.env.at("LOCKSTEP_EXPECT_WORLD_SIZE"), "2");
  EXPECT_EQ(cmd.output, "/runs/a/logs/launcher.log");
  // The wrapper sets ACCELERATE_USE_CPU again after accelerate's own "False".
  EXPECT_THAT(cmd.argv[20], HasSubstr("export ACCELERATE_USE_CPU=\"$LOCKSTEP_ACCELERATE_USE_CPU\""));
}

// Without a GPU, an Accelerator() (no cpu=True) under `accelerate launch --multi_gpu` would run
// each rank alone: the ranks get ACCELERATE_USE_CPU=true, unless the user set it.
TEST(LaunchCommandTest, AccelerateRanksRunDistributedOnCpuWithoutAGpu) {
  ScopedEnv unset("ACCELERATE_USE_CPU", std::nullopt);
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kAccelerate;
  EXPECT_EQ(AccelerateRanksUseCpu(spec, "none"), std::optional<std::string>("true"));
  EXPECT_EQ(AccelerateRanksUseCpu(spec, "12.4"), std::nullopt) << "a GPU host: accelerate decides";
  spec.env["ACCELERATE_USE_CPU"] = "false";
  EXPECT_EQ(AccelerateRanksUseCpu(spec, "none"), std::optional<std::string>("false")) << "the user's own";
  spec.env.erase("ACCELERATE_USE_CPU");
  {
    ScopedEnv set("ACCELERATE_USE_CPU", "1");
    EXPECT_EQ(AccelerateRanksUseCpu(spec, "12.4"), std::optional<std::string>("1"));
  }
  if (CudaDriverVersion() == "none") {
    EXPECT_EQ(AccelerateCommand(spec, "accelerate", 1).env.at("LOCKSTEP_ACCELERATE_USE_CPU"), "true");
  }
  // The wrapper really exports it to the rank.
  const testing::TempDir temp("lockstep-launch-cmd-");
  const std::string script = AccelerateCommand(spec, "accelerate", 1).argv[20];
  const std::string line = "LOCKSTEP_ACCELERATE_USE_CPU=true LOCKSTEP_LOG_DIR=" + temp.path().string() +
                           " RANK=1 ACCELERATE_USE_CPU=False /bin/sh -c " + ShellQuote(script) +
                           " /bin/sh -c 'echo \"cpu=$ACCELERATE_USE_CPU\"'";
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
  std::ifstream in(temp.path() / "rank-1.log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "cpu=true\n");
}

// torchrun's ranks name themselves in RANK: each one's output goes to its own log.
TEST(LaunchCommandTest, TorchrunWrapperRedirectsPerRank) {
  const testing::TempDir temp("lockstep-launch-cmd-");
  const std::filesystem::path& dir = temp.path();
  LaunchSpec spec = SampleSpec();
  spec.log_dir = dir;
  spec.rank_command = {"/bin/echo", "hello", "two words"};
  const LaunchCommand cmd = TorchrunCommand(spec, "torchrun", 1);
  const auto sh = std::find(cmd.argv.begin(), cmd.argv.end(), "/bin/sh");
  ASSERT_NE(sh, cmd.argv.end());
  std::string line = "RANK=2 LOCKSTEP_LOG_DIR=" + ShellQuote(dir.string());
  for (auto it = sh; it != cmd.argv.end(); ++it) line += " " + ShellQuote(*it);
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
  std::ifstream in(dir / "rank-2.log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "hello two words\n");
}

TEST(LaunchCommandTest, FindMpirunHonoursMpiexec) {
  {
    ScopedEnv env("MPIEXEC", "/nonexistent/mpirun");
    auto r = FindMpirun();
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("MPIEXEC"));
  }
  ScopedEnv env("MPIEXEC", "/bin/sh");
  EXPECT_EQ(FindMpirun().value(), "/bin/sh");
}

// gloo and nccl under mpirun/srun: the launcher hands the ranks the store's address and a port.
TEST(LaunchCommandTest, StoreRendezvousForMpirunAndSrun) {
  ScopedEnv addr("MASTER_ADDR", std::nullopt);
  ScopedEnv port("MASTER_PORT", std::nullopt);
  LaunchSpec spec = SampleSpec();
  spec.kind = LauncherKind::kMpirun;
  AddStoreRendezvousEnv(spec, "node7", 29555);
  EXPECT_EQ(spec.env.at("MASTER_ADDR"), "127.0.0.1");  // one host: rank 0 runs here
  EXPECT_EQ(spec.env.at("MASTER_PORT"), "29555");
  const LaunchCommand cmd = MpirunCommand(spec, "mpirun");
  EXPECT_EQ(cmd.env.at("MASTER_PORT"), "29555");
  EXPECT_NE(std::find(cmd.argv.begin(), cmd.argv.end(), "MASTER_ADDR"), cmd.argv.end()) << "passed with -x";

  LaunchSpec hosts = SampleSpec();
  hosts.kind = LauncherKind::kMpirun;
  hosts.mpirun_args = {"--hostfile", "hosts.txt"};
  AddStoreRendezvousEnv(hosts, "node7", 29555);
  EXPECT_EQ(hosts.env.at("MASTER_ADDR"), "node7");
  LaunchSpec srun = SampleSpec();
  srun.kind = LauncherKind::kSrun;
  AddStoreRendezvousEnv(srun, "node7", 29555);
  EXPECT_EQ(srun.env.at("MASTER_ADDR"), "node7");

  // What the user set wins.
  ScopedEnv user_port("MASTER_PORT", "4000");
  LaunchSpec mine = SampleSpec();
  mine.env["MASTER_ADDR"] = "10.0.0.1";
  AddStoreRendezvousEnv(mine, "node7", 29555);
  EXPECT_EQ(mine.env.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(mine.env.at("MASTER_PORT"), "4000");
}

// A rank's log is quoted from its end: a long run's log is never read whole.
TEST(ReadFileTailTest, TheLastBytesOfALongFileAllOfAShortOneNothingOfAMissingOne) {
  lockstep::testing::TempDir dir("lockstep_file_tail_");
  const std::filesystem::path file = dir.path() / "rank-0.log";
  {
    std::ofstream out(file);
    for (int i = 0; i < 100000; ++i) out << "line " << i << "\n";
  }
  const std::string tail = ReadFileTail(file, 64);
  EXPECT_EQ(tail.size(), 64u);
  EXPECT_EQ(tail.substr(tail.size() - 11), "line 99999\n");
  std::ofstream(dir.path() / "short.log") << "only\n";
  EXPECT_EQ(ReadFileTail(dir.path() / "short.log", 64), "only\n");
  EXPECT_EQ(ReadFileTail(dir.path() / "none.log", 64), "");
}

}  // namespace
}  // namespace lockstep
