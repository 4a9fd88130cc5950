#include "harness/launcher/interrupt_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace lockstep {
namespace {

// Process-wide by nature: signal dispositions are. Guarded by g_mutex, except what the handler
// touches (an atomic and a write(2), both async-signal-safe).
std::mutex g_mutex;
int g_depth = 0;
struct sigaction g_old_int;
struct sigaction g_old_term;
int g_pipe[2] = {-1, -1};
std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  const int saved_errno = errno;
  g_signal.store(sig);
  if (g_pipe[1] >= 0) {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_depth++ > 0) return;
  g_signal.store(0);
  if (g_pipe[0] < 0 && ::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_pipe[0] = g_pipe[1] = -1;
  }
  // Drain bytes left by a signal of an earlier launch.
  char buf[64];
  while (g_pipe[0] >= 0 && ::read(g_pipe[0], buf, sizeof(buf)) > 0) {
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // other threads' system calls should not see EINTR because of us
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_depth > 0) return;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

int InterruptGuard::fd() const { return g_pipe[0]; }

int InterruptGuard::signal() const { return g_signal.load(); }

}  // namespace lockstep
