// A say over whether a collective runs on this rank: RecordingCommunicator asks it before each
// collective it passes on. The trainer's fault-injection hooks implement it (a rank that "skips"
// a sync, a hang that never returns); comm itself knows nothing of the trainer.
#pragma once

#include <cstdint>

#include "harness/comm/communicator.h"

namespace lockstep {

class CollectiveInterceptor {
 public:
  virtual ~CollectiveInterceptor() = default;
  // Called before the backend is entered, on the thread that issued the collective, with the
  // optimizer step it belongs to. false: skip it on this rank (the end status carries a note).
  // It may also never return (a hang injection).
  virtual bool BeforeCollective(const CollectiveFingerprint& fp, int64_t step) = 0;
};

}  // namespace lockstep
