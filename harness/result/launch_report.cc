#include "harness/result/launch_report.h"

namespace lockstep {

const char* ToString(LaunchEnding ending) {
  switch (ending) {
    case LaunchEnding::kClean: return "clean";
    case LaunchEnding::kCrash: return "crash";
    case LaunchEnding::kHang: return "hang";
    case LaunchEnding::kStartupTimeout: return "startup_timeout";
    case LaunchEnding::kRankError: return "rank_error";
    case LaunchEnding::kTimeout: return "timeout";
    case LaunchEnding::kInterrupted: return "interrupted";
    case LaunchEnding::kLaunchFailed: return "launch_failed";
  }
  return "unknown";
}

}  // namespace lockstep
