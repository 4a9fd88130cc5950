// Saving a rank's tensors at one step, for `lockstep repro` and `lockstep-tensors compare`.
//
// Layout (docs/CLI.md): DIR/rank-<r>/<kind>__<name>.pt, one file per selected tensor, written
// with torch::pickle_save (the zip format of torch.save, so Python's torch.load reads it), and
// DIR/rank-<r>/index.json (schema lockstep.tensor_dump/1) listing file, name, kind, dtype, shape.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

inline constexpr const char* kTensorDumpSchema = "lockstep.tensor_dump/1";
inline constexpr const char* kTensorDumpIndexFile = "index.json";

struct TensorDumpRequest {
  // Globs (fnmatch) matched against "<kind>:<name>" and against the bare name; kind as in the
  // trace: param, grad, buffer, optimizer_state. Empty: dump nothing.
  std::vector<std::string> patterns;
  std::filesystem::path dir;  // rank r writes DIR/rank-<r>/
};

// (name, kind, tensor, replicated), as Trainer::VisitState passes them.
using DumpTensorVisitor = std::function<void(const std::string&, TensorKind, const torch::Tensor&, bool)>;
// Calls the visitor once per tracked tensor (the rank program passes Trainer::VisitState).
using DumpStateSource = std::function<void(const DumpTensorVisitor&)>;

struct DumpTensor {
  std::string name;
  TensorKind kind = TensorKind::kParam;
  torch::Tensor tensor;
  bool replicated = true;
};

bool DumpSelects(const std::vector<std::string>& patterns, const std::string& name, TensorKind kind);

// "param__blocks.0.linear.weight.pt"; '/' and characters that are unsafe in file names become '_'
// (index.json keeps the real name).
std::string DumpFileName(TensorKind kind, const std::string& name);

std::filesystem::path RankDumpDir(const std::filesystem::path& dir, int rank);

// Writes the tensors (as CPU copies) and the index of one rank; replaces an earlier dump of it.
Status WriteTensorDump(const std::filesystem::path& dir, int rank, int64_t step, const std::vector<DumpTensor>& tensors);

// Selects from `state` what `request` names and writes it. A request that selects nothing is an
// InvalidArgument error naming a few of the tensors there are, so a typo does not pass silently.
Status DumpTensors(const TensorDumpRequest& request, const DumpStateSource& state, int rank, int64_t step);

}  // namespace lockstep
