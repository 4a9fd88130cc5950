#include "harness/trace/trace_record.h"

#include <set>
#include <utility>

namespace lockstep {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Digest128::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = kDigits[(high >> (4 * i)) & 0xf];
    s[31 - i] = kDigits[(low >> (4 * i)) & 0xf];
  }
  return s;
}

std::optional<Digest128> Digest128::FromHex(const std::string& hex) {
  if (hex.size() != 32) return std::nullopt;
  Digest128 d;
  for (int i = 0; i < 32; ++i) {
    const int v = HexValue(hex[i]);
    if (v < 0) return std::nullopt;
    uint64_t& half = i < 16 ? d.high : d.low;
    half = (half << 4) | static_cast<uint64_t>(v);
  }
  return d;
}

std::string DescribeReplicaGroup(const ReplicaGroup& group) {
  std::string s = "{";
  for (size_t i = 0; i < group.ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(group.ranks[i]);
  s += "}";
  if (!group.label.empty()) s += " on " + group.label;
  return s;
}

bool SameReplicaGroup(const std::shared_ptr<const ReplicaGroup>& a, const std::shared_ptr<const ReplicaGroup>& b) {
  if (a == b) return true;
  return a != nullptr && b != nullptr && *a == *b;
}

std::string CurrentTraceSchema() {
  return std::string(kTraceSchemaName) + "/" + std::to_string(kTraceSchemaMajor) + "." +
         std::to_string(kTraceSchemaMinor);
}

std::map<int64_t, const StepRecord*> StepsByNumber(const RankTrace& trace) {
  std::map<int64_t, const StepRecord*> steps;
  for (const StepRecord& s : trace.steps) steps[s.step] = &s;
  return steps;
}

void ForEachStepAcrossRanks(const std::vector<const RankTrace*>& ranks,
                            const std::function<void(int64_t, const std::vector<const StepRecord*>&)>& visit) {
  std::vector<std::map<int64_t, const StepRecord*>> by_step;
  std::set<int64_t> steps;
  for (const RankTrace* t : ranks) {
    by_step.push_back(t ? StepsByNumber(*t) : std::map<int64_t, const StepRecord*>{});
    for (const auto& [step, record] : by_step.back()) steps.insert(step);
  }
  std::vector<const StepRecord*> records(ranks.size());
  for (int64_t step : steps) {
    for (size_t r = 0; r < ranks.size(); ++r) {
      auto it = by_step[r].find(step);
      records[r] = it == by_step[r].end() ? nullptr : it->second;
    }
    visit(step, records);
  }
}

template <>
const NameTable<TensorKind>& NamesOf<TensorKind>() {
  static const NameTable<TensorKind> kTable = {
      {"param", TensorKind::kParam},
      {"grad", TensorKind::kGrad},
      {"buffer", TensorKind::kBuffer},
      {"optimizer_state", TensorKind::kOptimizerState},
  };
  return kTable;
}

const char* ToString(TensorKind kind) { return NameOf(kind); }

}  // namespace lockstep
