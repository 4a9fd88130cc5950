// Reads back what `lockstep-rank --dump-tensors` wrote (layout in harness/rank/tensor_dump.h):
// every rank's index.json and the tensors it lists, loaded with torch::pickle_load.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

struct LoadedTensor {
  std::string file;  // relative to the rank's folder
  std::string name;
  std::string kind;  // param, grad, buffer, optimizer_state
  std::string dtype;
  std::vector<int64_t> shape;
  bool replicated = true;
  torch::Tensor tensor;
};

struct RankTensors {
  int rank = 0;
  std::vector<LoadedTensor> tensors;  // in index order
};

struct TensorDumpContents {
  std::filesystem::path dir;
  int64_t step = 0;                // the same on every rank, or reading fails
  std::vector<RankTensors> ranks;  // ascending rank
};

// A saved tensor larger than this is refused before it is read (the harness's models are small).
inline constexpr std::uintmax_t kMaxTensorFileBytes = std::uintmax_t{1} << 30;

// Every DIR/rank-<r>/ folder. Errors (InvalidArgument or NotFound) name the file at fault: no
// rank folders, a missing or malformed index, another schema major version, a tensor file that
// does not load or does not match its index entry, ranks that saved different steps.
Result<TensorDumpContents> ReadTensorDump(const std::filesystem::path& dir);

}  // namespace lockstep
