// How the runner starts a launch: the real launcher (processes, watchdog) or, in tests, a fake
// that writes canned traces and returns a canned LaunchReport, so that ScenarioRunner is
// unit-tested without starting anything.
#pragma once

#include "harness/launcher/launcher.h"

namespace lockstep {

class RankLauncher {
 public:
  virtual ~RankLauncher() = default;
  virtual Result<LaunchReport> Launch(const LaunchSpec& spec, const ProgressCallback& on_progress) = 0;
};

// lockstep::Launch: the processes of harness/launcher/.
RankLauncher& ProcessLauncher();

}  // namespace lockstep
