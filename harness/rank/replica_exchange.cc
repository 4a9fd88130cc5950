#include "harness/rank/replica_exchange.h"

#include <torch/torch.h>

#include <string>

#include "checkers/in_band_comparison.h"
#include "harness/rank/step_recorder.h"
#include "harness/rank/step_table.h"

namespace lockstep {
namespace {

// All-gathers `mine` (the same length on every rank), rank 0's values first.
Result<std::vector<int64_t>> AllGatherInt64(Communicator& world, const torch::Device& device,
                                            const std::vector<int64_t>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  torch::Tensor send = torch::empty({n}, torch::kInt64);
  if (n > 0) std::copy(mine.begin(), mine.end(), send.data_ptr<int64_t>());
  send = send.to(device);
  torch::Tensor all = torch::empty({n * world.size()}, torch::TensorOptions(torch::kInt64).device(device));
  LOCKSTEP_RETURN_IF_ERROR(world.AllGather(send, all));
  all = all.cpu().contiguous();
  const int64_t* p = all.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + all.numel());
}

}  // namespace

Result<std::vector<Finding>> CompareStepInBand(Communicator& world, const torch::Device& device,
                                               const Scenario& scenario, const StepRecord& record) {
  const int ranks = world.size();
  const Digest128 d = StepDigest(record);
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> digests,
                            AllGatherInt64(world, device, {static_cast<int64_t>(d.high), static_cast<int64_t>(d.low)}));
  bool differ = false;
  for (int r = 1; r < ranks; ++r) differ = differ || digests[2 * r] != digests[0] || digests[2 * r + 1] != digests[1];
  if (!differ) return std::vector<Finding>{};

  const std::string step = std::to_string(record.step);
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> rows, AllGatherInt64(world, device, {StepTableRows(record)}));
  for (int r = 1; r < ranks; ++r) {
    if (rows[r] != rows[0]) {
      return InternalError("in-band comparison at step " + step + ": rank " + std::to_string(r) + " has " +
                           std::to_string(rows[r]) + " replicated tensors, rank 0 has " + std::to_string(rows[0]) +
                           " (the ranks do not record the same tensors)");
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> tables, AllGatherInt64(world, device, PackStepTable(record)));
  Result<std::vector<StepRecord>> by_rank = UnpackStepTables(record, tables, ranks);
  if (!by_rank.ok()) return by_rank.status().WithContext("in-band comparison at step " + step);
  std::vector<Finding> findings = JudgeStepInBand(scenario, *by_rank);
  if (findings.empty()) {
    return InternalError("in-band comparison at step " + step +
                         ": the step digests differ but no replicated tensor does (the step digest and the "
                         "per-tensor tables disagree)");
  }
  return findings;
}

}  // namespace lockstep
