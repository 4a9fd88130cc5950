#include "harness/launcher/rank_cpu.h"

#include <algorithm>

#include "harness/core/proc_stat.h"
#include "harness/launcher/process_tree.h"

namespace lockstep {

std::optional<double> ProcessTreeCpuSeconds(pid_t pid) {
  const std::optional<ProcStat> self = ReadProcStat(pid);
  if (!self || self->state == 'Z') return std::nullopt;
  double cpu_s = CpuSeconds(*self, /*children=*/true);
  // A live descendant's time reaches its parent's only once the parent reaps it.
  for (pid_t child : FindDescendants({pid})) {
    if (const std::optional<ProcStat> c = ReadProcStat(child)) cpu_s += CpuSeconds(*c, /*children=*/false);
  }
  return cpu_s;
}

void RankCpu::Add(int rank, pid_t pid, Clock::time_point now, double cpu_s, double keep_s) {
  if (rank < 0 || static_cast<size_t>(rank) >= samples_.size()) return;
  History& h = samples_[static_cast<size_t>(rank)];
  if (h.pid != pid) {
    h.pid = pid;
    h.samples.clear();
  }
  h.samples.push_back({now, cpu_s});
  const Clock::time_point horizon = now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(keep_s));
  // Keep one sample at or before the horizon: the window's start.
  while (h.samples.size() > 2 && h.samples[1].at <= horizon) h.samples.pop_front();
}

std::optional<double> RankCpu::ShareOver(int rank, Clock::time_point now, double window_s) const {
  if (rank < 0 || static_cast<size_t>(rank) >= samples_.size() || window_s <= 0) return std::nullopt;
  const History& h = samples_[static_cast<size_t>(rank)];
  if (h.samples.size() < 2) return std::nullopt;
  const Clock::time_point start = now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(window_s));
  // The newest sample at or before the window's start.
  const Sample* from = nullptr;
  for (const Sample& s : h.samples) {
    if (s.at > start) break;
    from = &s;
  }
  if (from == nullptr) return std::nullopt;
  const Sample& to = h.samples.back();
  const double wall_s = std::chrono::duration<double>(to.at - from->at).count();
  if (wall_s <= 0) return std::nullopt;
  // A descendant that ended unreaped takes its time with it: never below zero.
  return std::max(0.0, to.cpu_s - from->cpu_s) / wall_s;
}

}  // namespace lockstep
