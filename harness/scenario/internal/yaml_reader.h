// Typed, strict reading of yaml-cpp nodes: every read either yields a value or reports exactly
// one diagnostic naming the key path ("model.heads: expected an integer, got string "four"").
// yaml-cpp types stay inside the scenario folder; nothing outside includes this header.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/scenario/diagnostic.h"
#include "harness/scenario/internal/source_text.h"
#include "harness/scenario/scenario.h"

namespace lockstep::internal {

// A node and the path diagnostics call it by.
struct YamlField {
  std::string path;  // "model.heads", "inject[0].rank"; "" for the document root
  std::string name;  // the key as written ("heads"); "" for the root and list elements
  YAML::Node key;    // undefined for the root and list elements
  YAML::Node value;

  YamlField Child(const YAML::Node& key_node, const YAML::Node& value_node) const;
  YamlField Element(std::size_t index, const YAML::Node& value_node) const;
};

// The YAML 1.2 core-schema type of a node, as diagnostics name it.
enum class YamlType { kNull, kBool, kInt, kFloat, kString, kMapping, kSequence, kOtherTag };
YamlType TypeOf(const YAML::Node& node);
// "string "four"", "integer 5", "a mapping", "no value": the `got ...` part of a type error.
std::string Describe(const YAML::Node& node);
// A string as diagnostics quote it: JSON-escaped, long ones shortened.
std::string Quote(std::string_view text);

struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  bool min_inclusive = true;
  double max = std::numeric_limits<double>::infinity();
  bool max_inclusive = true;

  static RealRange AtLeast(double v) { return {v, true}; }
  static RealRange Above(double v) { return {v, false}; }
  static RealRange HalfOpen(double lo, double hi) { return {lo, true, hi, false}; }
  // "> 0", ">= 0", "in [0, 1)"
  std::string ToString() const;
};

class YamlReader {
 public:
  // `text` and `file` are the document's; diagnostics go to `out` (null: counted, not kept,
  // for a document that was validated once already).
  YamlReader(const SourceText* text, std::string file, std::vector<Diagnostic>* out);

  const std::string& file() const { return file_; }
  int error_count() const { return errors_; }

  SourceLocation Locate(const YAML::Mark& mark) const;
  // Where a field's problems are shown: its value, or its key when the value is empty
  // (yaml-cpp marks an empty value at the next token, often on a later line).
  SourceLocation LocationOf(const YamlField& field) const;

  void Error(const SourceLocation& where, std::string message);
  // "path: message" at LocationOf(field).
  void FieldError(const YamlField& field, const std::string& message);

  // Visits the entries of a mapping in file order. Reports keys that are not scalars, duplicate
  // keys (only the first is visited) and keys not in `known` (with a did-you-mean); with
  // `pass_unknown` those are visited instead of reported.
  void ForEachEntry(const YamlField& mapping, const std::vector<std::string_view>& known, bool pass_unknown,
                    const std::function<void(const YamlField&)>& visit);

  bool ExpectMapping(const YamlField& field);
  bool ExpectSequence(const YamlField& field);

  std::optional<int64_t> ReadInt(const YamlField& field, IntRange range);
  std::optional<uint64_t> ReadUnsigned(const YamlField& field);
  std::optional<double> ReadReal(const YamlField& field, RealRange range);
  std::optional<std::string> ReadString(const YamlField& field);
  // Any scalar, as written (for kind-specific injection parameters).
  std::optional<std::string> ReadScalarText(const YamlField& field);

  // A string that must be one of `names`: "unknown value "x"; expected one of: a, b; did you mean "a"?".
  std::optional<std::size_t> ReadChoice(const YamlField& field, const std::vector<std::string_view>& names,
                                        std::string_view what = "value", bool list_always = true);

  template <typename E>
  std::optional<E> ReadEnum(const YamlField& field, const std::vector<std::pair<std::string_view, E>>& values) {
    std::vector<std::string_view> names;
    for (const auto& v : values) names.push_back(v.first);
    std::optional<std::size_t> index = ReadChoice(field, names);
    if (!index) return std::nullopt;
    return values[*index].second;
  }

  // "unknown <what> "word"; did you mean "x"?", listing the candidates when none is close (or
  // always, with `list_always`).
  static std::string UnknownNameMessage(std::string_view what, std::string_view word,
                                        const std::vector<std::string_view>& candidates, bool list_always);

 private:
  void TypeError(const YamlField& field, std::string_view expected);

  const SourceText* text_;
  std::string file_;
  std::vector<Diagnostic>* out_;
  int errors_ = 0;
};

}  // namespace lockstep::internal
