#include "harness/trace/trace_record.h"

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

std::string CurrentTraceSchema() {
  return std::string(kTraceSchemaName) + "/" + std::to_string(kTraceSchemaMajor) + "." +
         std::to_string(kTraceSchemaMinor);
}

std::map<int64_t, const StepRecord*> StepsByNumber(const RankTrace& trace) {
  std::map<int64_t, const StepRecord*> steps;
  for (const StepRecord& s : trace.steps) steps[s.step] = &s;
  return steps;
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
