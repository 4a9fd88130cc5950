// The ranks' lifeline to the `lockstep run` that started them. However the harness dies (SIGKILL
// included, when nothing of it runs any more), its ranks must not live on: mpirun does not stop
// its ranks when it is itself killed, and a hung rank would block forever. The launcher puts the
// harness's pid and start time in every started process's environment; each rank watches that
// process from a thread of its own and kills itself within a second of the harness being gone.
// A pid cannot fool it: a reused pid has another start time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace lockstep {

// "<pid>:<start time in clock ticks after boot>@<host>" of the process that launched the ranks.
inline constexpr const char* kLifelineEnv = "LOCKSTEP_HARNESS_LIFELINE";

// The value of kLifelineEnv for this process.
std::string LifelineOfThisProcess();

// Whether the process a lifeline value names is still running (not a zombie, same start time).
// An unreadable value counts as alive: nothing to watch.
bool LifelineAlive(const std::string& lifeline);

// The start time of `pid` (field 22 of /proc/<pid>/stat), nullopt when it does not exist.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// Starts the watch thread when kLifelineEnv is set and names a process on this host (a rank
// under srun on another node has no such process to see). Idempotent. When the harness is gone,
// the process SIGKILLs itself: nobody is left to read what it would write.
void WatchLifeline();

}  // namespace lockstep
