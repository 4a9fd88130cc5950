// One line of /proc/<pid>/stat, read in one place: the lifeline (is the harness still there?)
// and the launcher's process tree (whose children are these?) both need it.
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
  uint64_t start_time = 0;  // clock ticks after boot: tells a reused pid from the original
};

// nullopt when the process does not exist (or its stat line cannot be parsed).
std::optional<ProcStat> ReadProcStat(pid_t pid);

}  // namespace lockstep
