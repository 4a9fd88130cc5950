#include "harness/core/proc_stat.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace lockstep {

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may itself hold spaces and ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  ProcStat stat;
  stat.pid = pid;
  long long ppid = 0, pgrp = 0, cutime = 0, cstime = 0;
  unsigned long long flags = 0;
  std::string skip;
  rest >> stat.state >> ppid >> pgrp;
  // Fields 6..8 (session, tty_nr, tpgid), 9: flags, 10..13 (minflt .. cmajflt), 14..17 (utime,
  // stime, cutime, cstime; the children's may be negative in principle: signed), 18..21
  // (priority .. itrealvalue), 22: starttime.
  for (int field = 6; field <= 8; ++field) rest >> skip;
  rest >> flags;
  for (int field = 10; field <= 13; ++field) rest >> skip;
  rest >> stat.utime >> stat.stime >> cutime >> cstime;
  for (int field = 18; field <= 21; ++field) rest >> skip;
  rest >> stat.start_time;
  if (!rest) return std::nullopt;
  // Fields 23..51, then 52: exit_code (absent before Linux 3.5: left 0).
  for (int field = 23; field <= 51; ++field) rest >> skip;
  long long exit_code = 0;
  if (rest >> exit_code) stat.exit_code = static_cast<int>(exit_code);
  stat.flags = static_cast<uint32_t>(flags);
  stat.ppid = static_cast<pid_t>(ppid);
  stat.pgid = static_cast<pid_t>(pgrp);
  stat.cutime = cutime > 0 ? static_cast<uint64_t>(cutime) : 0;
  stat.cstime = cstime > 0 ? static_cast<uint64_t>(cstime) : 0;
  return stat;
}

bool IsEnding(const ProcStat& stat) {
  constexpr uint32_t kPfExiting = 0x00000004;  // include/linux/sched.h: "getting shut down"
  return stat.state == 'Z' || stat.state == 'X' || (stat.flags & kPfExiting) != 0;
}

std::optional<int> EndingSignal(const ProcStat& stat) {
  if (!IsEnding(stat)) return std::nullopt;
  const int sig = stat.exit_code & 0x7f;  // as WTERMSIG: the low 7 bits, 0 for a normal exit
  if (sig == 0 || sig == 0x7f) return std::nullopt;
  return sig;
}

double CpuSeconds(const ProcStat& stat, bool children) {
  static const double ticks_per_s = [] {
    const long t = ::sysconf(_SC_CLK_TCK);
    return t > 0 ? static_cast<double>(t) : 100.0;
  }();
  uint64_t ticks = stat.utime + stat.stime;
  if (children) ticks += stat.cutime + stat.cstime;
  return static_cast<double>(ticks) / ticks_per_s;
}

}  // namespace lockstep
