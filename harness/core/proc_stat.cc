#include "harness/core/proc_stat.h"

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
  long long ppid = 0, pgrp = 0;
  std::string skip;
  rest >> stat.state >> ppid >> pgrp;
  // Fields 6..21 (session .. itrealvalue), then 22: starttime.
  for (int field = 6; field <= 21; ++field) rest >> skip;
  rest >> stat.start_time;
  if (!rest) return std::nullopt;
  stat.ppid = static_cast<pid_t>(ppid);
  stat.pgid = static_cast<pid_t>(pgrp);
  return stat;
}

}  // namespace lockstep
