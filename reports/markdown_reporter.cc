#include "reports/markdown_reporter.h"

#include <algorithm>
#include <string>
#include <vector>

#include "reports/report_text.h"
#include "reports/text_escape.h"

namespace lockstep {
namespace {

constexpr size_t kMaxCellBytes = 300;
constexpr size_t kMaxMessageBytes = 1000;
// Room kept for the truncation note, which is far shorter than this.
constexpr size_t kNoteReserve = 512;

std::string Cell(const std::string& text, size_t max_bytes = kMaxCellBytes) {
  return MarkdownEscape(TruncateUtf8(text, max_bytes));
}

// Blocks are added whole or not at all; after the first block that does not fit, everything
// else is left out (a summary that skips rows in the middle would mislead) and counted for the note.
class CappedText {
 public:
  explicit CappedText(size_t max_bytes) : budget_(max_bytes > kNoteReserve ? max_bytes - kNoteReserve : 0) {}

  enum class Kind { kOther, kRow, kSection };

  void Add(const std::string& block, Kind kind = Kind::kOther) {
    if (!truncated_ && text_.size() + block.size() <= budget_) {
      text_ += block;
      return;
    }
    truncated_ = true;
    if (kind == Kind::kRow) ++rows_omitted_;
    if (kind == Kind::kSection) ++sections_omitted_;
  }

  std::string Finish(size_t max_bytes) const {
    if (!truncated_) return text_;
    std::string note = "\n> **Truncated:** this summary is capped at " + std::to_string(max_bytes) + " bytes; " +
                       std::to_string(rows_omitted_) + " summary rows and " + std::to_string(sections_omitted_) +
                       " failing-scenario sections are not shown. report.json has the complete results.\n";
    if (text_.size() + note.size() > max_bytes) return TruncateUtf8(note, max_bytes);
    return text_ + note;
  }

 private:
  size_t budget_;
  std::string text_;
  bool truncated_ = false;
  size_t rows_omitted_ = 0;
  size_t sections_omitted_ = 0;
};

std::string ContextLine(const RunResult& result) {
  const RunContext& c = result.context;
  std::string line = std::to_string(result.scenarios.size()) + " scenarios in " + FormatSeconds(c.duration_s);
  auto add = [&line](const char* label, const std::string& value) {
    if (!value.empty()) line += " · " + std::string(label) + " " + MarkdownEscape(value);
  };
  add("on", c.host);
  add("git", c.git_sha);
  add("backend", c.backend);
  add("launcher", c.launcher);
  add("started", c.started_at);
  return line + "\n\n";
}

std::string FirstFindingCell(const ScenarioResult& s) {
  if (const Finding* f = KeyFinding(s)) {
    std::string text = FindingHeadline(*f);
    if (!f->message.empty()) text += ": " + f->message;
    if (!f->cause.empty()) return Cell(text) + "<br>" + Cell(CauseLine(*f));
    return Cell(text);
  }
  return Cell(s.reason);
}

std::string SummaryRow(const ScenarioResult& s) {
  return "| " + Cell(s.id) + " | " + OutcomeWord(s.outcome) + " | " + std::to_string(s.ranks) + " | " +
         std::to_string(s.steps) + " | " + FormatSeconds(s.duration_s) + " | " + FirstFindingCell(s) + " |\n";
}

std::string SectionHead(const ScenarioResult& s) {
  std::string out = "\n### " + std::string(OutcomeWord(s.outcome)) + ": " + Cell(s.id) + "\n\n";
  std::string meta = Cell(s.file) + ":" + std::to_string(s.line);
  for (const std::string& part : {s.mode, s.backend}) {
    if (!part.empty()) meta += " · " + Cell(part);
  }
  meta += " · " + std::to_string(s.ranks) + " ranks · " + std::to_string(s.steps) + " steps · " +
          FormatSeconds(s.duration_s);
  out += meta + "\n\n";
  if (!s.description.empty()) out += Cell(s.description, kMaxMessageBytes) + "\n\n";
  if (!s.reason.empty()) out += "**Reason:** " + Cell(s.reason, kMaxMessageBytes) + "\n\n";
  if (s.findings.empty()) {
    out.pop_back();  // the next heading brings its own blank line
  } else {
    out += "| Checker | Outcome | Step | Tensor | Ranks | Message |\n";
    out += "| --- | --- | ---: | --- | --- | --- |\n";
  }
  return out;
}

std::string FindingRow(const Finding& f) {
  return "| " + Cell(f.checker) + " | " + ToString(f.outcome) + " | " + (f.step ? std::to_string(*f.step) : "") +
         " | " + Cell(f.tensor) + " | " + (f.ranks.empty() ? "" : Cell(FindingRanksText(f))) + " | " +
         Cell(f.message, kMaxMessageBytes) + (f.cause.empty() ? "" : "<br>**" + Cell(CauseLine(f)) + "**") + " |\n";
}

}  // namespace

Status MarkdownReporter::Render(const RunResult& result, std::ostream& out) const {
  CappedText text(max_bytes_);
  const OutcomeCounts counts = CountOutcomes(result);
  text.Add("## lockstep: " + SummaryLine(counts) + "\n\n");
  text.Add(ContextLine(result));
  if (!result.scenarios.empty()) {
    text.Add("| Scenario | Outcome | Ranks | Steps | Duration | First finding |\n"
             "| --- | --- | ---: | ---: | ---: | --- |\n");
  }
  for (const ScenarioResult& s : result.scenarios) text.Add(SummaryRow(s), CappedText::Kind::kRow);

  for (const ScenarioResult& s : result.scenarios) {
    if (!IsFailure(s.outcome)) continue;
    text.Add(SectionHead(s), CappedText::Kind::kSection);
    const size_t shown = std::min(s.findings.size(), kMarkdownMaxFindingsPerScenario);
    for (size_t i = 0; i < shown; ++i) text.Add(FindingRow(s.findings[i]));
    if (s.findings.size() > shown) {
      text.Add("| ... | | | | | " + std::to_string(s.findings.size() - shown) +
               " more findings in report.json |\n");
    }
  }
  out << text.Finish(max_bytes_);
  if (!out) return IoError("markdown reporter: write failed");
  return Status::Ok();
}

}  // namespace lockstep
