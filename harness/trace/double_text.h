// A double as the text a trace writes for it: exact (it reads back as the same bits) and short,
// with as little code as possible on the path: a record is written right after a training step,
// when the writer's code and tables are out of the caches (docs/PERFORMANCE.md, 2026-11-29).
//
// A record's clock readings (wall_s, a collective's start_s and end_s) are whole microseconds
// (WallSeconds), so exactly the double nearest to k / 10^6 for an integer k: such a value is written
// from k with integer arithmetic ("12.3456", trailing zeros dropped), the same decimal the shortest
// form finds (a decimal of at most 15 significant digits is the only one of that length that reads
// back as its double). Every other value from 1e-4 to 1e15 (a loss, a norm) is written as the
// shortest decimal that reads back, found with integer arithmetic in less than half of Grisu2's
// code, in the layout nlohmann::json gives it; the rest (tiny, huge, -0.0) as nlohmann::json writes a
// double (Grisu2), whose code and tables are a fraction of std::to_chars' (Ryu's).
#pragma once

#include <cstddef>

namespace lockstep {

// Enough for any double's text.
inline constexpr size_t kDoubleTextMax = 32;

// Writes `v` (finite; NaN and infinities are the caller's) at `out`, which has room for
// kDoubleTextMax characters, and returns the end. Reads back, with std::from_chars or any
// correctly rounding parser, as exactly `v` (-0.0 included).
char* WriteDoubleText(double v, char* out);

}  // namespace lockstep
