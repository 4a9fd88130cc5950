#include "reports/github_annotations.h"

#include "reports/report_text.h"
#include "reports/text_escape.h"

namespace lockstep {

std::string EscapeAnnotationData(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeAnnotationProperty(std::string_view s) {
  std::string out;
  for (char c : EscapeAnnotationData(s)) {
    switch (c) {
      case ':': out += "%3A"; break;
      case ',': out += "%2C"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<std::string> GithubAnnotations(const RunResult& result, size_t max_annotations) {
  std::vector<std::string> lines;
  for (const ScenarioResult& s : result.scenarios) {
    if (lines.size() >= max_annotations) break;
    if (!IsFailure(s.outcome)) continue;
    std::string message;
    if (const Finding* f = KeyFinding(s)) {
      message = FindingHeadline(*f);
      if (!f->message.empty()) message += ": " + f->message;
      if (!f->cause.empty()) message += "\n" + CauseLine(*f);
    } else {
      message = s.reason.empty() ? std::string("scenario ") + ToString(s.outcome) : s.reason;
    }
    const std::string title = "lockstep " + std::string(OutcomeWord(s.outcome)) + ": " + s.id;
    // Like @actions/core, a property with an empty value is left out.
    std::string line = "::error ";
    bool first = true;
    auto property = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      line += (first ? "" : ",") + std::string(key) + "=" + EscapeAnnotationProperty(value);
      first = false;
    };
    // Sanitized first: a NUL, an escape sequence or bytes that are not UTF-8 would garble the log
    // line the runner parses; what remains is escaped exactly as the toolkit does.
    property("file", SanitizeText(s.file));
    property("line", s.file.empty() ? "" : std::to_string(s.line));
    property("title", SanitizeText(title));
    line += "::" + EscapeAnnotationData(SanitizeText(message));
    lines.push_back(std::move(line));
  }
  return lines;
}

void WriteGithubAnnotations(const RunResult& result, std::ostream& out) {
  for (const std::string& line : GithubAnnotations(result)) out << line << "\n";
}

}  // namespace lockstep
