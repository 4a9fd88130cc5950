// Whether ranks that stopped recording are waiting on each other (a hang) or busy in a phase
// without collectives (an evaluation, a checkpoint, data loading): the launcher's rule, a pure
// function of what each rank is doing, so that it is tested without processes or clocks.
//
// After `hang_timeout_s` without trace progress it is a hang when no unfinished rank works
// outside a collective: each is inside a collective (waiting for a peer that has not reached it,
// or in one that never completes) or neither records nor uses CPU. While some rank outside a
// collective uses CPU (or cannot be seen: it runs on another host), the ranks are in a quiet
// phase, which is a hang only after `quiet_timeout_s`.
#pragma once

#include <optional>
#include <vector>

namespace lockstep {

// Below this share of one core over the window, a rank outside any collective is idle: a
// process blocked on a lock, a queue or a peer uses next to nothing; one that computes on a
// machine loaded twenty times over still gets more.
inline constexpr double kBusyCpuShare = 0.05;

struct RankActivity {
  bool finished = false;       // wrote its trace footer
  bool in_collective = false;  // its last collective began and did not end
  std::optional<double> cpu_share;  // over the last hang_timeout_s; nullopt: cannot be seen
};

enum class StallKind {
  kNone,           // not (yet) a hang
  kWaiting,        // the ranks wait on each other (or on nothing that moves)
  kQuietTooLong,   // a phase without collectives outlasted quiet_timeout_s
};

struct StallVerdict {
  StallKind kind = StallKind::kNone;
  std::vector<int> waiting;  // unfinished ranks inside a collective
  std::vector<int> idle;     // unfinished ranks outside any collective, using no CPU
  std::vector<int> working;  // unfinished ranks outside any collective, using CPU
  std::vector<int> unseen;   // unfinished ranks outside any collective whose CPU cannot be seen
};

// The ranks that may still be working, in increasing order: those using CPU outside any
// collective and those whose CPU cannot be seen (what a quiet phase is waiting for).
std::vector<int> BusyRanks(const StallVerdict& v);

// `quiet_for_s`: seconds since the last trace progress of any rank (or the end of start-up).
// A timeout <= 0 is off.
StallVerdict JudgeStall(const std::vector<RankActivity>& ranks, double quiet_for_s, double hang_timeout_s,
                        double quiet_timeout_s);

}  // namespace lockstep
