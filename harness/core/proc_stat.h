// One line of /proc/<pid>/stat, read in one place: the lifeline (is the harness still there?),
// the launcher's process tree (whose children are these?) and its hang judgement (does a rank
// that records nothing still compute?) all need it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace lockstep {

struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';         // 'R', 'S', 'Z', ...
  uint32_t flags = 0;       // the kernel's PF_* flags of the thread group leader
  uint64_t start_time = 0;  // clock ticks after boot: tells a reused pid from the original
  // The leader's exit status as wait() would report it, once it is ending (field 52, Linux 3.5+;
  // 0 before): how a process that cannot be reaped yet is dying.
  int exit_code = 0;
  // CPU time in clock ticks (sysconf(_SC_CLK_TCK)): its own, user and system, and that of its
  // children it has waited for.
  uint64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
};

// The CPU seconds a ProcStat's times add up to (own, and reaped children's when `children`).
double CpuSeconds(const ProcStat& stat, bool children);

// nullopt when the process does not exist (or its stat line cannot be parsed).
std::optional<ProcStat> ReadProcStat(pid_t pid);

// The process has begun to end and cannot come back: its leader is exiting (PF_EXITING), or is a
// zombie, done itself while its other threads finish or until its parent reaps it. A process
// killed by a signal may spend seconds here: a core dump, or a GPU driver tearing down its
// context, all while its sockets may already be closed and its peers failing on them.
bool IsEnding(const ProcStat& stat);

// The signal an ending process was killed by (its exit_code), or nullopt: not ending, ending by
// exit(), or a kernel that does not show it.
std::optional<int> EndingSignal(const ProcStat& stat);

}  // namespace lockstep
