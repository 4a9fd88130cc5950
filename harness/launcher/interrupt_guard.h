// SIGINT and SIGTERM handlers that exist only while a launch runs: the signal is recorded (an
// atomic and a self-pipe the launch loop polls) instead of killing us, so the launcher can end
// the ranks and the caller can still write its report. The previous handlers come back when the
// last guard goes away. One signal is enough: the launcher stops the ranks itself.
#pragma once

namespace lockstep {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers (nested guards share them)
  ~InterruptGuard();  // restores the previous handlers when the last guard ends
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Readable once a signal arrived; for poll(2). -1 if the pipe could not be made (the atomic
  // still works; the launch loop polls it on its own timer).
  int fd() const;
  // The signal that arrived since this guard was made (SIGINT or SIGTERM), or 0.
  int signal() const;
};

}  // namespace lockstep
