#include "harness/repro/tensor_compare.h"

#include <torch/torch.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>

#include "harness/capture/dtype_name.h"

namespace lockstep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

torch::Tensor FlatCpu(const torch::Tensor& t) { return t.detach().to(torch::kCPU).contiguous().reshape({-1}); }

bool SameLayout(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes();
}

// Floating types compare by their bits: the digests do, and value equality would hide -0.0 vs
// 0.0 and call two identical NaNs different.
torch::Tensor DiffMask(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.is_floating_point()) {
    switch (a.element_size()) {
      case 2: return a.view(torch::kInt16).ne(b.view(torch::kInt16));
      case 4: return a.view(torch::kInt32).ne(b.view(torch::kInt32));
      case 8: return a.view(torch::kInt64).ne(b.view(torch::kInt64));
      default: break;
    }
  }
  return a.ne(b);
}

bool BitsEqual(const torch::Tensor& a, const torch::Tensor& b) {
  return SameLayout(a, b) && !DiffMask(FlatCpu(a), FlatCpu(b)).any().item<bool>();
}

torch::Tensor AsWide(const torch::Tensor& t) { return t.to(t.is_complex() ? torch::kComplexDouble : torch::kDouble); }

std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) continue;
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

ElementValue ValueAt(int rank, const torch::Tensor& flat, int64_t i) {
  ElementValue v;
  v.rank = rank;
  torch::Tensor e = flat[i];
  if (flat.is_complex()) {
    const auto c = e.item<c10::complex<double>>();
    v.value = c.real();
    v.text = "(" + Format("%.17g", c.real()) + Format("%+.17g", c.imag()) + "j)";
  } else if (flat.scalar_type() == torch::kBool) {
    v.value = e.item<bool>() ? 1.0 : 0.0;
    v.text = e.item<bool>() ? "true" : "false";
  } else if (flat.is_floating_point()) {
    v.value = e.item<double>();
    const size_t size = flat.element_size();
    const torch::ScalarType bits_type = size == 2 ? torch::kInt16 : size == 4 ? torch::kInt32 : torch::kInt64;
    const uint64_t mask = size >= 8 ? ~uint64_t{0} : ((uint64_t{1} << (8 * size)) - 1);
    const uint64_t bits = static_cast<uint64_t>(flat.view(bits_type)[i].item<int64_t>()) & mask;
    char hex[32];
    std::snprintf(hex, sizeof hex, " (0x%0*" PRIx64 ")", static_cast<int>(2 * size), bits);
    // Enough digits to tell any two values of the type apart.
    v.text = Format(size >= 8 ? "%.17g" : "%.9g", v.value) + hex;
  } else {
    const int64_t n = e.item<int64_t>();
    v.value = static_cast<double>(n);
    v.text = std::to_string(n);
  }
  return v;
}

}  // namespace

TensorComparison CompareAcrossRanks(std::vector<RankCopy> copies, const CompareOptions& options) {
  TensorComparison c;
  std::sort(copies.begin(), copies.end(), [](const RankCopy& a, const RankCopy& b) { return a.rank < b.rank; });
  for (const auto& copy : copies) c.ranks.push_back(copy.rank);
  if (copies.empty()) {
    c.compared = false;
    c.not_compared_reason = "no rank saved it";
    return c;
  }

  // Groups of bitwise-equal copies, created in rank order.
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < copies.size(); ++i) {
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const std::vector<size_t>& grp) { return BitsEqual(copies[grp.front()].tensor, copies[i].tensor); });
    if (g == groups.end()) groups.push_back({i});
    else g->push_back(i);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (size_t i : groups.front()) c.reference_ranks.push_back(copies[i].rank);
  c.majority = groups.front().size() * 2 > copies.size();

  const RankCopy& ref_copy = copies[groups.front().front()];
  c.dtype = DtypeName(ref_copy.tensor.scalar_type());
  c.shape = ref_copy.tensor.sizes().vec();
  c.numel = ref_copy.tensor.numel();
  if (copies.size() == 1) {
    c.compared = false;
    c.not_compared_reason = "only rank " + std::to_string(ref_copy.rank) + " saved it";
    return c;
  }
  if (groups.size() == 1) return c;

  const torch::Tensor ref = FlatCpu(ref_copy.tensor);
  const torch::Tensor ref_wide = AsWide(ref);
  torch::Tensor any_diff = torch::zeros({ref.numel()}, torch::kBool);
  std::map<int, torch::Tensor> comparable;  // rank -> flat copy with the reference's layout
  comparable[ref_copy.rank] = ref;
  for (size_t g = 1; g < groups.size(); ++g) {
    for (size_t i : groups[g]) {
      RankDifference d;
      d.rank = copies[i].rank;
      const torch::Tensor& t = copies[i].tensor;
      if (!SameLayout(t, ref_copy.tensor)) {
        d.problem = DtypeName(t.scalar_type()) + " " + c10::str(t.sizes()) + " where rank " +
                    std::to_string(ref_copy.rank) + " has " + c.dtype + " " + c10::str(ref_copy.tensor.sizes());
        c.differing_ranks.push_back(d);
        continue;
      }
      const torch::Tensor x = FlatCpu(t);
      comparable[d.rank] = x;
      const torch::Tensor mask = DiffMask(x, ref);
      any_diff.logical_or_(mask);
      d.differing_elements = mask.sum().item<int64_t>();
      torch::Tensor abs = (AsWide(x) - ref_wide).abs().masked_select(mask);
      torch::Tensor ref_abs = ref_wide.abs().masked_select(mask);
      // NaN against a number has no distance: call it infinite. 0/0 (-0.0 vs 0.0) is no change.
      abs = torch::where(abs.isnan(), torch::full_like(abs, kInf), abs);
      torch::Tensor rel = abs / ref_abs;
      rel = torch::where(rel.isnan(), torch::where(abs.eq(0), torch::zeros_like(rel), torch::full_like(rel, kInf)), rel);
      if (abs.numel() > 0) {
        d.max_abs_diff = abs.max().item<double>();
        d.max_rel_diff = rel.max().item<double>();
      }
      c.max_abs_diff = std::max(c.max_abs_diff, d.max_abs_diff);
      c.max_rel_diff = std::max(c.max_rel_diff, d.max_rel_diff);
      c.differing_ranks.push_back(d);
    }
  }
  for (size_t i : groups.front()) comparable[copies[i].rank] = FlatCpu(copies[i].tensor);
  std::sort(c.differing_ranks.begin(), c.differing_ranks.end(),
            [](const RankDifference& a, const RankDifference& b) { return a.rank < b.rank; });

  c.differing_elements = any_diff.sum().item<int64_t>();
  if (options.max_indices > 0 && c.differing_elements > 0) {
    const torch::Tensor where = any_diff.nonzero().reshape({-1}).slice(0, 0, options.max_indices);
    const auto* idx = where.data_ptr<int64_t>();
    for (int64_t k = 0; k < where.numel(); ++k) {
      ElementDifference e;
      e.flat_index = idx[k];
      e.index = Unravel(e.flat_index, c.shape);
      for (const auto& [rank, flat] : comparable) e.values.push_back(ValueAt(rank, flat, e.flat_index));
      c.first_differences.push_back(std::move(e));
    }
  }
  return c;
}

int TensorDumpComparison::DifferingCount() const {
  return static_cast<int>(std::count_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.Differs(); }));
}

TensorDumpComparison CompareTensorDump(const TensorDumpContents& dump, const CompareOptions& options) {
  TensorDumpComparison out;
  out.dir = dump.dir;
  out.step = dump.step;
  for (const auto& r : dump.ranks) out.ranks.push_back(r.rank);

  struct Entry {
    std::string kind, name;
    std::vector<RankCopy> copies;
    bool replicated = true;
  };
  std::vector<Entry> entries;
  std::map<std::string, size_t> by_key;
  for (const auto& r : dump.ranks) {
    for (const auto& t : r.tensors) {
      const std::string key = t.kind + ":" + t.name;
      auto [it, added] = by_key.emplace(key, entries.size());
      if (added) entries.push_back(Entry{t.kind, t.name, {}, true});
      Entry& e = entries[it->second];
      e.copies.push_back(RankCopy{r.rank, t.tensor});
      e.replicated = e.replicated && t.replicated;
    }
  }

  for (Entry& e : entries) {
    std::vector<int> missing;
    for (int rank : out.ranks) {
      if (std::none_of(e.copies.begin(), e.copies.end(), [rank](const RankCopy& c) { return c.rank == rank; })) {
        missing.push_back(rank);
      }
    }
    TensorComparison c;
    if (e.replicated) {
      c = CompareAcrossRanks(e.copies, options);
    } else {
      // Only the layout, for the listing: the values are each rank's own by design.
      for (const auto& copy : e.copies) c.ranks.push_back(copy.rank);
      c.dtype = DtypeName(e.copies.front().tensor.scalar_type());
      c.shape = e.copies.front().tensor.sizes().vec();
      c.numel = e.copies.front().tensor.numel();
      c.compared = false;
      c.not_compared_reason = "not replicated: each rank holds its own shard";
    }
    c.kind = e.kind;
    c.name = e.name;
    c.missing_ranks = std::move(missing);
    if (!c.missing_ranks.empty() && !c.compared && e.replicated) {
      // A replicated tensor that only one rank saved is still a difference between the ranks.
      c.compared = true;
      c.not_compared_reason.clear();
    }
    out.tensors.push_back(std::move(c));
  }
  return out;
}

}  // namespace lockstep
