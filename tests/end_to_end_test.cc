// `lockstep run` end to end: real ranks under mpirun (or the local spawn), real traces, real
// checkers, report.json. Each test uses its own run directory under the build tree.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::LockstepBinary;
using testing::ProgramResult;
using testing::RunProgram;

fs::path RunDir(const std::string& name) { return testing::FreshOutDir("e2e", name); }

nlohmann::json ReadReport(const fs::path& dir) {
  std::ifstream in(dir / "report.json");
  EXPECT_TRUE(in.good()) << "no report.json in " << dir;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// Processes whose command line mentions `marker` (our run directory): none may survive a run.
std::vector<int> ProcessesMentioning(const std::string& marker) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) != std::string::npos && std::stoi(name) != getpid()) pids.push_back(std::stoi(name));
  }
  return pids;
}

ProgramResult Lockstep(const std::vector<std::string>& args) {
  return RunProgram(LockstepBinary(), args, LOCKSTEP_SOURCE_DIR);
}

const nlohmann::json* FindingOf(const nlohmann::json& scenario, const std::string& checker) {
  for (const auto& f : scenario["findings"]) {
    if (f["checker"] == checker) return &f;
  }
  return nullptr;
}

TEST(EndToEndTest, CleanRunsOfEveryModePassEveryDefaultChecker) {
  const fs::path dir = RunDir("clean_modes");
  ProgramResult r = Lockstep({"run", "scenarios/clean/ddp_mlp.yaml", "scenarios/clean/zero1_mlp.yaml",
                              "scenarios/clean/ddp_slices2.yaml", "scenarios/clean/zero1_slices2.yaml",
                              "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json report = ReadReport(dir);
  ASSERT_EQ(report["scenarios"].size(), 4u);
  for (const auto& s : report["scenarios"]) {
    EXPECT_EQ(s["outcome"], "pass") << s.dump(2);
    EXPECT_EQ(s["ranks"], 4);
    bool reference = false;
    for (const auto& c : s["checkers"]) reference |= c["checker"] == "reference";
    EXPECT_TRUE(reference) << "clean multi-rank runs are compared with their 1-rank run";
    // Every rank's header names the scenario text it ran: XXH3-128 of the file, the same on all.
    std::set<std::string> digests;
    for (int rank = 0; rank < 4; ++rank) {
      std::ifstream trace(dir / s["run_dir"].get<std::string>() / "traces" / ("rank-" + std::to_string(rank) + ".trace"));
      std::string line;
      ASSERT_TRUE(std::getline(trace, line)) << s["id"] << " rank " << rank;
      const std::string digest = nlohmann::json::parse(line).value("scenario_digest", "");
      EXPECT_EQ(digest.size(), 32u) << line;
      digests.insert(digest);
    }
    EXPECT_EQ(digests.size(), 1u);
  }
}

TEST(EndToEndTest, RankKilledAtStep3IsACrashNamingItAndTheStep) {
  const fs::path dir = RunDir("crash");
  const auto start = std::chrono::steady_clock::now();
  ProgramResult r = Lockstep({"run", "fixtures/e2e/crash_sigkill.yaml", "--out", dir.string()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << "the crash was expected: xfail\n" << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "xfail") << s.dump(2);
  const nlohmann::json* crash = FindingOf(s, "crash");
  ASSERT_NE(crash, nullptr) << s.dump(2);
  EXPECT_EQ((*crash)["ranks"], nlohmann::json::array({1}));
  EXPECT_EQ((*crash)["step"], 3);
  EXPECT_LT(seconds, 30.0) << "a crash must be reported within seconds";
  EXPECT_TRUE(ProcessesMentioning(dir.string()).empty());
}

TEST(EndToEndTest, BlockedRankIsAHangNamingItWithinTheTimeout) {
  const fs::path dir = RunDir("hang");
  const auto start = std::chrono::steady_clock::now();
  ProgramResult r = Lockstep({"run", "fixtures/e2e/hang.yaml", "--out", dir.string()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "xfail") << s.dump(2);
  const nlohmann::json* hang = FindingOf(s, "hang");
  ASSERT_NE(hang, nullptr) << s.dump(2);
  EXPECT_EQ((*hang)["ranks"], nlohmann::json::array({1}));
  // hang_timeout_s = 3, counted after start-up (which has its own, generous, timeout): the bound
  // only says the run did not wait for a scenario timeout, whatever the machine's load.
  EXPECT_LT(s["duration_s"].get<double>(), 120.0);
  EXPECT_LT(seconds, 240.0);
  EXPECT_TRUE(ProcessesMentioning(dir.string()).empty()) << "no process may survive a hang";
}

TEST(EndToEndTest, SigintMidRunStopsTheRanksAndStillWritesTheReport) {
  const fs::path dir = RunDir("sigint");
  const std::string binary = LockstepBinary().string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(LOCKSTEP_SOURCE_DIR) != 0) _exit(127);
    execl(binary.c_str(), binary.c_str(), "run", "fixtures/e2e/long_clean.yaml", "--out", dir.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the ranks are training (a step record exists), then interrupt.
  const fs::path trace = dir / "long_clean" / "traces" / "rank-0.trace";
  for (int i = 0; i < 300 && !(fs::exists(trace) && fs::file_size(trace) > 4096); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(trace)) << "the run never started";
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << "an interrupted run is not a pass";
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("interrupted"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(ProcessesMentioning(dir.string()).empty()) << "no process may survive SIGINT";
}

// Starts `lockstep run <scenario> --out <dir>` from the source folder; returns its pid.
pid_t StartRun(const std::string& scenario, const fs::path& dir) {
  const std::string binary = LockstepBinary().string();
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(LOCKSTEP_SOURCE_DIR) != 0) _exit(127);
    execl(binary.c_str(), binary.c_str(), "run", scenario.c_str(), "--out", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// SIGKILL gives `lockstep run` no chance to stop anything: the ranks (and mpirun, once its ranks
// are gone) must end on their own. `ranks` processes of the run must exist before the kill, so
// that finding none after it means they died, not that they were never seen.
void ExpectNothingOutlivesASigkill(pid_t pid, const fs::path& dir, size_t ranks) {
  EXPECT_GE(ProcessesMentioning(dir.string()).size(), ranks + 1) << "the ranks and their launcher before the kill";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // The ranks look for their harness four times a second; 60 s only bounds a stuck test.
  std::vector<int> left = ProcessesMentioning(dir.string());
  for (int i = 0; i < 600 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = ProcessesMentioning(dir.string());
  }
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived a SIGKILL of lockstep run";
  for (int p : left) kill(p, SIGKILL);
}

TEST(EndToEndTest, NothingOutlivesASigkillOfTheHarnessMidRun) {
  const fs::path dir = RunDir("sigkill_mid_run");
  // A previous, passing run in the same directory: its verdict must not survive the new run's death.
  fs::create_directories(dir);
  std::ofstream(dir / "report.json") << R"({"schema": "lockstep.report/1", "scenarios": [{"id": "long_clean", "outcome": "pass"}]})";
  const pid_t pid = StartRun("fixtures/e2e/long_clean.yaml", dir);
  ASSERT_GE(pid, 0);
  const fs::path trace = dir / "long_clean" / "traces" / "rank-1.trace";
  for (int i = 0; i < 600 && !(fs::exists(trace) && fs::file_size(trace) > 4096); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(trace)) << "the run never started";
  ExpectNothingOutlivesASigkill(pid, dir, 2);
  EXPECT_FALSE(fs::exists(dir / "report.json")) << "the old report's \"1 passed\" beside the new partial traces";
  ProgramResult report = Lockstep({"report", dir.string()});
  EXPECT_NE(report.exit_code, 0) << report.out;
}

TEST(EndToEndTest, NothingOutlivesASigkillOfTheHarnessMidHang) {
  const fs::path dir = RunDir("sigkill_mid_hang");
  const pid_t pid = StartRun("fixtures/e2e/hang_forever.yaml", dir);
  ASSERT_GE(pid, 0);
  // Hung: rank 1 recorded step 1 and its trace has stopped growing.
  const fs::path trace = dir / "hang_forever" / "traces" / "rank-1.trace";
  auto text = [&] {
    std::ifstream in(trace);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (int i = 0; i < 600 && text().find("\"type\":\"step\",\"step\":1") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(text().find("\"type\":\"step\",\"step\":1"), std::string::npos) << "rank 1 never reached step 1";
  for (uintmax_t size = 0; size != fs::file_size(trace);) {
    size = fs::file_size(trace);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  ExpectNothingOutlivesASigkill(pid, dir, 2);
}

// SIGINT while the 1-rank reference run is going: the whole run stops, and the scenario's line
// says so (it used to read only "[ ERROR] <id>: reference").
TEST(EndToEndTest, SigintDuringTheReferenceRunSaysSo) {
  const fs::path dir = RunDir("sigint_reference");
  const std::string binary = LockstepBinary().string();
  int out_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    close(out_pipe[0]);
    if (chdir(LOCKSTEP_SOURCE_DIR) != 0) _exit(127);
    execl(binary.c_str(), binary.c_str(), "run", "fixtures/e2e/reference_interrupted.yaml", "--out", dir.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out_pipe[1]);
  const fs::path trace = dir / "reference_interrupted" / "reference" / "traces" / "rank-0.trace";
  for (int i = 0; i < 3000 && !fs::exists(trace); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(trace)) << "the reference run never started";
  kill(pid, SIGINT);
  std::string console;
  char buf[4096];
  for (ssize_t n; (n = read(out_pipe[0], buf, sizeof buf)) > 0;) console.append(buf, static_cast<size_t>(n));
  close(out_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_NE(console.find("[ ERROR] reference_interrupted: interrupted (SIGINT/SIGTERM) during the reference run"),
            std::string::npos)
      << console;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("during the reference run"), std::string::npos) << s.dump(2);
}

TEST(EndToEndTest, GlooAndMpiGiveIdenticalResults) {
  const fs::path mpi = RunDir("backend_mpi"), gloo = RunDir("backend_gloo");
  ProgramResult a = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "mpi", "--out", mpi.string()});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  ProgramResult b = Lockstep(
      {"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "gloo", "--launcher", "local", "--out", gloo.string()});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  ProgramResult diff = Lockstep({"diff", mpi.string(), gloo.string()});
  EXPECT_EQ(diff.exit_code, 0) << diff.out << diff.err;
  EXPECT_NE(diff.out.find("identical"), std::string::npos) << diff.out;
}

// `--ranks N` runs the scenario at another world size, its companions (reference runs) included.
TEST(EndToEndTest, RanksOverrideRunsTheScenarioAtThatWorldSize) {
  const fs::path dir = RunDir("ranks_override");
  ProgramResult r = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "gloo", "--launcher", "local",
                              "--ranks", "3", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "pass") << s.dump(2);
  EXPECT_EQ(s["ranks"], 3);
  EXPECT_TRUE(fs::exists(dir / "two_rank_clean" / "traces" / "rank-2.trace"));
  EXPECT_FALSE(fs::exists(dir / "two_rank_clean" / "traces" / "rank-3.trace"));
}

// LOCKSTEP_ASYNC_CAPTURE asked of a CPU rank: the run is the synchronous one, and the trace says
// why the asynchronous capture is off (a run that asked and did not get it is seen).
TEST(EndToEndTest, AnAsynchronousCaptureACpuRankCannotTakeIsOffAndTheTraceSaysWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1", "asynchronous capture: off, the rank trains on cpu"},
      {"host", "asynchronous capture: off, LOCKSTEP_ASYNC_CAPTURE=host is the probe's"}};
  for (const auto& [value, said] : cases) {
    const fs::path dir = RunDir("async_capture_" + value);
    ASSERT_EQ(setenv("LOCKSTEP_ASYNC_CAPTURE", value.c_str(), 1), 0);
    ProgramResult r = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "gloo", "--launcher", "local",
                                "--out", dir.string()});
    ASSERT_EQ(unsetenv("LOCKSTEP_ASYNC_CAPTURE"), 0);
    EXPECT_EQ(r.exit_code, 0) << value << "\n" << r.out << r.err;
    std::ifstream in(dir / "two_rank_clean" / "traces" / "rank-0.trace");
    const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(trace.find(said), std::string::npos) << value << ": the trace does not say '" << said << "'";
  }
}

bool GpuDeviceFilePresent() { return fs::exists("/dev/nvidia0") || fs::exists("/dev/dxg"); }

// `--device cuda` where no GPU is visible is a harness error before any rank starts, and a rank
// told to use cuda without a device stops with that error in its trace: never a CPU run instead.
TEST(EndToEndTest, CudaWithoutAGpuIsAHarnessErrorNotACpuRun) {
  if (GpuDeviceFilePresent()) GTEST_SKIP() << "this machine has a GPU: ci/gpu-suite.sh runs --device cuda";
  const fs::path dir = RunDir("cuda_without_gpu");
  ProgramResult r = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "gloo", "--launcher", "local",
                              "--device", "cuda", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("device cuda: no GPU is visible"), std::string::npos) << s.dump(2);
  EXPECT_FALSE(fs::exists(dir / "two_rank_clean" / "traces")) << "no rank may start";

  // A rank handed such a scenario anyway (its resolved file, as the runner writes one) refuses it.
  const fs::path traces = RunDir("cuda_without_gpu_rank");
  fs::create_directories(traces);
  std::ofstream(traces / "scenario.yaml") << "name: two_rank_clean\nranks: 1\nsteps: 5\nbackend: gloo\ndevice: cuda\n"
                                             "model: {kind: transformer, layers: 1, hidden: 32, heads: 4, seq_len: 16, "
                                             "vocab: 64}\n";
  ProgramResult rank = RunProgram(LockstepBinary().parent_path() / "lockstep-rank",
                                  {"--scenario", (traces / "scenario.yaml").string(), "--trace-dir", traces.string()},
                                  LOCKSTEP_SOURCE_DIR);
  EXPECT_EQ(rank.exit_code, 3) << rank.out << rank.err;
  EXPECT_NE(rank.err.find("device cuda: no CUDA device is visible to rank 0"), std::string::npos) << rank.err;
  std::ifstream in(traces / "rank-0.trace");
  std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(trace.find("\"device\":\"cuda\""), std::string::npos) << "the header says what was asked for";
  EXPECT_NE(trace.find("no CUDA device is visible"), std::string::npos) << "the footer carries the reason";
  EXPECT_EQ(trace.find("\"type\":\"step\""), std::string::npos) << "no step ran\n" << trace;
}

// gloo under mpirun: the launcher sets up the store rendezvous (MASTER_ADDR, a free MASTER_PORT).
TEST(EndToEndTest, GlooRunsUnderMpirun) {
  const fs::path dir = RunDir("gloo_mpirun");
  ProgramResult r = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "gloo", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(ReadReport(dir)["scenarios"][0]["outcome"], "pass");
}

// Combinations that cannot run are refused before any rank starts, or skipped with the reason.
TEST(EndToEndTest, ImpossibleBackendAndLauncherCombinationsNeverStartARank) {
  const fs::path mpi_local = RunDir("mpi_local");
  ProgramResult r = Lockstep(
      {"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "mpi", "--launcher", "local", "--out", mpi_local.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  nlohmann::json s = ReadReport(mpi_local)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("backend mpi cannot run under --launcher local"), std::string::npos)
      << s.dump(2);
  EXPECT_FALSE(fs::exists(mpi_local / "two_rank_clean" / "traces")) << "no rank may start";

  const fs::path nccl = RunDir("nccl");
  r = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--backend", "nccl", "--out", nccl.string()});
  s = ReadReport(nccl)["scenarios"][0];
  if (s["outcome"] == "skipped") {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(s["reason"].get<std::string>().find("backend nccl"), std::string::npos) << s.dump(2);
  } else {
    EXPECT_EQ(s["outcome"], "pass") << "a machine with NCCL and a GPU runs it\n" << s.dump(2);
  }
}

// A rank that stops on an error of the harness: outcome error with the rank's own message, exit
// 3, never a finding against the system under test and never a hang.
TEST(EndToEndTest, ARankErrorIsAnErrorWithTheRanksMessage) {
  const fs::path dir = RunDir("rank_error");
  ProgramResult r = Lockstep({"run", "fixtures/e2e/bitflip_out_of_range.yaml", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error") << s.dump(2);
  const std::string reason = s["reason"].get<std::string>();
  EXPECT_NE(reason.find("fixtures/e2e/bitflip_out_of_range.yaml:6:5: inject[0]: bitflip index 100000000 is beyond"),
            std::string::npos)
      << reason;
  EXPECT_TRUE(s["findings"].empty()) << s.dump(2);
}

TEST(EndToEndTest, FailFastStopsEveryRankAtTheFirstDivergentStep) {
  const fs::path dir = RunDir("fail_fast");
  ProgramResult r = Lockstep({"run", "fixtures/e2e/bitflip_fail_fast.yaml", "--fail-fast", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json s = ReadReport(dir)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "xfail") << s.dump(2);
  // Every rank's trace ends at step 3: the mismatch was found live.
  for (int rank = 0; rank < 3; ++rank) {
    std::ifstream in(dir / "bitflip_fail_fast" / "traces" / ("rank-" + std::to_string(rank) + ".trace"));
    int64_t last_step = -1;
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("type", "") == "step") last_step = j["step"].get<int64_t>();
    }
    EXPECT_EQ(last_step, 3) << "rank " << rank;
  }
}

TEST(EndToEndTest, BlessThenGoldenPassesAndATamperedGoldenFires) {
  const fs::path dir = RunDir("golden"), fixtures = RunDir("golden_fixtures");
  ProgramResult first = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--out", (dir / "a").string()});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ProgramResult bless = Lockstep({"bless", (dir / "a").string(), "--fixtures", fixtures.string()});
  ASSERT_EQ(bless.exit_code, 0) << bless.out << bless.err;
  ASSERT_NE(bless.out.find("blessed "), std::string::npos) << bless.out;

  ProgramResult again = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--check", "golden", "--fixtures",
                                  fixtures.string(), "--out", (dir / "b").string()});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;

  // Change one stored loss: the same run no longer matches its golden file.
  fs::path golden;
  for (const auto& e : fs::recursive_directory_iterator(fixtures)) {
    if (e.path().extension() == ".json") golden = e.path();
  }
  ASSERT_FALSE(golden.empty());
  nlohmann::json g = nlohmann::json::parse(std::ifstream(golden));
  for (auto& point : g["loss"]) {
    if (point["step"] == 2) point["loss"] = point["loss"].get<double>() * 1.01;
  }
  std::ofstream(golden) << g.dump();
  ProgramResult tampered = Lockstep({"run", "fixtures/e2e/two_rank_clean.yaml", "--check", "golden", "--fixtures",
                                     fixtures.string(), "--out", (dir / "c").string()});
  EXPECT_EQ(tampered.exit_code, 1) << tampered.out << tampered.err;
  nlohmann::json s = ReadReport(dir / "c")["scenarios"][0];
  const nlohmann::json* f = FindingOf(s, "golden");
  ASSERT_NE(f, nullptr) << s.dump(2);
}

TEST(EndToEndTest, InvalidScenarioRunsNothing) {
  const fs::path dir = RunDir("invalid");
  ProgramResult r = Lockstep({"run", "fixtures/bad_scenarios", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir)) << "nothing may be written when a scenario is invalid";
}

}  // namespace
}  // namespace lockstep
