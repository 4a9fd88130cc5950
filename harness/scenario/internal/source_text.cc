#include "harness/scenario/internal/source_text.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace lockstep::internal {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

std::string Hex(unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%0*X", digits, value);
  return buffer;
}

}  // namespace

SourceText::SourceText(std::string bytes) : bytes_(std::move(bytes)) {
  has_bom_ = bytes_.size() >= 3 && static_cast<unsigned char>(bytes_[0]) == 0xEF &&
             static_cast<unsigned char>(bytes_[1]) == 0xBB && static_cast<unsigned char>(bytes_[2]) == 0xBF;
  // yaml-cpp breaks lines at '\n' only (a CR before it belongs to the line end), so do we.
  line_starts_.push_back(has_bom_ ? 3 : 0);
  for (std::size_t i = 0; i < bytes_.size(); ++i) {
    if (bytes_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::optional<SourceText::EncodingProblem> SourceText::FindEncodingProblem() const {
  const std::size_t n = bytes_.size();
  if (n >= 2) {
    const unsigned char b0 = static_cast<unsigned char>(bytes_[0]), b1 = static_cast<unsigned char>(bytes_[1]);
    if ((b0 == 0xFF && b1 == 0xFE) || (b0 == 0xFE && b1 == 0xFF)) {
      return EncodingProblem{0, "the file is UTF-16 (it starts with the byte-order mark 0x" + Hex(b0, 2) + " 0x" +
                                    Hex(b1, 2) + "); scenario files must be UTF-8"};
    }
  }
  std::size_t i = has_bom_ ? 3 : 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(bytes_[i]);
    if (c < 0x80) {
      // YAML allows tab, LF and CR among the C0 controls, and not DEL.
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
        return EncodingProblem{i, "control character U+" + Hex(c, 4) + " is not allowed in a scenario file"};
      }
      ++i;
      continue;
    }
    // Valid second-byte ranges per lead byte (Unicode Table 3-7): they exclude overlong forms,
    // surrogates and code points beyond U+10FFFF.
    int length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return EncodingProblem{i, "invalid UTF-8: byte 0x" + Hex(c, 2) + " cannot start a character"};
    }
    for (int k = 1; k < length; ++k) {
      if (i + k >= n) {
        return EncodingProblem{i, "invalid UTF-8: the file ends inside a character"};
      }
      const unsigned char b = static_cast<unsigned char>(bytes_[i + k]);
      const bool ok = k == 1 ? (b >= low && b <= high) : IsContinuation(b);
      if (!ok) {
        return EncodingProblem{i, "invalid UTF-8: byte 0x" + Hex(c, 2) + " followed by 0x" + Hex(b, 2)};
      }
    }
    i += length;
  }
  return std::nullopt;
}

int SourceText::CodePointsBetween(std::size_t begin, std::size_t end) const {
  end = std::min(end, bytes_.size());
  int count = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (!IsContinuation(static_cast<unsigned char>(bytes_[i]))) ++count;
  }
  return count;
}

bool SourceText::LineIndentedWithTab(int line0) const {
  if (line0 < 0 || static_cast<std::size_t>(line0) >= line_starts_.size()) return false;
  for (std::size_t i = line_starts_[line0]; i < bytes_.size(); ++i) {
    if (bytes_[i] == '\t') return true;
    if (bytes_[i] != ' ') return false;
  }
  return false;
}

TextPosition SourceText::PositionOfOffset(std::size_t offset) const {
  // The last line start at or before offset.
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const std::size_t line = it == line_starts_.begin() ? 0 : static_cast<std::size_t>(it - line_starts_.begin()) - 1;
  const std::size_t start = line_starts_[line];
  TextPosition pos;
  pos.line = static_cast<int>(line) + 1;
  pos.column = offset < start ? 1 : CodePointsBetween(start, offset) + 1;
  return pos;
}

TextPosition SourceText::PositionOfMark(int line0, int byte_column0) const {
  TextPosition pos;
  if (line0 < 0 || byte_column0 < 0) return pos;  // yaml-cpp's null mark
  pos.line = line0 + 1;
  if (static_cast<std::size_t>(line0) >= line_starts_.size()) {
    pos.column = byte_column0 + 1;
    return pos;
  }
  const std::size_t start = line_starts_[line0];
  pos.column = CodePointsBetween(start, start + static_cast<std::size_t>(byte_column0)) + 1;
  return pos;
}

std::optional<std::size_t> SourceText::OffsetOfMark(int line0, int byte_column0) const {
  if (line0 < 0 || byte_column0 < 0 || static_cast<std::size_t>(line0) >= line_starts_.size()) return std::nullopt;
  const std::size_t offset = line_starts_[static_cast<std::size_t>(line0)] + static_cast<std::size_t>(byte_column0);
  if (offset >= bytes_.size()) return std::nullopt;
  return offset;
}

}  // namespace lockstep::internal
