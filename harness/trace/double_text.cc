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

using u128 = unsigned __int128;

// 10^i for i = 0..20 (10^20 is past 64 bits).
constexpr u128 Pow10(int i) {
  u128 p = 1;
  for (int k = 0; k < i; ++k) p *= 10;
  return p;
}
constexpr u128 kPow10[21] = {Pow10(0),  Pow10(1),  Pow10(2),  Pow10(3),  Pow10(4),  Pow10(5),  Pow10(6),
                             Pow10(7),  Pow10(8),  Pow10(9),  Pow10(10), Pow10(11), Pow10(12), Pow10(13),
                             Pow10(14), Pow10(15), Pow10(16), Pow10(17), Pow10(18), Pow10(19), Pow10(20)};

// The shortest decimal that reads back as v, for 1e-4 <= v < 1e15 (positive), in the layout
// nlohmann::json writes (plain digits with a point, never an exponent in this range); nullptr
// where v is outside it. Exact integer arithmetic in 128 bits and a table of 336 bytes, where
// nlohmann's Grisu2 and layout are 4 KB of code and a table of 1.2 KB (WriteDoubleText, with the
// whole-microsecond path and this inlined, is 2.9 KB, 2026-11-30). A loss and a
// gradient norm are written after every training step, when whatever code writes them is out of
// the caches (issue 47): 2.9-3.7 thousand cycles less a record (2026-11-30).
//
// v = m 2^-s exactly. X = m 10^k, with k chosen so that v 10^k = X / 2^s has 17 digits before the
// point. The L-digit candidate C (a multiple of 10^(17-L)) is X / 2^s rounded to L digits, and it
// reads back as v when it lies strictly inside v's rounding interval: |C - v 10^k| < half the gap
// to v's neighbours, times 10^k. 17 digits always do; fewer do down to some L and never below (a
// rounding to fewer digits is never closer), so the first L that fails ends the search. The gap
// below a power of two is half the gap above, but in this range every power of two is a decimal
// of at most 15 digits, written exactly before any candidate could fall into the difference.
char* WriteShortestInRange(double v, char* out) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int biased = static_cast<int>(bits >> 52) & 0x7ff;
  const uint64_t m = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  const int s = 1075 - biased;  // v = m 2^-s
  if (!(v >= 1e-4 && v < 1e15) || s < 1 || s > 66) return nullptr;
  // floor(log10 v) is floor(e2 log10 2) or one more, where 2^e2 <= v (78913 / 2^18 ~ log10 2).
  const int e2 = biased - 1023;
  int k = 16 - ((e2 * 78913) >> 18);
  if (k > 20) k = 20;
  u128 x = static_cast<u128>(m) * kPow10[k];
  if ((x >> s) >= kPow10[17]) {
    --k;
    x = static_cast<u128>(m) * kPow10[k];
  }
  if (k < 0 || (x >> s) >= kPow10[17] || (x >> s) < kPow10[16]) return nullptr;
  const uint64_t whole = static_cast<uint64_t>(x >> s);     // floor(v 10^k)
  const u128 below = x & ((u128{1} << s) - 1);              // the rest, in units of 2^-s
  uint64_t best = 0;
  int best_drop = -1;  // digits dropped from 17 by the best candidate
  uint64_t kept = whole;  // floor(whole / unit), one digit fewer each round: a division by the
  uint64_t unit = 1;      // constant 10 is a multiplication, where one by `unit` was a divide
  for (int drop = 0; drop <= 16; ++drop, kept /= 10, unit *= 10) {
    uint64_t q = kept;
    // Round to nearest, ties to even, on the exact remainder (whole % unit + below / 2^s) / unit.
    const u128 twice_rest = ((static_cast<u128>(whole - kept * unit) << s) + below) << 1;
    const u128 half_point = static_cast<u128>(unit) << s;
    if (twice_rest > half_point || (twice_rest == half_point && (q & 1))) ++q;
    const u128 c = static_cast<u128>(q) * unit;  // the candidate times 10^k
    // Inside the interval: |c - x / 2^s| < 10^k 2^-s / 2, that is |c 2^(s+1) - 2x| < 10^k.
    const u128 scaled_c = c << (s + 1), scaled_x = x << 1;
    const u128 distance = scaled_c > scaled_x ? scaled_c - scaled_x : scaled_x - scaled_c;
    if (!(distance < kPow10[k])) break;
    best = q;
    best_drop = drop;
  }
  if (best_drop < 0) return nullptr;
  // best 10^(best_drop - k) is the value: its digits, then the point where it goes.
  char digits[20];
  const char* end = std::to_chars(digits, digits + sizeof digits, best).ptr;
  int len = static_cast<int>(end - digits);
  int exponent = best_drop - k;  // of the last digit
  while (len > 1 && digits[len - 1] == '0') {  // a rounding up to a power of ten (9.99.. to 10)
    --len;
    ++exponent;
  }
  const int point = len + exponent;  // digits before the point
  if (point > 15 || point <= -4) return nullptr;
  // Byte loops, not memcpy of a variable length: each of those was inlined as a ladder of moves, a
  // kilobyte of code that has to be fetched cold.
  if (point <= 0) {  // "0.00012345"
    *out++ = '0';
    *out++ = '.';
    for (int i = point; i < 0; ++i) *out++ = '0';
  }
  for (int i = 0; i < len; ++i) {
    if (i == point && point > 0) *out++ = '.';  // "12.345"
    *out++ = digits[i];
  }
  if (point >= len) {  // an integer: "123000.0"
    for (int i = len; i < point; ++i) *out++ = '0';
    *out++ = '.';
    *out++ = '0';
  }
  return out;
}

// Outside that range (tiny, huge, -0.0): nlohmann's own formatting, what json::dump() writes for a
// double (Grisu2: exact, and the shortest form but in rare cases): its code and table are a
// fraction of std::to_chars' Ryu, which ran cold after every training step (docs/PERFORMANCE.md).
// A function of its own, placed apart from the hot code (.text.unlikely): inlined, its 0.6 KB lay
// among the paths a step takes, whose lines are all fetched cold after a training step.
[[gnu::cold, gnu::noinline]] char* WriteRare(double v, char* out) {
  return nlohmann::detail::to_chars(out, out + kDoubleTextMax, v);
}

}  // namespace

char* WriteDoubleText(double v, char* out) {
  if (std::fabs(v) < kLimit) {
    // v 10^6 rounded to an integer (to nearest, ties to even, as std::nearbyint): below 2^51, adding
    // and taking away 1.5 * 2^52 leaves no bits after the point. Not std::nearbyint itself: a call
    // into libm, its code cold after every training step.
    constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
    const double scaled = (v * kMicro + kRound) - kRound;
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
  // A loss or a norm: the shortest text, by a few integer operations.
  if (v != 0) {
    char* start = out;
    if (v < 0) *out++ = '-';
    if (char* end = WriteShortestInRange(std::fabs(v), out)) return end;
    out = start;
  }
  return WriteRare(v, out);
}

}  // namespace lockstep
