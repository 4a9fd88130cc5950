// A stand-in rank program for the launcher's tests: no MPI, no LibTorch. It writes a JSON-lines
// trace the way a real rank does (header, steps, collective begin/end, footer) and misbehaves on
// command: dies by SIGKILL at a step, exits 0 early without its footer, hangs before a collective while the others wait "in" it,
// exits with a code, ignores SIGTERM, or leaves a process behind in a session of its own.
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

int EnvInt(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n); v && *v) return std::atoi(v);
  }
  return fallback;
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

double Now(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

[[noreturn]] void SleepForever() {
  for (;;) ::pause();
}

class Trace {
 public:
  explicit Trace(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) {
      std::perror(("fake_rank: open " + path).c_str());
      std::exit(5);
    }
  }
  // One write(2) per record, as the real trace writer does: a kill loses no finished record.
  void Write(const json& record) {
    const std::string line = record.dump() + "\n";
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::exit(5);
  }

 private:
  int fd_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fake rank program for the launcher tests"};
  std::string trace_dir;
  int steps = 5, step_ms = 50, crash_rank = -1, crash_step = -1, hang_rank = -1, hang_step = -1;
  bool ok_footer = false;
  int fill_disk_step = -1;
  int exit_code = 0, exit_rank = -1, ignore_sigterm_rank = -1, heartbeat_ms = 0, quit_rank = -1, quit_step = -1;
  int startup_rank = -1, startup_ms = 0, error_rank = -1, error_step = -1;
  bool spawn_escapee = false, peer_lost = false;
  int slow_death_ms = 0;
  int quiet_rank = -1, quiet_step = -1, quiet_ms = 0;
  bool quiet_sleeps = false;
  bool no_step_zero = false;
  int stuck_step = -1;
  std::string error_status;
  app.add_option("--trace-dir", trace_dir, "where rank-<r>.trace goes")->required();
  app.add_option("--steps", steps);
  app.add_option("--step-ms", step_ms, "time spent inside each collective");
  app.add_option("--crash-rank", crash_rank);
  app.add_option("--crash-step", crash_step, "SIGKILL itself after writing this step");
  app.add_option("--hang-rank", hang_rank);
  app.add_option("--hang-step", hang_step, "block forever before this step's collective");
  app.add_option("--quit-rank", quit_rank);
  app.add_option("--quit-step", quit_step, "exit 0 after writing this step, without the footer");
  app.add_option("--exit-code", exit_code, "exit with this code at the end");
  app.add_option("--exit-rank", exit_rank, "only this rank uses --exit-code (default: all)");
  app.add_flag("--ok-footer", ok_footer, "write an ok footer whatever --exit-code is (a user program's own code)");
  app.add_option("--fill-disk-step", fill_disk_step,
                 "after writing this step, write records until the file system is full (the write fails: exit 5)");
  app.add_option("--ignore-sigterm-rank", ignore_sigterm_rank);
  app.add_option("--heartbeat-ms", heartbeat_ms, "write heartbeat records from a thread");
  app.add_option("--startup-rank", startup_rank);
  app.add_option("--startup-ms", startup_ms, "time the --startup-rank takes before its step-0 record");
  app.add_option("--error-rank", error_rank);
  app.add_option("--error-step", error_step,
                 "at this step, write an error footer and exit 3 as lockstep-rank does; the others hang there");
  app.add_option("--error-status", error_status, "the --error-rank's footer status (default: an internal error)");
  app.add_flag("--peer-lost", peer_lost,
               "the ranks other than --crash-rank fail the next step's collective as gloo does when a peer "
               "died: a communication-error footer and exit 3");
  app.add_option("--slow-death-ms", slow_death_ms,
                 "the --crash-rank's end takes this long: its main thread ends, another lives on, then the "
                 "SIGKILL (as a process whose core dump or GPU context teardown takes seconds)");
  app.add_option("--quiet-rank", quiet_rank,
                 "only this rank has the quiet phase (default: all); the others wait for it inside the collective");
  app.add_option("--quiet-step", quiet_step,
                 "before this step's collective, a phase that records nothing (an evaluation): it computes "
                 "for --quiet-ms");
  app.add_option("--quiet-ms", quiet_ms);
  app.add_flag("--quiet-sleeps", quiet_sleeps, "the quiet phase sleeps instead of computing (uses no CPU)");
  app.add_flag("--spawn-escapee", spawn_escapee, "leave a child in a new session that ignores SIGTERM");
  app.add_flag("--no-step-zero", no_step_zero,
               "write no step-0 record: a program under exec records a step only once it ends");
  app.add_option("--stuck-step", stuck_step,
                 "every rank begins this step's collective and none ever ends it (mismatched arguments)");
  CLI11_PARSE(app, argc, argv);

  const int rank = EnvInt({"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}, 0);
  const int world = EnvInt({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1);
  const int expect = EnvInt({"LOCKSTEP_EXPECT_WORLD_SIZE"}, world);
  std::printf("fake_rank: rank=%d world=%d expect=%d local_rank=%s local_world=%s master=%s:%s\n", rank, world,
              expect, EnvOr("LOCAL_RANK", "-"),
              EnvOr("LOCAL_WORLD_SIZE", "-"), EnvOr("MASTER_ADDR", "-"), EnvOr("MASTER_PORT", "-"));
  std::fprintf(stderr, "fake_rank: rank %d says hello on stderr\n", rank);
  std::fflush(stdout);
  if (expect != world) {
    std::fprintf(stderr, "fake_rank: world size %d, but %d was asked for\n", world, expect);
    return 4;
  }
  if (rank == ignore_sigterm_rank) ::signal(SIGTERM, SIG_IGN);
  if (spawn_escapee) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setsid();  // a new session and process group, as a daemon (or orted) does
      ::signal(SIGTERM, SIG_IGN);
      ::signal(SIGHUP, SIG_IGN);
      SleepForever();
    }
  }

  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const auto t0 = std::chrono::steady_clock::now();
  Trace trace(trace_dir + "/rank-" + std::to_string(rank) + ".trace");
  trace.Write({{"type", "header"}, {"schema", "lockstep.trace/1.0"}, {"rank", rank}, {"world_size", world},
               {"pid", static_cast<int64_t>(::getpid())}, {"host", host}, {"versions", {{"fake", "1"}}}});
  if (rank == startup_rank) std::this_thread::sleep_for(std::chrono::milliseconds(startup_ms));
  if (!no_step_zero) trace.Write({{"type", "step"}, {"step", 0}, {"loss", nullptr}, {"tensors", json::array()}});

  std::atomic<bool> stop{false};
  std::thread heartbeat;
  if (heartbeat_ms > 0) {
    heartbeat = std::thread([&] {
      while (!stop) {
        trace.Write({{"type", "heartbeat"}, {"step", 0}, {"wall_s", Now(t0)}});
        std::this_thread::sleep_for(std::chrono::milliseconds(heartbeat_ms));
      }
    });
  }

  for (int step = 1; step <= steps; ++step) {
    const json begin = {{"type", "collective_begin"}, {"group", "world"}, {"seq", step - 1}, {"op", "all_reduce"},
                        {"dtype", "float32"}, {"count", 16}, {"root", -1}, {"reduce", "avg"},
                        {"step", step}, {"start_s", Now(t0)}};
    bool began = false;
    if (step == quiet_step) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(quiet_ms);
      if (quiet_rank >= 0 && rank != quiet_rank) {
        // A peer of the one rank that evaluates: it waits for it in the collective.
        trace.Write(begin);
        began = true;
        std::this_thread::sleep_until(until);
      } else if (quiet_sleeps) {
        std::this_thread::sleep_until(until);
      } else {
        volatile uint64_t x = 0;  // busy, as a forward pass is
        while (std::chrono::steady_clock::now() < until) {
          for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ULL + 1;
        }
      }
    }
    if (step == error_step && error_rank >= 0) {
      if (rank != error_rank) SleepForever();  // waits for the failed rank in the collective
      const std::string status =
          error_status.empty() ? "internal: injected error at step " + std::to_string(step) : error_status;
      trace.Write({{"type", "footer"}, {"steps_completed", step - 1}, {"status", status}});
      std::fprintf(stderr, "lockstep-rank %d: %s\n", rank, status.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
    if (step == stuck_step) {
      trace.Write(begin);
      SleepForever();
    }
    if (step == hang_step) {
      if (rank == hang_rank) SleepForever();  // never reaches the collective
      trace.Write(begin);                     // the others wait inside it for the hung rank
      SleepForever();
    }
    if (!began) trace.Write(begin);
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    if (peer_lost && crash_rank >= 0 && rank != crash_rank && step == crash_step + 1) {
      const std::string status = "communication: step " + std::to_string(step) + ": rank " + std::to_string(rank) +
                                 " group world: all_reduce: Read error: Connection reset by peer";
      trace.Write({{"type", "footer"}, {"steps_completed", step - 1}, {"status", status}});
      std::fprintf(stderr, "lockstep-rank %d: %s\n", rank, status.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
    trace.Write({{"type", "collective_end"}, {"group", "world"}, {"seq", step - 1}, {"end_s", Now(t0)}});
    trace.Write({{"type", "step"}, {"step", step}, {"loss", 1.0 / step},
                 {"tensors", json::array({{{"name", "w"}, {"digest", "00"}, {"numel", 16}}})}});
    if (rank == crash_rank && step == crash_step) {
      if (slow_death_ms > 0) {
        std::thread([slow_death_ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(slow_death_ms));
          ::raise(SIGKILL);
        }).detach();
        ::syscall(SYS_exit, 0);  // this thread alone: the process is ending, not yet reapable
      }
      ::raise(SIGKILL);
    }
    if (rank == quit_rank && step == quit_step) std::_Exit(0);
    if (step == fill_disk_step) {
      const std::string pad(1 << 20, 'x');
      for (;;) trace.Write({{"type", "log"}, {"message", pad}});
    }
  }
  stop = true;
  if (heartbeat.joinable()) heartbeat.join();
  const int code = (exit_rank < 0 || exit_rank == rank) ? exit_code : 0;
  // As lockstep-rank: an error footer only for its own error codes (2, 3); a program that
  // finished its steps and then exits non-zero (a crash at exit) says "ok".
  const bool harness_error = !ok_footer && (code == 2 || code == 3);
  trace.Write({{"type", "footer"}, {"steps_completed", steps},
               {"status", harness_error ? "internal: exit " + std::to_string(code) : "ok"}});
  return code;
}
