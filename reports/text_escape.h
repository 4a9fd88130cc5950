// Escaping for the formats reporters write. Names in a run (scenario ids, tensor names, rank
// logs) are arbitrary bytes; every output must stay well-formed whatever they contain.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

// Valid UTF-8 holding only characters XML 1.0 allows: malformed bytes become U+FFFD; control
// characters other than tab, LF and CR, DEL and C1 controls, lone surrogates (UTF-8-encoded
// U+D800..U+DFFF) and U+FFFE/U+FFFF are dropped. HTML and Markdown output use the same rules.
std::string SanitizeText(std::string_view s);

// Attribute values: sanitized, & < > " ' escaped, and tab/LF/CR as character references so that
// attribute-value normalization does not turn them into spaces.
std::string XmlEscapeAttribute(std::string_view s);
// Element text: sanitized, & < > escaped.
std::string XmlEscapeText(std::string_view s);
// A complete CDATA section; "]]>" inside is split across two sections.
std::string XmlCData(std::string_view s);

// HTML text and attribute values (double-quoted): sanitized, & < > " ' escaped.
std::string HtmlEscape(std::string_view s);

// One GitHub-flavoured Markdown table cell or inline text: sanitized; \ | < > & escaped so they
// cannot end a cell or open HTML; newlines become <br> (tables have no multi-line cells).
std::string MarkdownEscape(std::string_view s);

// At most max_bytes of s without splitting a UTF-8 sequence; "..." appended when cut.
std::string TruncateUtf8(std::string_view s, size_t max_bytes);
// The last max_bytes of s without splitting a UTF-8 sequence (log excerpts keep the end).
std::string TailUtf8(std::string_view s, size_t max_bytes);

}  // namespace lockstep
