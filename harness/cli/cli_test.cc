// The `lockstep` executable as users meet it: help, version, usage errors, and validate/list on
// the scenarios in the tree. Runs the built binary from the source folder, as the README does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/cli/testing/run_program.h"
#include "harness/core/build_info.h"
#include "harness/core/testing/build_paths.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Lines;
using testing::ProgramResult;

ProgramResult Lockstep(const std::vector<std::string>& args, const fs::path& cwd = LOCKSTEP_SOURCE_DIR) {
  return testing::RunProgram(testing::LockstepBinary(), args, cwd);
}

TEST(CliTest, HelpDescribesEverySubcommandAndTheExitCodes) {
  ProgramResult r = Lockstep({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("validate"));
  EXPECT_THAT(r.out, HasSubstr("list"));
  EXPECT_THAT(r.out, HasSubstr("--version"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes: 0 all passed"));
  EXPECT_THAT(r.out, HasSubstr("2 usage or input error"));
}

TEST(CliTest, SubcommandHelpDescribesItsArguments) {
  ProgramResult validate = Lockstep({"validate", "--help"});
  EXPECT_EQ(validate.exit_code, 0) << validate.err;
  EXPECT_THAT(validate.out, HasSubstr("FILE|DIR"));
  EXPECT_THAT(validate.out, HasSubstr("path:line:col: message"));
  ProgramResult list = Lockstep({"list", "--help"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("DIR|FILE"));
}

TEST(CliTest, ExecAndCheckHelpSayWhatTheyRunAndWhatTheySkip) {
  ProgramResult exec = Lockstep({"exec", "--help"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_THAT(exec.out, HasSubstr("-- COMMAND [ARGS...]"));
  EXPECT_THAT(exec.out, HasSubstr("RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT"));
  EXPECT_THAT(exec.out, HasSubstr("3 nothing could be checked"));
  ProgramResult check = Lockstep({"check", "--help"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("rank-<r>.trace"));
  EXPECT_THAT(check.out, HasSubstr("skipped with their reason"));
  ProgramResult no_command = Lockstep({"exec", "--ranks", "2", "--out", "unused"});
  EXPECT_EQ(no_command.exit_code, 2);
  EXPECT_THAT(no_command.err, HasSubstr("command"));
  EXPECT_FALSE(fs::exists(fs::path(LOCKSTEP_SOURCE_DIR) / "unused"));
}

TEST(CliTest, VersionNamesEveryComponentOfThisBuild) {
  ProgramResult r = Lockstep({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const BuildInfo& b = GetBuildInfo();
  EXPECT_THAT(r.out, HasSubstr("lockstep " + b.version + " (git "));
  EXPECT_THAT(r.out, HasSubstr("LibTorch " + b.torch_version));
  EXPECT_THAT(r.out, HasSubstr(b.mpi_version));
  EXPECT_THAT(r.out, HasSubstr("CUDA " + b.cuda_version));
  EXPECT_THAT(r.out, HasSubstr("NCCL " + b.nccl_version));
  EXPECT_THAT(r.out, HasSubstr(std::string("gloo ") + (b.have_gloo ? "yes" : "no")));
  EXPECT_THAT(r.out, HasSubstr(std::string("nccl ") + (b.have_nccl ? "yes" : "no")));
}

TEST(CliTest, UnknownFlagIsAUsageErrorNamingIt) {
  ProgramResult top = Lockstep({"--bogus"});
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_THAT(top.err, HasSubstr("--bogus"));
  ProgramResult sub = Lockstep({"validate", "--frobnicate", "scenarios"});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_THAT(sub.err, HasSubstr("--frobnicate"));
  EXPECT_EQ(sub.out, "");
}

TEST(CliTest, MissingArgumentIsAUsageError) {
  ProgramResult r = Lockstep({"validate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("paths is required"));
  ProgramResult list = Lockstep({"list"});
  EXPECT_EQ(list.exit_code, 2);
  EXPECT_THAT(list.err, HasSubstr("paths is required"));
}

TEST(CliTest, UnknownSubcommandIsAUsageError) {
  ProgramResult r = Lockstep({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("frobnicate"));
}

TEST(CliTest, NoSubcommandPrintsHelpAndFails) {
  ProgramResult r = Lockstep({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("validate"));
  EXPECT_THAT(r.err, HasSubstr("Exit codes"));
}

TEST(CliTest, ValidateAcceptsTheScenariosInTheTree) {
  ProgramResult r = Lockstep({"validate", "scenarios/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("scenarios valid"));
}

TEST(CliTest, ListPrintsTheSortedIdsOfTheScenariosInTheTree) {
  ProgramResult r = Lockstep({"list", "scenarios/"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> ids = Lines(r.out);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  for (const char* id : {"clean/ddp_mlp", "clean/ddp_transformer", "clean/zero1_mlp", "clean/ddp_slices2",
                         "clean/zero1_slices2", "clean/flash_transformer", "clean/batchnorm_mlp"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
  // One id per scenario file in the tree.
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LOCKSTEP_SOURCE_DIR) / "scenarios")) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml") && e.path().filename() != kDefaultsFileName) ++files;
  }
  EXPECT_EQ(ids.size(), files);
}

class CliTempDirTest : public ::testing::Test {
 protected:
  void Write(const std::string& relative, const std::string& content) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative, std::ios::binary) << content;
  }
  testing::TempDir temp_{"lockstep_cli_"};
  const fs::path dir_ = temp_.path();
};

TEST_F(CliTempDirTest, ListPrintsNothingWhenAFileIsInvalid) {
  Write("s/a.yaml", "ranks: 2\n");
  Write("s/b.yaml", "ranks: 0\n");
  ProgramResult r = Lockstep({"list", "s"}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(Lines(r.err), ::testing::ElementsAre("s/b.yaml:1:8: ranks: must be >= 1, got 0",
                                                   "lockstep list: 1 error in scenario files"));
}

TEST_F(CliTempDirTest, ValidateReportsEveryFileAndPath) {
  Write("s/a.yaml", "ranks: x\n");
  Write("s/b.yaml", "steps: 0\nmodel: {hiden: 3}\n");
  fs::create_directories(dir_ / "empty");
  ProgramResult r = Lockstep({"validate", "s", "missing.yaml", "empty"}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(Lines(r.err), ::testing::ElementsAre("s/a.yaml:1:8: ranks: expected an integer, got string \"x\"",
                                                   "s/b.yaml:1:8: steps: must be >= 1, got 0",
                                                   "s/b.yaml:2:9: model.hiden: unknown key; did you mean \"hidden\"?",
                                                   "missing.yaml: no such file or directory",
                                                   "empty: no scenario files (*.yaml, *.yml) in this folder",
                                                   "lockstep validate: 5 errors in scenario files"));
}

TEST_F(CliTempDirTest, NcclWithoutNcclValidatesWithANote) {
  Write("n.yaml", "backend: nccl\n");
  ProgramResult r = Lockstep({"validate", "n.yaml"}, dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 scenario valid\n");
  if (GetBuildInfo().have_nccl) {
    EXPECT_EQ(r.err, "");
  } else {
    EXPECT_EQ(r.err, "n.yaml: note: backend nccl is not built here; \"n\" will be skipped at run time\n");
  }
}

// Every flag and output path is checked before the first rank starts: each of these fails with
// exit 2 and a message naming the flag, and starts nothing (no rank program would even be found
// in the temp dir's run: the failure comes first).
TEST_F(CliTempDirTest, RunChecksFlagsAndOutputPathsBeforeAnyRankStarts) {
  Write("s.yaml", "name: s\nranks: 1\nsteps: 1\n");
  Write("a_file", "x");
  fs::create_directories(dir_ / "a_dir");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--hang-timeout", "nan"}, "--hang-timeout: must be a number of seconds from 1 to 1e+06, got 'nan'"},
      {{"--hang-timeout", "1e308"}, "got '1e308'"},
      {{"--hang-timeout", "0.001"}, "got '0.001'"},
      {{"--out", "a_file"}, "--out a_file: exists and is not a directory"},
      {{"--junit", "a_dir"}, "--junit a_dir: is a directory"},
      {{"--html", "out/report.json"}, "--html out/report.json: is the run directory's own report.json"},
      {{"--junit", "out/s/traces/rank-0.trace"}, "lies inside scenario s's folder"},
      {{"--junit", "r.xml", "--markdown", "r.xml"}, "--markdown r.xml: --junit writes there too"},
      {{"--device", "gpu"}, "--device: gpu not in {cpu,cuda}"},
      {{"--ranks", "0"}, "--ranks: must be a whole number from 1 to 65536, got '0'"},
      {{"--ranks", "1.5"}, "--ranks: must be a whole number from 1 to 65536, got '1.5'"},
      {{"--ranks", "+2"}, "got '+2'"},
      {{"--ranks", "99999999999999999999"}, "got '99999999999999999999'"},
      {{"--launcher", "local", "--mpirun-args", "--mca"},
       "--mpirun-args: only for --launcher mpirun or srun; the ranks start with --launcher local here"},
      {{"--launcher", "torchrun"}, "--launcher torchrun: only for `lockstep exec`"},
      {{"--launcher", "accelerate"}, "--launcher accelerate: only for `lockstep exec`"},
      {{"--launcher", "local", "--nodes", "2"},
       "--nodes: only for a launch on several hosts (--launcher srun; torchrun or mpirun with --nodes); the ranks "
       "start with --launcher local here"},
      {{"--launcher", "mpirun", "--node-timeout", "5"}, "--ntasks-per-node, --node-dir and --node-timeout: only for"},
      {{"--launcher", "srun", "--nodes", "0"}, "--nodes: must be a whole number from 1 to 4096, got '0'"},
      {{"--launcher", "srun", "--node-timeout", "0.5"}, "--node-timeout: must be a number of seconds from 1 to 3600"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"run", "s.yaml"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ProgramResult r = Lockstep(args, dir_);
    EXPECT_EQ(r.exit_code, 2) << c.message << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_LT(r.err.size(), 600u) << "no 309-digit numbers";
    EXPECT_FALSE(fs::exists(dir_ / "out")) << c.message << ": nothing may start, no run directory be made";
  }
}

// LOCKSTEP_ASYNC_CAPTURE, which every rank inherits: a value no rank takes is refused by run and
// exec before anything starts, naming the variable (each rank, lockstep-rank or the probe, would
// otherwise fail on its own, and the probe's failure read as a program that never stepped).
TEST_F(CliTempDirTest, AnAsyncCaptureSettingNoRankTakesIsRefusedBeforeAnythingStarts) {
  Write("s.yaml", "name: s\nranks: 1\nsteps: 1\n");
  ASSERT_EQ(setenv("LOCKSTEP_ASYNC_CAPTURE", "yes", 1), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"run", "s.yaml", "--out", "out-run"}, {"exec", "--ranks", "1", "--out", "out-exec", "--", "true"}};
  for (const std::vector<std::string>& args : commands) {
    ProgramResult r = Lockstep(args, dir_);
    EXPECT_EQ(r.exit_code, 2) << args[0] << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("LOCKSTEP_ASYNC_CAPTURE='yes': expected 1")) << args[0];
    EXPECT_FALSE(fs::exists(dir_ / ("out-" + args[0]))) << args[0] << ": nothing may start";
  }
  // The self-test, from the source folder where its catalog is.
  ProgramResult selftest = Lockstep({"selftest"});
  EXPECT_EQ(selftest.exit_code, 2) << selftest.out << selftest.err;
  EXPECT_THAT(selftest.err, HasSubstr("LOCKSTEP_ASYNC_CAPTURE='yes': expected 1"));
  ASSERT_EQ(unsetenv("LOCKSTEP_ASYNC_CAPTURE"), 0);
}

// `--ranks N` must suit every scenario of the run, or nothing runs.
TEST_F(CliTempDirTest, RunRanksMustSuitEveryScenario) {
  Write("s.yaml", "name: s\nranks: 1\nsteps: 1\n");
  Write("m.yaml", "name: m\nranks: 4\nslices: 2\nsteps: 1\n");
  Write("i.yaml", "name: i\nranks: 2\nsteps: 2\ninject: [{kind: bitflip, rank: 1, step: 2}]\n"
                  "expect: {fail: [{checker: replica_weights}]}\n");
  ProgramResult r = Lockstep({"run", "s.yaml", "m.yaml", "--ranks", "3"}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("lockstep run: --ranks 3: m.yaml: scenario m: 3 ranks do not split into its 2 slices"));
  r = Lockstep({"run", "i.yaml", "--ranks", "1"}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("i.yaml: scenario i: its bitflip injection acts on rank 1, which a world of 1"));
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "nothing may start";
}

// `lockstep run X.yaml --out .` with a scenario named `src` used to delete ./src.
TEST_F(CliTempDirTest, RunRefusesADirectoryThatIsNotALockstepRun) {
  Write("src/main.cc", "int main() {}\n");
  Write("scen/src.yaml", "name: src\nranks: 1\nsteps: 1\n");
  ProgramResult r = Lockstep({"run", "scen/src.yaml", "--out", "."}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--out .: exists, is not empty and is not a lockstep run directory"));
  r = Lockstep({"run", "scen/src.yaml", "--out", ".", "--reuse-out"}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("which lockstep did not make"));
  EXPECT_TRUE(fs::exists(dir_ / "src" / "main.cc"));
}

// `lockstep trace dump` prints version 1 and version 2 traces in one shape: a step lists its
// tensors by name, digests in hex.
TEST(CliTest, TraceDumpPrintsEveryVersionAsJsonLinesOfOneShape) {
  for (const char* file : {"fixtures/traces/v2_ddp_mlp/rank-1.trace", "fixtures/traces/clean_4rank/rank-1.trace"}) {
    ProgramResult r = Lockstep({"trace", "dump", file});
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.err;
    const auto lines = Lines(r.out);
    ASSERT_GT(lines.size(), 3u) << file;
    EXPECT_THAT(lines[0], HasSubstr(R"("type":"header")"));
    int steps = 0;
    for (const std::string& line : lines) {
      EXPECT_THAT(line, Not(HasSubstr(R"("type":"tensors")")));
      if (line.find(R"("type":"step")") == std::string::npos) continue;
      ++steps;
      EXPECT_THAT(line, HasSubstr(R"("tensors":[{"name":")")) << file;
      EXPECT_THAT(line, ::testing::ContainsRegex(R"("digest":"[0-9a-f]{32}")")) << file;
      EXPECT_THAT(line, Not(HasSubstr(R"("table")")));
    }
    EXPECT_GT(steps, 3) << file;
  }
  ProgramResult two = Lockstep({"trace", "dump", "fixtures/traces/v2_ddp_mlp/rank-0.trace",
                                "fixtures/traces/v2_ddp_mlp/rank-1.trace"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_THAT(Lines(two.out).front(), ::testing::StartsWith(R"({"file":"fixtures/traces/v2_ddp_mlp/rank-0.trace","type":"header")"));
  EXPECT_THAT(Lines(two.out).back(), ::testing::StartsWith(R"({"file":"fixtures/traces/v2_ddp_mlp/rank-1.trace",)"));
}

TEST(CliTest, TraceDumpOfAMissingFileOrANonTraceIsAnInputError) {
  ProgramResult missing = Lockstep({"trace", "dump", "no/such.trace"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("no/such.trace: no such trace file"));
  ProgramResult not_trace = Lockstep({"trace", "dump", "README.md"});
  EXPECT_EQ(not_trace.exit_code, 2);
  EXPECT_THAT(not_trace.err, HasSubstr("README.md:1: "));
  ProgramResult cut = Lockstep({"trace", "dump", "fixtures/traces/truncated_rank1_step3/rank-1.trace"});
  EXPECT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_THAT(cut.err, HasSubstr("last record cut"));
  // Of several files, the one meant is named with its folder (every run has a rank-1.trace).
  ProgramResult several = Lockstep({"trace", "dump", "fixtures/traces/clean_4rank/rank-1.trace",
                                    "fixtures/traces/truncated_rank1_step3/rank-1.trace"});
  EXPECT_EQ(several.exit_code, 0) << several.err;
  EXPECT_THAT(several.err, HasSubstr("fixtures/traces/truncated_rank1_step3/rank-1.trace:30: last record cut"));
}

}  // namespace
}  // namespace lockstep
