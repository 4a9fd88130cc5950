// One table of names per enum with a text form, read in both directions: value -> name for
// output, name -> value for input (flags, YAML, traces, report.json). Adding a value means adding
// its row and nothing else; the lookups below are the only code that walks a table.
//
// An enum publishes its table by specializing NamesOf beside the enum:
//   template <> const NameTable<Backend>& NamesOf<Backend>();   // in the header
//   template <> const NameTable<Backend>& NamesOf<Backend>() {  // in the .cc
//     static const NameTable<Backend> kTable = {{"mpi", Backend::kMpi}, ...};
//     return kTable;
//   }
// A table used in one file only (a name that is never read back) is passed to NameIn directly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep {

// Rows in the order error messages and flag help list the choices. Names are string literals
// (NUL-terminated), so NameIn can hand out a const char*.
template <typename Enum>
using NameTable = std::vector<std::pair<std::string_view, Enum>>;

// The name of `value`, or "unknown" for a value without a row (an out-of-range cast).
template <typename Enum>
const char* NameIn(const NameTable<Enum>& table, Enum value) {
  for (const auto& [name, v] : table) {
    if (v == value) return name.data();
  }
  return "unknown";
}

template <typename Enum>
std::optional<Enum> ValueIn(const NameTable<Enum>& table, std::string_view name) {
  for (const auto& [text, value] : table) {
    if (text == name) return value;
  }
  return std::nullopt;
}

template <typename Enum>
std::vector<std::string> NamesIn(const NameTable<Enum>& table) {
  std::vector<std::string> names;
  for (const auto& row : table) names.emplace_back(row.first);
  return names;
}

// The published table of `Enum`; specialized beside each enum.
template <typename Enum>
const NameTable<Enum>& NamesOf();

template <typename Enum>
const char* NameOf(Enum value) {
  return NameIn(NamesOf<Enum>(), value);
}

template <typename Enum>
std::optional<Enum> FromString(std::string_view name) {
  return ValueIn(NamesOf<Enum>(), name);
}

// The names in table order, for a command-line flag's choices ("mpi", "gloo", "nccl").
template <typename Enum>
std::vector<std::string> NameList() {
  return NamesIn(NamesOf<Enum>());
}

}  // namespace lockstep
