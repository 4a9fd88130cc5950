#include "harness/scenario/internal/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/scenario/internal/edit_distance.h"
#include "harness/scenario/scenario_loader.h"

namespace lockstep::internal {
namespace {

constexpr std::string_view kStrTag = "tag:yaml.org,2002:str";
constexpr std::size_t kMaxQuotedCodePoints = 40;

bool AllOf(std::string_view s, bool (*pred)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), pred);
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsOctalDigit(char c) { return c >= '0' && c <= '7'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string_view StripSign(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s;
}

// YAML 1.2 core schema: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool IsIntText(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return AllOf(s.substr(2), IsOctalDigit);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return AllOf(s.substr(2), IsHexDigit);
  return AllOf(StripSign(s), IsDigit);
}

bool IsInfText(std::string_view s) {
  s = StripSign(s);
  return s == ".inf" || s == ".Inf" || s == ".INF";
}
bool IsNanText(std::string_view s) { return s == ".nan" || s == ".NaN" || s == ".NAN"; }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.inf | \.nan
bool IsFloatText(std::string_view s) {
  if (IsInfText(s) || IsNanText(s)) return true;
  s = StripSign(s);
  std::size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!AllOf(s.substr(std::min(i, s.size())), IsDigit)) return false;
    return true;
  }
  return i == s.size();
}

bool IsBoolText(std::string_view s) {
  return s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE";
}

YamlType ResolvePlain(std::string_view s) {
  if (IsBoolText(s)) return YamlType::kBool;
  if (IsIntText(s)) return YamlType::kInt;
  if (IsFloatText(s)) return YamlType::kFloat;
  return YamlType::kString;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    base = s[1] == 'o' ? 8 : 16;
    s.remove_prefix(2);
  } else if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

double ParseReal(const std::string& s) {
  if (IsNanText(s)) return std::nan("");
  if (IsInfText(s)) return s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
  return std::strtod(s.c_str(), nullptr);
}

std::string FormatReal(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", v);
  return buffer;
}

std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

std::string Prefix(const std::string& path) { return path.empty() ? std::string() : path + ": "; }

}  // namespace

// A key as it appears in a path: as written when it is a plain name, quoted otherwise, so that a
// diagnostic stays one readable line whatever the key holds.
std::string PathComponent(const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7F && c != '"' && c != '.' && c != '[' && c != ']';
  });
  return plain ? key : Quote(key);
}

YamlField YamlField::Child(const YAML::Node& key_node, const YAML::Node& value_node) const {
  YamlField f;
  f.name = key_node.IsScalar() ? key_node.Scalar() : std::string("?");
  const std::string component = PathComponent(f.name);
  f.path = path.empty() ? component : path + "." + component;
  f.key = key_node;
  f.value = value_node;
  return f;
}

YamlField YamlField::Element(std::size_t index, const YAML::Node& value_node) const {
  YamlField f;
  f.path = path + "[" + std::to_string(index) + "]";
  f.value = value_node;
  return f;
}

YamlType TypeOf(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return YamlType::kNull;
  if (node.IsMap()) return YamlType::kMapping;
  if (node.IsSequence()) return YamlType::kSequence;
  const std::string& tag = node.Tag();
  // yaml-cpp tags quoted and block scalars "!" and plain ones "?" (type to be resolved).
  if (tag == "!" || tag == kStrTag) return YamlType::kString;
  if (tag == "?" || tag.rfind("tag:yaml.org,2002:", 0) == 0) return ResolvePlain(node.Scalar());
  return YamlType::kOtherTag;
}

std::string Quote(std::string_view text) {
  auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  const std::size_t total = static_cast<std::size_t>(std::count_if(text.begin(), text.end(), is_lead));
  std::string shortened;
  if (total > kMaxQuotedCodePoints) {
    // Cut at a character boundary so the result stays UTF-8.
    std::size_t kept = 0, i = 0;
    for (; i < text.size(); ++i) {
      if (is_lead(text[i]) && kept++ == kMaxQuotedCodePoints - 3) break;
    }
    shortened = std::string(text.substr(0, i)) + "...";
    text = shortened;
  }
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Describe(const YAML::Node& node) {
  switch (TypeOf(node)) {
    case YamlType::kNull: return "no value";
    case YamlType::kBool: return "boolean " + node.Scalar();
    case YamlType::kInt: return "integer " + node.Scalar();
    case YamlType::kFloat: return "float " + node.Scalar();
    case YamlType::kString: return "string " + Quote(node.Scalar());
    case YamlType::kMapping: return "a mapping";
    case YamlType::kSequence: return "a list";
    case YamlType::kOtherTag: return "a value tagged " + node.Tag();
  }
  return "an unknown value";
}

std::string RealRange::ToString() const {
  const bool has_min = std::isfinite(min), has_max = std::isfinite(max);
  if (has_min && has_max) {
    return std::string("in ") + (min_inclusive ? "[" : "(") + FormatReal(min) + ", " + FormatReal(max) +
           (max_inclusive ? "]" : ")");
  }
  if (has_min) return std::string(min_inclusive ? ">= " : "> ") + FormatReal(min);
  if (has_max) return std::string(max_inclusive ? "<= " : "< ") + FormatReal(max);
  return "a number";
}

YamlReader::YamlReader(const SourceText* text, std::string file, std::vector<Diagnostic>* out)
    : text_(text), file_(std::move(file)), out_(out) {}

SourceLocation YamlReader::Locate(const YAML::Mark& mark) const {
  SourceLocation loc;
  loc.file = file_;
  if (mark.is_null()) return loc;
  TextPosition pos = text_->PositionOfMark(mark.line, mark.column);
  loc.line = pos.line;
  loc.column = pos.column;
  return loc;
}

SourceLocation YamlReader::LocationOf(const YamlField& field) const {
  if (field.value.IsDefined() && !field.value.IsNull()) return Locate(field.value.Mark());
  if (field.key.IsDefined()) return Locate(field.key.Mark());
  return Locate(field.value.Mark());
}

void YamlReader::Error(const SourceLocation& where, std::string message) {
  ++errors_;
  if (out_) out_->push_back(Diagnostic{where, std::move(message)});
}

void YamlReader::FieldError(const YamlField& field, const std::string& message) {
  Error(LocationOf(field), Prefix(field.path) + message);
}

void YamlReader::TypeError(const YamlField& field, std::string_view expected) {
  FieldError(field, "expected " + std::string(expected) + ", got " + Describe(field.value));
}

std::string YamlReader::UnknownNameMessage(std::string_view what, std::string_view word,
                                           const std::vector<std::string_view>& candidates, bool list_always) {
  std::string message = "unknown " + std::string(what);
  if (!word.empty()) message += " " + Quote(word);
  std::optional<std::string> suggestion = ClosestMatch(word, candidates);
  if (list_always || !suggestion) message += "; expected one of: " + JoinNames(candidates);
  if (suggestion) message += "; did you mean " + Quote(*suggestion) + "?";
  return message;
}

void YamlReader::ForEachEntry(const YamlField& mapping, const std::vector<std::string_view>& known,
                              bool pass_unknown, const std::function<void(const YamlField&)>& visit) {
  // yaml-cpp keeps every pair of a mapping that repeats a key; the first one counts.
  std::map<std::string, YAML::Mark> seen;
  for (auto it = mapping.value.begin(); it != mapping.value.end(); ++it) {
    // Copies: the iterator hands out a temporary pair, so a reference into it would dangle.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Error(Locate(key.Mark()), Prefix(mapping.path) + "keys must be plain names, got " + Describe(key));
      continue;
    }
    YamlField field = mapping.Child(key, value);
    auto [previous, inserted] = seen.emplace(field.name, key.Mark());
    if (!inserted) {
      SourceLocation first = Locate(previous->second);
      Error(Locate(key.Mark()), field.path + ": duplicate key (first given at line " + std::to_string(first.line) +
                                    ", column " + std::to_string(first.column) + ")");
      continue;
    }
    if (std::find(known.begin(), known.end(), field.name) == known.end() && !pass_unknown) {
      std::string message = field.path + ": ";
      if (field.name == "<<") {
        message += "YAML merge keys are not supported; put shared values in " + std::string(kDefaultsFileName);
      } else {
        std::optional<std::string> suggestion = ClosestMatch(field.name, known);
        message += suggestion ? "unknown key; did you mean " + Quote(*suggestion) + "?"
                              : "unknown key; expected one of: " + JoinNames(known);
      }
      Error(Locate(key.Mark()), message);
      continue;
    }
    visit(field);
  }
}

bool YamlReader::ExpectMapping(const YamlField& field) {
  if (TypeOf(field.value) == YamlType::kMapping) return true;
  TypeError(field, "a mapping");
  return false;
}

bool YamlReader::ExpectSequence(const YamlField& field) {
  if (TypeOf(field.value) == YamlType::kSequence) return true;
  TypeError(field, "a list");
  return false;
}

std::optional<int64_t> YamlReader::ReadInt(const YamlField& field, IntRange range) {
  if (TypeOf(field.value) != YamlType::kInt) {
    TypeError(field, "an integer");
    return std::nullopt;
  }
  const std::string& text = field.value.Scalar();
  std::optional<int64_t> value = ParseInt(text);
  if (!value) {
    FieldError(field, text + " does not fit in a 64-bit integer");
    return std::nullopt;
  }
  if (*value < range.min) {
    FieldError(field, "must be >= " + std::to_string(range.min) + ", got " + text);
    return std::nullopt;
  }
  if (*value > range.max) {
    FieldError(field, "must be <= " + std::to_string(range.max) + ", got " + text);
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> YamlReader::ReadUnsigned(const YamlField& field) {
  if (TypeOf(field.value) != YamlType::kInt) {
    TypeError(field, "an integer");
    return std::nullopt;
  }
  std::string_view text = field.value.Scalar();
  if (!text.empty() && text[0] == '-') {
    std::optional<int64_t> v = ParseInt(text);
    if (!v || *v != 0) {
      FieldError(field, "must be >= 0, got " + std::string(text));
      return std::nullopt;
    }
    return 0;
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'o' || text[1] == 'x')) {
    base = text[1] == 'o' ? 8 : 16;
    text.remove_prefix(2);
  } else if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) {
    FieldError(field, field.value.Scalar() + " does not fit in a 64-bit unsigned integer");
    return std::nullopt;
  }
  return value;
}

std::optional<double> YamlReader::ReadReal(const YamlField& field, RealRange range) {
  YamlType type = TypeOf(field.value);
  if (type != YamlType::kInt && type != YamlType::kFloat) {
    TypeError(field, "a number");
    return std::nullopt;
  }
  const std::string& text = field.value.Scalar();
  double value = ParseReal(text);
  if (!std::isfinite(value)) {
    FieldError(field, "must be a finite number, got " + text);
    return std::nullopt;
  }
  const bool below = range.min_inclusive ? value < range.min : value <= range.min;
  const bool above = range.max_inclusive ? value > range.max : value >= range.max;
  if (below || above) {
    FieldError(field, "must be " + range.ToString() + ", got " + text);
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> YamlReader::ReadString(const YamlField& field) {
  if (TypeOf(field.value) != YamlType::kString) {
    TypeError(field, "a string");
    return std::nullopt;
  }
  return field.value.Scalar();
}

std::optional<std::string> YamlReader::ReadScalarText(const YamlField& field) {
  YamlType type = TypeOf(field.value);
  if (type == YamlType::kNull || type == YamlType::kMapping || type == YamlType::kSequence ||
      type == YamlType::kOtherTag) {
    TypeError(field, "a single value");
    return std::nullopt;
  }
  return field.value.Scalar();
}

std::optional<std::size_t> YamlReader::ReadChoice(const YamlField& field, const std::vector<std::string_view>& names,
                                                  std::string_view what, bool list_always) {
  std::optional<std::string> text = ReadString(field);
  if (!text) return std::nullopt;
  auto it = std::find(names.begin(), names.end(), *text);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  FieldError(field, UnknownNameMessage(what, *text, names, list_always));
  return std::nullopt;
}

}  // namespace lockstep::internal
