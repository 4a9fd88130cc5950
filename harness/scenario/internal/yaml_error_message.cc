#include "harness/scenario/internal/yaml_error_message.h"

#include <cstddef>
#include <optional>
#include <string_view>

namespace lockstep::internal {
namespace {

// yaml-cpp's UNKNOWN_ANCHOR without the ": <name>" that 0.8 appends.
constexpr std::string_view kUnknownAnchor = "the referenced anchor is not defined";
constexpr std::size_t kMaxShownName = 40;

// The alias's name at the mark ("*name"): YAML ends it at whitespace or a flow indicator.
std::optional<std::string> AliasNameAt(const SourceText& text, int line0, int byte_column0) {
  const std::optional<std::size_t> at = text.OffsetOfMark(line0, byte_column0);
  const std::string& bytes = text.bytes();
  if (!at || *at >= bytes.size() || bytes[*at] != '*') return std::nullopt;
  std::size_t end = *at + 1;
  while (end < bytes.size() && std::string_view(" \t\r\n,[]{}").find(bytes[end]) == std::string_view::npos) ++end;
  if (end == *at + 1) return std::nullopt;
  std::string name = bytes.substr(*at + 1, end - *at - 1);
  if (name.size() > kMaxShownName) {
    // Cut at a character boundary so the message stays UTF-8.
    std::size_t cut = kMaxShownName - 3;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name = name.substr(0, cut) + "...";
  }
  return name;
}

}  // namespace

std::string YamlErrorMessage(const std::string& message, const SourceText& text, int line0, int byte_column0) {
  if (message.rfind(kUnknownAnchor, 0) == 0) {
    if (std::optional<std::string> name = AliasNameAt(text, line0, byte_column0)) {
      return "alias *" + *name + ": no anchor &" + *name + " is defined before it";
    }
    return "an alias names an anchor that is not defined before it";
  }
  return message;
}

}  // namespace lockstep::internal
