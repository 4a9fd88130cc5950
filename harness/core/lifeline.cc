#include "harness/core/lifeline.h"

#include "harness/core/proc_stat.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace lockstep {
namespace {

// How often a rank looks: often enough that nothing outlives the harness by more than a second,
// rarely enough to cost nothing.
constexpr auto kWatchInterval = std::chrono::milliseconds(250);

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

struct Lifeline {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string host;
};

// "<pid>:<start>@<host>"
std::optional<Lifeline> ParseLifeline(const std::string& value) {
  const auto colon = value.find(':');
  const auto at = value.find('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon) return std::nullopt;
  char* end = nullptr;
  const long long pid = std::strtoll(value.c_str(), &end, 10);
  if (end != value.c_str() + colon || pid <= 0) return std::nullopt;
  const unsigned long long start = std::strtoull(value.c_str() + colon + 1, &end, 10);
  if (end != value.c_str() + at) return std::nullopt;
  return Lifeline{static_cast<pid_t>(pid), static_cast<uint64_t>(start), value.substr(at + 1)};
}

}  // namespace

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  std::optional<ProcStat> stat = ReadProcStat(pid);
  if (!stat) return std::nullopt;
  return stat->start_time;
}

std::string LifelineOfThisProcess() {
  const pid_t self = ::getpid();
  return std::to_string(self) + ":" + std::to_string(ProcessStartTime(self).value_or(0)) + "@" + HostName();
}

bool LifelineAlive(const std::string& lifeline) {
  auto parsed = ParseLifeline(lifeline);
  if (!parsed) return true;
  std::optional<ProcStat> stat = ReadProcStat(parsed->pid);
  return stat && stat->state != 'Z' && stat->state != 'X' && stat->start_time == parsed->start_time;
}

void WatchLifeline() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* value = std::getenv(kLifelineEnv);
    if (value == nullptr || !ParseLifeline(value)) return;
    const std::string lifeline = value;
    // On another host (srun) the pid means nothing here.
    if (ParseLifeline(lifeline)->host != HostName()) return;
    std::thread([lifeline] {
      while (LifelineAlive(lifeline)) std::this_thread::sleep_for(kWatchInterval);
      ::kill(::getpid(), SIGKILL);
    }).detach();
  });
}

}  // namespace lockstep
