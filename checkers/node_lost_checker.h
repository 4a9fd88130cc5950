// node_lost: a host of a multi-host launch that stopped answering while its ranks ran
// (LaunchEnding::kNodeLost: its agent silent or its connection gone, harness/launcher/
// host_group.h). One finding per lost host: "node lost: node1 (ranks 2, 3), last heard at step
// N", its ranks those of the host, its step the one after the last step they had all recorded.
// Distinct from a crash (a rank exited) and a hang (ranks alive, waiting): the survivors, which
// waited or failed because of it, are never named, and the steps every rank reached are still
// judged by the other checkers.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class NodeLostChecker : public Checker {
 public:
  std::string_view name() const override { return "node_lost"; }
  bool reads_tensors() const override { return false; }
  bool needs_launch() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
