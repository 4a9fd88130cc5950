#include "harness/runner/native_recorders.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"
#include "harness/launcher/launch_command.h"
#include "harness/runner/exec_program.h"
#include "harness/runner/lockstep_rank_program.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

NativeRecorders All() { return {true, true, true}; }

TEST(NativeRecordersTest, AutoPreloadsMpiOnlyIntoMpiPrograms) {
  Result<NativeRecorders> not_mpi = ChooseRecorders("auto", All(), /*preload_mpi=*/false);
  ASSERT_TRUE(not_mpi.ok());
  EXPECT_FALSE(not_mpi.value().mpi);
  EXPECT_TRUE(not_mpi.value().nccl);
  EXPECT_TRUE(not_mpi.value().cuda);
  Result<NativeRecorders> mpi = ChooseRecorders("auto", All(), /*preload_mpi=*/true);
  ASSERT_TRUE(mpi.ok());
  EXPECT_TRUE(mpi.value().mpi);
  // Auto never asks for what was not built.
  Result<NativeRecorders> bare = ChooseRecorders("auto", NativeRecorders{}, true);
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare.value().mpi || bare.value().nccl || bare.value().cuda);
}

// Only Open MPI's mpirun gets the Open MPI wrappers by default: another MPI's program would break.
TEST(NativeRecordersTest, OnlyOpenMpisMpirunCountsAsOurs) {
  Result<std::filesystem::path> mpirun = FindMpirun();
  ASSERT_TRUE(mpirun.ok()) << mpirun.status().message();
  EXPECT_TRUE(IsOpenMpiLauncher(mpirun.value())) << mpirun.value() << " (Debian's openmpi-bin)";
  testing::TempDir temp("lockstep_native_recorders_mpich_");
  const fs::path fake = temp.path() / "mpirun";
  std::ofstream(fake) << "#!/bin/sh\necho 'HYDRA build details:'\necho '    Version: 4.1.2'\n";
  fs::permissions(fake, fs::perms::owner_all);
  EXPECT_FALSE(IsOpenMpiLauncher(fake));
  EXPECT_FALSE(IsOpenMpiLauncher(temp.path() / "no-such-mpirun"));
}

TEST(NativeRecordersTest, AListChoosesExactlyItsRecorders) {
  Result<NativeRecorders> chosen = ChooseRecorders("mpi,cuda", All(), false);
  ASSERT_TRUE(chosen.ok());
  EXPECT_TRUE(chosen.value().mpi);
  EXPECT_FALSE(chosen.value().nccl);
  EXPECT_TRUE(chosen.value().cuda);
  Result<NativeRecorders> none = ChooseRecorders("none", All(), true);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().mpi || none.value().nccl || none.value().cuda);
}

TEST(NativeRecordersTest, AnUnknownOrUnbuiltRecorderIsRefusedByName) {
  Result<NativeRecorders> unknown = ChooseRecorders("mpi,nvml", All(), false);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown recorder \"nvml\""), std::string::npos);
  NativeRecorders no_cuda = All();
  no_cuda.cuda = false;
  Result<NativeRecorders> unbuilt = ChooseRecorders("cuda", no_cuda, false);
  ASSERT_FALSE(unbuilt.ok());
  EXPECT_NE(unbuilt.status().message().find("liblockstep_cupti.so) was not built"), std::string::npos);
}

TEST(NativeRecordersTest, BuiltRecordersAreTheLibrariesInTheDirectory) {
  testing::TempDir temp("lockstep_native_recorders_");
  std::ofstream(temp.path() / kNcclRecorderFile) << "x";
  const NativeRecorders built = BuiltRecorders(temp.path());
  EXPECT_FALSE(built.mpi);
  EXPECT_TRUE(built.nccl);
  EXPECT_FALSE(built.cuda);
  EXPECT_EQ(RecorderDir("/opt/lockstep/bin"), fs::path("/opt/lockstep/lib"));
}

TEST(NativeRecordersTest, TheEnvironmentNamesEachChosenLibraryAndLeavesTheUsersOwnAlone) {
  unsetenv("NCCL_PROFILER_PLUGIN");
  setenv("CUDA_INJECTION64_PATH", "/opt/my/injection.so", 1);
  std::map<std::string, std::string> env;
  std::vector<std::string> notes;
  AddRecorderEnv(All(), "/opt/lockstep/lib", env, &notes);
  unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_EQ(env.at(kPreloadEnv), "/opt/lockstep/lib/liblockstep_pmpi.so");
  EXPECT_EQ(env.at("NCCL_PROFILER_PLUGIN"), "/opt/lockstep/lib/liblockstep_nccl_profiler.so");
  EXPECT_EQ(env.count("CUDA_INJECTION64_PATH"), 0u) << "the user's injection wins";
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("CUDA_INJECTION64_PATH is set (/opt/my/injection.so)"), std::string::npos);
  // Already ours (a script that set it by hand): no note.
  setenv("CUDA_INJECTION64_PATH", "/opt/lockstep/lib/liblockstep_cupti.so", 1);
  std::vector<std::string> none;
  std::map<std::string, std::string> again;
  AddRecorderEnv(All(), "/opt/lockstep/lib", again, &none);
  unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(again.at("CUDA_INJECTION64_PATH"), "/opt/lockstep/lib/liblockstep_cupti.so");
  std::map<std::string, std::string> off;
  AddRecorderEnv(NativeRecorders{}, "/opt/lockstep/lib", off);
  EXPECT_TRUE(off.empty());
}

// The shell fragment really puts the library first in the program's LD_PRELOAD and keeps the
// rank's own after it.
TEST(NativeRecordersTest, ThePreloadReachesTheProgramBeforeTheRanksOwn) {
  const std::string lib = std::string(LOCKSTEP_BINARY_DIR) + "/lib/liblockstep_process_log.so";  // harmless to preload
  const std::string command = "LOCKSTEP_PRELOAD='" + lib + "' LD_PRELOAD='" + lib + "' /bin/sh -c '" +
                              std::string(kPreloadThenExec) + "' sh /bin/sh -c 'echo \"$LD_PRELOAD\"'";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char buf[4096] = {};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, out);
  ASSERT_EQ(pclose(out), 0);
  EXPECT_EQ(std::string(buf, n), lib + ":" + lib + "\n");
}

TEST(NativeRecordersTest, ExecWrapsALocalCommandOnlyToPreload) {
  ExecProgramOptions options;
  options.command = {"/usr/bin/python3", "train.py"};
  options.recorder_env = {{"NCCL_PROFILER_PLUGIN", "/l/liblockstep_nccl_profiler.so"}};
  RankInvocation plain = ExecProgram(options).Invocation(Scenario{}, RankRun::kMain, LaunchPaths{"/t", ""});
  EXPECT_EQ(plain.argv, options.command);
  EXPECT_EQ(plain.env.at("NCCL_PROFILER_PLUGIN"), "/l/liblockstep_nccl_profiler.so");

  options.recorder_env[kPreloadEnv] = "/l/liblockstep_pmpi.so";
  RankInvocation preloaded = ExecProgram(options).Invocation(Scenario{}, RankRun::kMain, LaunchPaths{"/t", ""});
  ASSERT_EQ(preloaded.argv.size(), 6u);
  EXPECT_EQ(preloaded.argv[2], kPreloadThenExec);
  EXPECT_EQ(preloaded.argv[4], "/usr/bin/python3");
  EXPECT_EQ(preloaded.env.at(kPreloadEnv), "/l/liblockstep_pmpi.so");

  options.launcher = LauncherKind::kMpirun;
  RankInvocation under_mpirun = ExecProgram(options).Invocation(Scenario{}, RankRun::kMain, LaunchPaths{"/t", ""});
  EXPECT_NE(under_mpirun.argv[2].find("OMPI_COMM_WORLD_RANK"), std::string::npos);
  EXPECT_NE(under_mpirun.argv[2].find(kPreloadThenExec), std::string::npos);
}

// lockstep-rank loads NCCL's and CUDA's recorders from beside it; MPI's it links itself.
TEST(NativeRecordersTest, LockstepRankGetsTheBuiltRecordersButNoPreload) {
  unsetenv("NCCL_PROFILER_PLUGIN");
  unsetenv("CUDA_INJECTION64_PATH");
  testing::TempDir temp("lockstep_native_recorders_rank_");
  fs::create_directories(temp.path() / "lib");
  for (const char* file : {kPmpiRecorderFile, kNcclRecorderFile}) std::ofstream(temp.path() / "lib" / file) << "x";
  LockstepRankOptions options;
  options.program = temp.path() / "bin" / "lockstep-rank";
  Scenario scenario;
  scenario.location.file = "s.yaml";
  const RankInvocation inv = LockstepRankProgram(options).Invocation(scenario, RankRun::kMain, LaunchPaths{"/t", ""});
  EXPECT_EQ(inv.env.at("NCCL_PROFILER_PLUGIN"), (temp.path() / "lib" / kNcclRecorderFile).string());
  EXPECT_EQ(inv.env.count("CUDA_INJECTION64_PATH"), 0u) << "not built here";
  EXPECT_EQ(inv.env.count(kPreloadEnv), 0u);
}

}  // namespace
}  // namespace lockstep
