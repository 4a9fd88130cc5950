// Limits and strict conversions for reading files lockstep did not necessarily write itself:
// traces, report.json, golden files, tensor-dump indexes. A reader bounds the bytes it reads and
// the nesting it parses (a JSON value nested 100,000 deep overflows the stack of every recursive
// copy or destructor), and takes a JSON number as an integer only when it is one, in range:
// 3.5, null, "3" and 1e300 are errors, never 3, 0 or INT64_MIN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "harness/core/status.h"

namespace lockstep {

// Deeper than any file lockstep writes (report.json nests 6 levels), shallow enough for any
// recursive walk of a parsed value.
inline constexpr int kMaxJsonDepth = 64;

// The most ranks any lockstep program runs or reads (scenario `ranks`, `--ranks`, a trace header's
// world_size, report.json's `ranks`): a reader sizes nothing by a larger claim.
inline constexpr int kMaxWorldSize = 65536;

// A file read whole, at most `max_bytes`, or why not: the one bounded read, for callers that word
// its problems their own way (the scenario loader's diagnostics).
struct BoundedRead {
  enum class Problem { kNone, kMissing, kCannotAccess, kFolder, kNotRegular, kTooLarge, kCannotOpen, kCannotRead };
  Problem problem = Problem::kNone;
  std::string bytes;                  // the file, when there is no problem
  std::optional<std::uintmax_t> size;  // kTooLarge: the size found before reading, if it was found then
  std::string detail;                 // kCannotAccess, kCannotOpen: the system's reason
};
BoundedRead ReadBounded(const std::filesystem::path& path, std::uintmax_t max_bytes);

// The whole of a regular file, or an error naming it: not found, a folder or another non-file
// ("is a directory, not a file"), larger than `max_bytes`, unreadable. `what` names the kind of
// file in messages ("trace", "report").
Result<std::string> ReadBoundedFile(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                    const std::string& what);

// Where the JSON text first nests deeper than `max_depth` arrays and objects: "line L, column C"
// of the bracket that goes too deep, or nullopt when it never does. Strings are skipped, so
// brackets inside them do not count. Linear, no recursion, no allocation.
std::optional<std::string> FindJsonTooDeep(std::string_view text, int max_depth = kMaxJsonDepth);

// A program's output quoted in a message or a report: text longer than 2 * keep bytes becomes its
// first `keep` bytes, " ... [N bytes cut] ... " and its last `keep` bytes (a 5 MB line is never
// copied whole into the console or report.json).
inline constexpr std::size_t kQuotedOutputKeep = 1024;
std::string CutLongText(std::string_view text, std::size_t keep = kQuotedOutputKeep);

// "line 3, column 7" of a byte offset (1-based; columns count bytes).
std::string TextPositionOf(std::string_view text, std::size_t offset);

// `j` as a T when it is a JSON integer within T's range; nullopt for anything else (a float,
// even 3.0; null; a string; an integer out of range). Works with any nlohmann::basic_json.
template <typename T, typename Json>
std::optional<T> JsonInteger(const Json& j) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (j.is_number_unsigned()) {
    const auto v = j.template get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(v);
  }
  if (!j.is_number_integer()) return std::nullopt;
  const auto v = j.template get<std::int64_t>();
  if constexpr (std::is_signed_v<T>) {
    if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min())) return std::nullopt;
  } else {
    if (v < 0) return std::nullopt;
  }
  if (v > 0 && static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
    return std::nullopt;
  }
  return static_cast<T>(v);
}

// "an integer from -2147483648 to 2147483647": the range of T, for messages.
template <typename T>
std::string IntegerRangeText() {
  return "an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
         std::to_string(std::numeric_limits<T>::max());
}

}  // namespace lockstep
