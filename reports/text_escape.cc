#include "reports/text_escape.h"

#include <cstdint>

namespace lockstep {
namespace {

constexpr const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Decodes one UTF-8 sequence at s[i]. Returns its length, or 0 when it is malformed
// (bad lead byte, truncated, overlong, above U+10FFFF). Surrogates are decoded as such so the
// caller can drop them.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t value = 0;
  uint32_t min = 0;
  if (c0 < 0x80) {
    *cp = c0;
    return 1;
  } else if (c0 >= 0xC2 && c0 <= 0xDF) {
    len = 2, value = c0 & 0x1F, min = 0x80;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    len = 3, value = c0 & 0x0F, min = 0x800;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    len = 4, value = c0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (!IsContinuation(c)) return 0;
    value = (value << 6) | (c & 0x3F);
  }
  if (value < min || value > 0x10FFFF) return 0;
  *cp = value;
  return len;
}

bool AllowedInXml(uint32_t cp) {
  if (cp == 0x09 || cp == 0x0A || cp == 0x0D) return true;
  if (cp < 0x20) return false;
  if (cp >= 0x7F && cp <= 0x9F) return false;   // DEL and C1 controls: allowed by XML, but noise
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // lone surrogates
  if (cp == 0xFFFE || cp == 0xFFFF) return false;
  return true;
}

}  // namespace

std::string SanitizeText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (AllowedInXml(cp)) out.append(s.data() + i, len);
    i += len;
  }
  return out;
}

std::string XmlEscapeAttribute(std::string_view s) {
  std::string out;
  for (char c : SanitizeText(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string XmlEscapeText(std::string_view s) {
  std::string out;
  for (char c : SanitizeText(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string XmlCData(std::string_view s) {
  const std::string clean = SanitizeText(s);
  std::string out = "<![CDATA[";
  size_t start = 0;
  for (size_t pos = clean.find("]]>"); pos != std::string::npos; pos = clean.find("]]>", start)) {
    // "]]" ends this section, ">" starts the next one.
    out.append(clean, start, pos + 2 - start);
    out += "]]><![CDATA[";
    start = pos + 2;
  }
  out.append(clean, start, std::string::npos);
  out += "]]>";
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : SanitizeText(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string MarkdownEscape(std::string_view s) {
  std::string out;
  for (char c : SanitizeText(s)) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '|': out += "\\|"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n': out += "<br>"; break;
      case '\r': break;
      case '\t': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

std::string TruncateUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  const std::string_view ellipsis = "...";
  size_t cut = max_bytes > ellipsis.size() ? max_bytes - ellipsis.size() : 0;
  while (cut > 0 && IsContinuation(static_cast<unsigned char>(s[cut]))) --cut;
  return std::string(s.substr(0, cut)) + std::string(ellipsis);
}

std::string TailUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t start = s.size() - max_bytes;
  while (start < s.size() && IsContinuation(static_cast<unsigned char>(s[start]))) ++start;
  return std::string(s.substr(start));
}

}  // namespace lockstep
