#include "harness/rank/step_table.h"

#include <cstring>
#include <string>

#include "harness/trace/digest.h"

namespace lockstep {
namespace {

int64_t RowKey(const TensorRecord& t) {
  const std::string key = std::string(ToString(t.kind)) + ":" + t.name;
  return static_cast<int64_t>(DigestChunk(key.data(), key.size()).low);
}

int64_t Bits(double x) {
  int64_t out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

double FromBits(int64_t bits) {
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace

int64_t StepTableRows(const StepRecord& record) {
  int64_t n = 0;
  for (const TensorRecord& t : record.tensors) n += t.replicated ? 1 : 0;
  return n;
}

std::vector<int64_t> PackStepTable(const StepRecord& record) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(StepTableRows(record) * kStepTableColumns));
  for (const TensorRecord& t : record.tensors) {
    if (!t.replicated) continue;
    out.push_back(static_cast<int64_t>(t.digest.high));
    out.push_back(static_cast<int64_t>(t.digest.low));
    out.push_back(Bits(t.norm));
    out.push_back(RowKey(t));
  }
  return out;
}

Result<std::vector<StepRecord>> UnpackStepTables(const StepRecord& mine, const std::vector<int64_t>& all, int world) {
  const int64_t rows = StepTableRows(mine);
  if (world < 1 || static_cast<int64_t>(all.size()) != rows * kStepTableColumns * world) {
    return InternalError("in-band tables: " + std::to_string(all.size()) + " values for " + std::to_string(world) +
                         " ranks of " + std::to_string(rows) + " rows");
  }
  std::vector<StepRecord> out(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    StepRecord& s = out[static_cast<size_t>(r)];
    s.step = mine.step;
    s.loss = mine.loss;
    const int64_t* row = all.data() + static_cast<size_t>(r) * static_cast<size_t>(rows * kStepTableColumns);
    int64_t i = 0;
    for (const TensorRecord& t : mine.tensors) {
      if (!t.replicated) continue;
      const int64_t* v = row + i * kStepTableColumns;
      if (v[3] != RowKey(t)) {
        return InternalError("in-band tables: rank " + std::to_string(r) + " has another tensor than " +
                             ToString(t.kind) + ":" + t.name + " at row " + std::to_string(i) +
                             " (the ranks visit different tensors, or in another order)");
      }
      TensorRecord copy = t;
      copy.digest = Digest128{static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1])};
      copy.norm = FromBits(v[2]);
      s.tensors.push_back(std::move(copy));
      ++i;
    }
  }
  return out;
}

}  // namespace lockstep
