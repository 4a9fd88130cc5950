#include "harness/runner/rank_launcher.h"

namespace lockstep {
namespace {

class RealLauncher : public RankLauncher {
 public:
  Result<LaunchReport> Launch(const LaunchSpec& spec, const ProgressCallback& on_progress) override {
    return lockstep::Launch(spec, on_progress);
  }
};

}  // namespace

RankLauncher& ProcessLauncher() {
  static RealLauncher launcher;
  return launcher;
}

}  // namespace lockstep
