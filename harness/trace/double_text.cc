#include "harness/trace/double_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <nlohmann/json.hpp>

namespace lockstep {
namespace {

constexpr double kMicro = 1e6;
// |k| below 10^15: k is exact as a double, and k / 10^6 has at most 15 significant digits.
constexpr double kLimit = 1e9;

bool SameBits(double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

}  // namespace

char* WriteDoubleText(double v, char* out) {
  if (std::fabs(v) < kLimit) {
    const double scaled = std::nearbyint(v * kMicro);
    // Division is correctly rounded, as is reading the decimal back: both give the double nearest
    // to k / 10^6, so the text is exact exactly when this holds. -0.0 keeps its sign through both
    // steps but has no integer k: it is written below ("-0.0").
    if (SameBits(scaled / kMicro, v) && !(v == 0 && std::signbit(v))) {
      int64_t k = static_cast<int64_t>(scaled);
      if (k < 0) {
        *out++ = '-';
        k = -k;
      }
      out = std::to_chars(out, out + 16, k / 1000000).ptr;
      int64_t fraction = k % 1000000;
      if (fraction != 0) {
        char digits[6];
        for (int i = 5; i >= 0; --i) {
          digits[i] = static_cast<char>('0' + fraction % 10);
          fraction /= 10;
        }
        int n = 6;
        while (digits[n - 1] == '0') --n;
        *out++ = '.';
        std::memcpy(out, digits, static_cast<size_t>(n));
        out += n;
      }
      return out;
    }
  }
  // nlohmann's own formatting, what json::dump() writes for a double (Grisu2: exact, and the shortest
  // form but in rare cases): its code and table are a fraction of std::to_chars' Ryu, which ran
  // cold after every training step (docs/PERFORMANCE.md).
  return nlohmann::detail::to_chars(out, out + kDoubleTextMax, v);
}

}  // namespace lockstep
