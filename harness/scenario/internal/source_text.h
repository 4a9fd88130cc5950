// The bytes of one scenario file and the position arithmetic diagnostics need: yaml-cpp marks are
// 0-based lines and 0-based byte columns (after a byte-order mark); diagnostics show 1-based lines
// and 1-based columns counted in characters (code points), as editors do.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::internal {

struct TextPosition {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in code points
};

class SourceText {
 public:
  explicit SourceText(std::string bytes);

  const std::string& bytes() const { return bytes_; }
  bool has_bom() const { return has_bom_; }

  // The first byte that makes the text unfit for YAML: not UTF-8 (bad lead byte, truncated or
  // overlong sequence, surrogate, beyond U+10FFFF) or a control character YAML forbids.
  struct EncodingProblem {
    std::size_t offset = 0;
    std::string message;
  };
  std::optional<EncodingProblem> FindEncodingProblem() const;

  // True when the line's leading whitespace holds a tab, which YAML forbids in indentation
  // (yaml-cpp's own message for it is often about something else).
  bool LineIndentedWithTab(int line0) const;

  // Position of a byte offset into bytes().
  TextPosition PositionOfOffset(std::size_t offset) const;
  // Position of a yaml-cpp mark. Marks past the end (errors at end of input) keep yaml-cpp's
  // numbers, shifted to 1-based.
  TextPosition PositionOfMark(int line0, int byte_column0) const;
  // Byte offset into bytes() of a yaml-cpp mark; nullopt for a null mark or one past the text.
  std::optional<std::size_t> OffsetOfMark(int line0, int byte_column0) const;

 private:
  int CodePointsBetween(std::size_t begin, std::size_t end) const;

  std::string bytes_;
  bool has_bom_ = false;
  std::vector<std::size_t> line_starts_;  // byte offset of each line; line 0 starts after the BOM
};

}  // namespace lockstep::internal
