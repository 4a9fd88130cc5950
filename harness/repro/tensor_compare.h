// Element-wise comparison of one tensor's copies across ranks, and of a whole tensor dump: the
// summary `lockstep repro` prints. The trace says *that* ranks disagree (digests); this says
// where and by how much.
//
// Copies are grouped by bitwise equality (so -0.0 vs 0.0 and NaN payloads count, as they do in
// the digests); the largest group is the reference, ties going to the group of the lowest rank,
// as the replica checkers decide. Every other rank is compared element by element against the
// reference group's lowest rank.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/repro/tensor_dump_reader.h"

namespace lockstep {

struct RankCopy {
  int rank = 0;
  torch::Tensor tensor;
};

struct ElementValue {
  int rank = 0;
  double value = 0.0;  // as float64 (complex: the real part); `text` is exact
  std::string text;    // "0.123456791 (0x3dfcd6ea)": value, and the bits for floating types
};

struct ElementDifference {
  int64_t flat_index = 0;           // row-major
  std::vector<int64_t> index;       // per dimension
  std::vector<ElementValue> values; // every rank whose copy has the reference's dtype and shape
};

struct RankDifference {
  int rank = 0;
  int64_t differing_elements = 0;
  double max_abs_diff = 0.0;  // |x - ref|; +inf where one side is NaN
  double max_rel_diff = 0.0;  // |x - ref| / |ref|; +inf where ref is 0 and x is not
  std::string problem;        // set when the copy cannot be compared (another dtype or shape)
};

struct TensorComparison {
  std::string kind;  // param, grad, buffer, optimizer_state ("" when not from a dump)
  std::string name;
  std::string dtype;            // the reference copy's
  std::vector<int64_t> shape;   // the reference copy's
  int64_t numel = 0;
  std::vector<int> ranks;          // ranks holding a copy, ascending
  std::vector<int> missing_ranks;  // ranks of the dump without a copy
  bool compared = true;            // false: not replicated, or a single copy
  std::string not_compared_reason;
  std::vector<int> reference_ranks;
  bool majority = false;                       // the reference group is more than half
  std::vector<RankDifference> differing_ranks; // ascending rank; empty when all are identical
  int64_t differing_elements = 0;              // elements where at least one rank differs
  double max_abs_diff = 0.0;
  double max_rel_diff = 0.0;
  std::vector<ElementDifference> first_differences;

  std::string Key() const { return kind.empty() ? name : kind + ":" + name; }
  bool Differs() const { return compared && (!differing_ranks.empty() || !missing_ranks.empty()); }
};

struct CompareOptions {
  int max_indices = 5;  // how many differing elements to show, in row-major order
};

// Compares the copies (at least one; any order of ranks). Leaves kind, name and missing_ranks to
// the caller.
TensorComparison CompareAcrossRanks(std::vector<RankCopy> copies, const CompareOptions& options = {});

struct TensorDumpComparison {
  std::filesystem::path dir;
  int64_t step = 0;
  std::vector<int> ranks;
  std::vector<TensorComparison> tensors;  // in the order ranks listed them, lowest rank first
  int DifferingCount() const;
};

// Every tensor of the dump across the ranks that saved it. A replicated tensor that some rank did
// not save differs; one that is not replicated (a ZeRO-1 shard) is listed but not compared.
TensorDumpComparison CompareTensorDump(const TensorDumpContents& dump, const CompareOptions& options = {});

}  // namespace lockstep
