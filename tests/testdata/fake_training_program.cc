// A stand-in for a user's training program under `lockstep exec`, with no probe, no Python and
// no LibTorch: it reads the environment exec gives every rank (torchrun's variables and the
// probe's), prints it, and writes the trace the probe would write, through the project's own
// TraceWriter. On command it misbehaves as real programs do: one rank's weights drift from a
// step on, one rank issues an extra collective, a rank dies or hangs, the program exits before
// initializing (no trace) or never steps an optimizer (a header and no step), one rank sets a
// setting of its own (NCCL_ALGO) before it initializes.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "harness/core/lifeline.h"
#include "harness/trace/trace_writer.h"
#include "harness/trace/world_settings.h"

namespace {

using lockstep::Digest128;

Digest128 DigestOf(const std::string& what) {
  const uint64_t h = std::hash<std::string>{}(what);
  return Digest128{h, h * 0x9e3779b97f4a7c15ULL + 1};
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "fake_training_program: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fake training program for the lockstep exec tests"};
  int steps = 3, step_ms = 20, diverge_rank = -1, diverge_step = 0, extra_rank = -1, extra_step = 0;
  int crash_rank = -1, crash_step = 0, hang_rank = -1, hang_step = 0, exit_code = 0, regroup_step = 0;
  bool no_init = false, no_step = false, ignore_lifeline = false;
  int leave_rank = -1, leave_step = 0, leave_code = 0, startup_stall_rank = -1;
  long print_bytes = 0;
  int setting_rank = -1;
  std::string setting;
  app.add_option("--steps", steps, "optimizer steps");
  app.add_option("--step-ms", step_ms, "time one step takes");
  app.add_option("--diverge-rank", diverge_rank, "this rank's weight differs from --diverge-step on");
  app.add_option("--diverge-step", diverge_step);
  app.add_option("--extra-collective-rank", extra_rank, "this rank issues one more all_reduce at --extra-step");
  app.add_option("--extra-step", extra_step);
  app.add_option("--crash-rank", crash_rank, "this rank dies by SIGKILL after recording --crash-step");
  app.add_option("--crash-step", crash_step);
  app.add_option("--hang-rank", hang_rank, "this rank blocks forever inside --hang-step's collective");
  app.add_option("--hang-step", hang_step);
  app.add_option("--regroup-step", regroup_step,
                 "every rank records a torch.new_group discovery call in this step (as the probe would)");
  app.add_option("--setting-rank", setting_rank,
                 "this rank sets --setting (NAME=VALUE) in its environment before it initializes, as a Python "
                 "program sets os.environ before it imports torch");
  app.add_option("--setting", setting);
  app.add_flag("--no-init", no_init, "exit 0 before initializing (no trace at all)");
  app.add_flag("--no-step", no_step, "initialize, never step an optimizer, exit cleanly");
  app.add_option("--exit-code", exit_code, "exit with this code after a clean run");
  app.add_option("--leave-rank", leave_rank,
                 "this rank ends after recording --leave-step, with a clean footer (as the probe writes at "
                 "exit) and exit code --leave-code (a user's sys.exit); the others fail in the next step's "
                 "collective with a lost-peer communication error, as gloo's would");
  app.add_option("--leave-step", leave_step);
  app.add_option("--leave-code", leave_code);
  app.add_option("--startup-stall-rank", startup_stall_rank,
                 "this rank stops before its first collective (loading data forever); the others wait in that "
                 "collective for it");
  app.add_option("--print-bytes", print_bytes, "first print one line of this many bytes (a tensor printed whole)");
  app.add_flag("--ignore-lifeline", ignore_lifeline,
               "do not watch the harness's lifeline (a program that runs no code of lockstep's)");
  CLI11_PARSE(app, argc, argv);

  if (!ignore_lifeline) lockstep::WatchLifeline();  // as the probe does: die with the harness
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                           "LOCKSTEP_TRACE_DIR", "LOCKSTEP_RUN_NAME"}) {
    if (Env(name).empty()) return Fail(std::string(name) + " is not set");
  }
  if (Env("LOCKSTEP_PROBE") != "1") return Fail("LOCKSTEP_PROBE is not 1");
  const int rank = std::atoi(Env("RANK").c_str());
  const int world = std::atoi(Env("WORLD_SIZE").c_str());
  std::printf("env: RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s MASTER_ADDR=%s MASTER_PORT=%s "
              "LOCKSTEP_RUN_NAME=%s PYTHONPATH=%s lifeline=%s mark=%s\n",
              Env("RANK").c_str(), Env("WORLD_SIZE").c_str(), Env("LOCAL_RANK").c_str(),
              Env("LOCAL_WORLD_SIZE").c_str(), Env("MASTER_ADDR").c_str(), Env("MASTER_PORT").c_str(),
              Env("LOCKSTEP_RUN_NAME").c_str(), Env("PYTHONPATH").c_str(),
              Env(lockstep::kLifelineEnv).empty() ? "no" : "yes", Env("LOCKSTEP_TEST_MARK").c_str());
  std::fflush(stdout);
  if (print_bytes > 0) {
    const std::string line(static_cast<size_t>(print_bytes), 'x');
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  if (no_init) return 0;
  if (rank == setting_rank) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos) return Fail("--setting must be NAME=VALUE, got " + setting);
    ::setenv(setting.substr(0, eq).c_str(), setting.substr(eq + 1).c_str(), 1);
  }

  lockstep::TraceHeader header;
  header.rank = rank;
  header.world_size = world;
  header.local_rank = std::atoi(Env("LOCAL_RANK").c_str());
  header.pid = ::getpid();
  header.device = "cpu";
  header.backend = "gloo";
  header.scenario_id = Env("LOCKSTEP_RUN_NAME");
  header.environment = lockstep::RecordedEnvironment();  // as the probe records it
  auto writer = lockstep::TraceWriter::Open(
      std::filesystem::path(Env("LOCKSTEP_TRACE_DIR")) / lockstep::TraceFileName(rank), header,
      lockstep::TraceOpen::kNew);  // as the probe opens it
  if (!writer.ok()) return Fail(writer.status().ToString());
  lockstep::TraceWriter& trace = **writer;
  const auto t0 = std::chrono::steady_clock::now();
  auto now = [&t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  // As the probe records torch.distributed.init_process_group.
  if (auto s = trace.WriteDiscovery({1, "startup", 0, "torch.init_process_group", "train.py:9 in main", ""}); !s.ok()) {
    return Fail(s.ToString());
  }
  uint64_t seq = 0;
  auto all_reduce = [&](int64_t step, bool hang, int64_t count) -> lockstep::Status {
    lockstep::CollectiveRecord c;
    c.group = "world";
    c.seq = seq++;
    c.op = "all_reduce";
    c.dtype = "float32";
    c.count = count;
    c.reduce = "sum";
    c.step = step;
    c.start_s = now();
    LOCKSTEP_RETURN_IF_ERROR(trace.WriteCollectiveBegin(c));
    if (hang) {
      for (;;) ::pause();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    return trace.WriteCollectiveEnd(c.group, c.seq, now());
  };
  if (startup_stall_rank >= 0) {
    if (rank == startup_stall_rank) {
      for (;;) ::pause();
    }
    if (auto s = all_reduce(1, /*hang=*/true, 16); !s.ok()) return Fail(s.ToString());
  }
  for (int64_t step = 1; !no_step && step <= steps; ++step) {
    if (rank == extra_rank && step == extra_step) {
      // A metric logged on one rank only: a one-element all_reduce the others never issue.
      if (auto s = all_reduce(step, false, 1); !s.ok()) return Fail(s.ToString());
    }
    if (step == regroup_step) {
      if (auto s = trace.WriteDiscovery({2, "step", step, "torch.new_group", "model.py:41 in forward", ""}); !s.ok()) {
        return Fail(s.ToString());
      }
    }
    if (leave_rank >= 0 && rank != leave_rank && step == leave_step + 1) {
      // The collective the leaver never joins: begun, then failed as gloo fails it.
      lockstep::CollectiveRecord c;
      c.group = "world";
      c.seq = seq++;
      c.op = "all_reduce";
      c.dtype = "float32";
      c.count = 16;
      c.reduce = "sum";
      c.step = step;
      c.start_s = now();
      if (auto s = trace.WriteCollectiveBegin(c); !s.ok()) return Fail(s.ToString());
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (auto s = trace.WriteFooter({step - 1, "communication: Connection closed by peer [127.0.0.1]:29500"});
          !s.ok()) {
        return Fail(s.ToString());
      }
      std::fprintf(stderr, "RuntimeError: Connection closed by peer\n");
      return 1;
    }
    if (auto s = all_reduce(step, rank == hang_rank && step == hang_step, 16); !s.ok()) return Fail(s.ToString());
    lockstep::StepRecord record;
    record.step = step;
    record.loss = 1.0 / static_cast<double>(step);
    record.wall_s = now();
    const bool off = rank == diverge_rank && step >= diverge_step;
    for (auto kind : {lockstep::TensorKind::kParam, lockstep::TensorKind::kGrad}) {
      lockstep::TensorRecord t;
      t.name = "fc.weight";
      t.kind = kind;
      t.numel = 16;
      t.dtype = "float32";
      t.norm = off && kind == lockstep::TensorKind::kParam ? 1.5 : 1.0;
      t.digest = DigestOf(std::string(lockstep::ToString(kind)) + "/" + std::to_string(step) +
                          (off && kind == lockstep::TensorKind::kParam ? "/off" : ""));
      record.tensors.push_back(t);
    }
    if (auto s = trace.WriteStep(record); !s.ok()) return Fail(s.ToString());
    if (rank == crash_rank && step == crash_step) ::kill(::getpid(), SIGKILL);
    if (rank == leave_rank && step == leave_step) {
      if (auto s = trace.WriteFooter({step, "ok"}); !s.ok()) return Fail(s.ToString());
      return leave_code;
    }
  }
  if (auto s = trace.WriteFooter({no_step ? 0 : steps, "ok"}); !s.ok()) return Fail(s.ToString());
  return exit_code;
}
