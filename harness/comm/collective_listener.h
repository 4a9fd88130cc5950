// Observer of every collective a RecordingCommunicator passes on: the trace writer and the live
// checks implement it. Calls arrive on the thread that issued the collective, begin before the
// backend is entered and end after it returned, so a rank stuck inside a collective shows up as a
// begin without an end.
#pragma once

#include "harness/comm/communicator.h"
#include "harness/core/status.h"

namespace lockstep {

class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void OnCollectiveBegin(const CollectiveFingerprint& fp) = 0;
  // `status` is the backend's result. A collective that a CollectiveInterceptor skipped on this rank ends
  // with an ok status that carries a note (status.ok() && !status.message().empty()).
  virtual void OnCollectiveEnd(const CollectiveFingerprint& fp, const Status& status) = 0;
};

}  // namespace lockstep
