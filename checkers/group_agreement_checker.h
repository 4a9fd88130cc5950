// group_agreement: the process groups each rank made, in the order it made them, compared across
// ranks. torch.distributed wants every rank of the world to enter each call that makes groups
// (new_group, new_subgroups, split_group, a DeviceMesh), members or not, in the same order and
// with the same arguments: a group's rendezvous in the store is named by how many groups the rank
// made before it, so a rank that makes only the group it belongs to shares that name with a
// different group on another rank. The ranks then meet in groups they did not ask for: a
// collective sums over the wrong ranks without an error, or a connection fails (the motivating
// bugs: pytorch/pytorch#130102, #25390, #38375, examples/real_bugs/new_group_own_ranks_only.py).
//
// Reads the discovery records the probe writes for those calls (torch.new_group,
// torch.new_subgroups, torch.init_device_mesh), each with what it asked for in `comm` ("group[0,3]",
// "mesh[[0,1],[2,3]] dims=dp,tp"); a group made with use_local_synchronization ("... local") is
// made by its members only, and left out. One finding, at the first group that differs: the
// ranks grouped by what they asked for there, the odd ones named by majority (all of them
// without one). Where every rank agrees as far as each went, a rank that ended cleanly having
// made fewer groups than another never made the others' next one: that is the finding. A rank
// that died or was stopped says nothing of the groups it would have made.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class GroupAgreementChecker : public Checker {
 public:
  std::string_view name() const override { return "group_agreement"; }
  bool reads_tensors() const override { return false; }
  bool judges_start_up() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
