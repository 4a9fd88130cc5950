#include "harness/result/launch_report.h"

namespace lockstep {

template <>
const NameTable<LaunchEnding>& NamesOf<LaunchEnding>() {
  static const NameTable<LaunchEnding> kTable = {
      {"clean", LaunchEnding::kClean},
      {"crash", LaunchEnding::kCrash},
      {"hang", LaunchEnding::kHang},
      {"startup_timeout", LaunchEnding::kStartupTimeout},
      {"rank_error", LaunchEnding::kRankError},
      {"timeout", LaunchEnding::kTimeout},
      {"interrupted", LaunchEnding::kInterrupted},
      {"launch_failed", LaunchEnding::kLaunchFailed},
      {"node_lost", LaunchEnding::kNodeLost},
  };
  return kTable;
}

const char* ToString(LaunchEnding ending) { return NameOf(ending); }

}  // namespace lockstep
