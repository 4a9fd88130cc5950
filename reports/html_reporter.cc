#include "reports/html_reporter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "checkers/checker_registry.h"
#include "reports/chart_js.h"
#include "reports/html_assets.h"
#include "reports/report_text.h"
#include "reports/text_escape.h"

namespace lockstep {
namespace {

using Json = nlohmann::ordered_json;

// Rows of the divergence map: a model with thousands of divergent tensors would make the chart
// unreadable; report.json keeps them all.
constexpr size_t kMaxDivergenceRows = 200;
constexpr size_t kMaxLogBytesPerRank = 16 * 1024;
constexpr int kChartWidth = 900;

// Inside <script type="application/json"> the HTML parser ends the element at "</script" and
// treats "<!--" specially; escaping every <, > and & as \u00XX (valid JSON string escapes, and
// these characters occur only inside strings) rules out both, "</" included.
std::string ScriptSafeJson(const Json& json) {
  const std::string text = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

bool ShowsTimeline(const ScenarioResult& s) {
  if (s.series.last_collectives.empty()) return false;
  if (s.outcome == Outcome::kTimeout) return true;
  const std::optional<std::string> hang_judge = CheckerJudging(LaunchEnding::kHang);
  for (const Finding& f : s.findings) {
    if (f.checker == hang_judge) return true;
  }
  for (const CollectiveSummary& c : s.series.last_collectives) {
    if (!c.end_s) return true;
  }
  return false;
}

struct ChartData {
  Json json;
  size_t points = 0;
};

ChartData LossData(const ScenarioSeries& series) {
  ChartData d;
  d.json["steps"] = series.steps;
  Json ranks = Json::array();
  for (const auto& [rank, values] : series.loss_by_rank) {
    Json list = Json::array();
    for (double v : values) {
      if (std::isfinite(v)) {
        list.push_back(v);
        ++d.points;
      } else {
        list.push_back(nullptr);  // a gap in the line (no loss before the first step)
      }
    }
    ranks.push_back({{"rank", rank}, {"values", std::move(list)}});
  }
  d.json["ranks"] = std::move(ranks);
  return d;
}

ChartData DivergenceData(const ScenarioSeries& series, size_t* rows_omitted) {
  // Rows: the tensors that diverge somewhere, in model order.
  std::set<std::string> divergent;
  for (const DivergenceCell& c : series.divergent_cells) divergent.insert(c.tensor);
  std::vector<std::string> rows;
  for (const std::string& t : series.tensors) {
    if (divergent.count(t) != 0) rows.push_back(t);
  }
  for (const DivergenceCell& c : series.divergent_cells) {  // labels not in the tensor list
    if (std::find(rows.begin(), rows.end(), c.tensor) == rows.end()) rows.push_back(c.tensor);
  }
  *rows_omitted = rows.size() > kMaxDivergenceRows ? rows.size() - kMaxDivergenceRows : 0;
  rows.resize(std::min(rows.size(), kMaxDivergenceRows));
  const std::set<std::string> shown(rows.begin(), rows.end());

  ChartData d;
  Json cells = Json::array();
  for (const DivergenceCell& c : series.divergent_cells) {
    if (shown.count(c.tensor) == 0) continue;
    Json groups = Json::array();
    for (const auto& [ranks, digest] : c.groups) groups.push_back({{"ranks", ranks}, {"digest", digest}});
    cells.push_back({{"x", c.step}, {"y", c.tensor}, {"groups", std::move(groups)}});
    ++d.points;
  }
  d.json["tensors"] = rows;
  d.json["cells"] = std::move(cells);
  return d;
}

ChartData TimelineData(const ScenarioResult& s) {
  const ScenarioSeries& series = s.series;
  std::set<int> rank_set;
  for (const auto& [rank, log] : series.loss_by_rank) rank_set.insert(rank);
  for (const CollectiveSummary& c : series.last_collectives) rank_set.insert(c.rank);
  double first = INFINITY, last = -INFINITY;
  for (const CollectiveSummary& c : series.last_collectives) {
    first = std::min(first, c.start_s);
    last = std::max(last, c.end_s.value_or(c.start_s));
  }
  // A collective that never completed runs to the end of what was observed, and is never drawn
  // narrower than 2% of the window, so that it stays visible.
  const double min_width = std::max(1e-6, (last - first) * 0.02);
  ChartData d;
  Json labels = Json::array();
  for (int r : rank_set) labels.push_back("rank " + std::to_string(r));
  Json bars = Json::array();
  for (const CollectiveSummary& c : series.last_collectives) {
    const bool in_flight = !c.end_s.has_value();
    double end = in_flight ? last : *c.end_s;
    end = std::max(end, c.start_s + min_width);
    bars.push_back({{"x", Json::array({c.start_s, end})},
                    {"y", "rank " + std::to_string(c.rank)},
                    {"group", c.group},
                    {"seq", c.seq},
                    {"op", c.op},
                    {"step", c.step},
                    {"in_flight", in_flight}});
    ++d.points;
  }
  d.json["ranks"] = std::move(labels);
  d.json["bars"] = std::move(bars);
  return d;
}

const char* OutcomeClass(Outcome o) {
  if (IsFailure(o)) return "bad";
  if (o == Outcome::kSkipped) return "skip";
  return "good";
}

std::string Canvas(const std::string& id, int height, size_t points, const std::string& label) {
  return "<canvas id=\"" + id + "\" width=\"" + std::to_string(kChartWidth) + "\" height=\"" +
         std::to_string(height) + "\" data-points=\"" + std::to_string(points) + "\" role=\"img\" aria-label=\"" +
         HtmlEscape(label) + "\"></canvas>\n";
}

void ContextTable(std::ostream& out, const RunResult& result) {
  const RunContext& c = result.context;
  out << "<table id=\"context\">\n";
  // Each field once: the versions repeat some of the rows above under their JSON key
  // ("git_sha" for "git sha"), which are left out there.
  std::set<std::string> shown;
  auto same_key = [](std::string key) {
    std::replace(key.begin(), key.end(), '_', ' ');
    return key;
  };
  auto row = [&](const std::string& key, const std::string& value) {
    if (value.empty() || !shown.insert(same_key(key)).second) return;
    out << "<tr><th>" << HtmlEscape(key) << "</th><td>" << HtmlEscape(value) << "</td></tr>\n";
  };
  row("host", c.host);
  row("git sha", c.git_sha);
  row("backend", c.backend);
  row("launcher", c.launcher);
  row("command line", c.command_line);
  row("started at", c.started_at);
  row("duration", FormatSeconds(c.duration_s));
  for (const auto& [key, value] : c.versions) row(key, value);
  out << "</table>\n";
}

void SummaryTable(std::ostream& out, const RunResult& result) {
  out << "<table id=\"summary\">\n<tr><th>Scenario</th><th>Outcome</th><th>Ranks</th><th>Steps</th>"
         "<th>Duration</th><th>First finding</th></tr>\n";
  for (size_t i = 0; i < result.scenarios.size(); ++i) {
    const ScenarioResult& s = result.scenarios[i];
    std::string first;
    std::string cause;
    if (const Finding* f = KeyFinding(s)) {
      first = FindingHeadline(*f);
      if (!f->message.empty()) first += ": " + f->message;
      cause = CauseLine(*f);
    } else {
      first = s.reason;
    }
    out << "<tr><td><a href=\"#scenario-" << i << "\">" << HtmlEscape(s.id) << "</a></td><td class=\""
        << OutcomeClass(s.outcome) << "\">" << OutcomeWord(s.outcome) << "</td><td class=\"num\">" << s.ranks
        << "</td><td class=\"num\">" << s.steps << "</td><td class=\"num\">" << FormatSeconds(s.duration_s)
        << "</td><td class=\"message\">" << HtmlEscape(TruncateUtf8(first, 400));
    if (!cause.empty()) out << "<div class=\"cause\">" << HtmlEscape(TruncateUtf8(cause, 400)) << "</div>";
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

void FindingsTable(std::ostream& out, const ScenarioResult& s) {
  if (s.findings.empty()) return;
  // Fixed layout with the message column taking the rest: a long message or tensor name wraps
  // inside its cell instead of widening the table past the page (report.css).
  out << "<h3>Findings</h3>\n<table class=\"findings\">\n<colgroup><col class=\"checker\"><col class=\"outcome\">"
         "<col class=\"step\"><col class=\"tensor\"><col class=\"ranks\"><col class=\"message\"></colgroup>\n"
         "<tr><th>Checker</th><th>Outcome</th><th>Step</th><th>Tensor</th><th>Ranks</th><th>Message</th></tr>\n";
  for (const Finding& f : s.findings) {
    std::string message = f.message;
    for (const auto& [key, value] : f.details) message += "\n" + key + ": " + value;
    if (f.tensors.size() > 1) {
      message += "\ntensors:";
      for (const std::string& t : f.tensors) message += " " + t;
    }
    out << "<tr><td>" << HtmlEscape(f.checker) << "</td><td class=\""
        << (f.outcome == FindingOutcome::kExpected ? "good" : "bad") << "\">" << ToString(f.outcome)
        << "</td><td class=\"num\">" << (f.step ? std::to_string(*f.step) : "") << "</td><td>"
        << HtmlEscape(f.tensor) << "</td><td>" << (f.ranks.empty() ? "" : HtmlEscape(FindingRanksText(f))) << "</td><td>"
        << "<pre>" << HtmlEscape(message) << "</pre>";
    // The cause under the message, outside the scrolling <pre>: seen without expanding anything.
    if (!f.cause.empty()) out << "<div class=\"cause\">" << HtmlEscape(CauseLine(f)) << "</div>";
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

void Verdicts(std::ostream& out, const ScenarioResult& s) {
  if (s.checkers.empty()) return;
  out << "<p class=\"note\">Checkers: ";
  for (size_t i = 0; i < s.checkers.size(); ++i) {
    const CheckerVerdict& v = s.checkers[i];
    out << (i ? ", " : "") << HtmlEscape(v.checker) << " <span class=\"" << OutcomeClass(v.outcome) << "\">"
        << ToString(v.outcome) << "</span>";
    if (const std::string judged = JudgedText(v); !judged.empty()) out << " (" << HtmlEscape(judged) << ")";
  }
  out << "</p>\n";
  if (const std::string nothing = NothingComparedNote(s); !nothing.empty()) {
    out << "<p class=\"note\">" << HtmlEscape(nothing) << "</p>\n";
  }
}

void RankLogs(std::ostream& out, const ScenarioResult& s) {
  for (const auto& [rank, log] : s.rank_logs) {
    out << "<details><summary>rank " << rank << " output</summary><pre>"
        << HtmlEscape(TailUtf8(log, kMaxLogBytesPerRank)) << "</pre></details>\n";
  }
}

}  // namespace

Status HtmlReporter::Render(const RunResult& result, std::ostream& out) const {
  const OutcomeCounts counts = CountOutcomes(result);
  Json blob;
  Json scenarios = Json::array();

  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // An empty icon: no favicon request, so a file:// page logs no failed load.
      << "<link rel=\"icon\" href=\"data:,\">\n"
      << "<title>lockstep: " << HtmlEscape(SummaryLine(counts)) << "</title>\n"
      << "<style>\n" << HtmlStyleSource() << "</style>\n"
      << "<script id=\"lockstep-error-capture\">\n" << HtmlErrorCaptureSource() << "</script>\n";
  if (options_.inline_chart_js) {
    out << "<script>\n" << ChartJsSource() << "\n</script>\n";
  } else {
    out << "<script>/* Chart.js left out (HtmlReporterOptions::inline_chart_js = false) */</script>\n";
  }
  out << "</head>\n<body>\n<pre id=\"lockstep-errors\" hidden></pre>\n";
  out << "<h1>lockstep: " << HtmlEscape(SummaryLine(counts)) << "</h1>\n";
  ContextTable(out, result);
  SummaryTable(out, result);

  for (size_t i = 0; i < result.scenarios.size(); ++i) {
    const ScenarioResult& s = result.scenarios[i];
    Json entry;
    entry["index"] = i;
    out << "<section class=\"scenario\" id=\"scenario-" << i << "\">\n";
    out << "<h2>" << HtmlEscape(s.id) << " <span class=\"" << OutcomeClass(s.outcome) << "\">"
        << OutcomeWord(s.outcome) << "</span></h2>\n";
    out << "<p class=\"note\">" << HtmlEscape(s.file) << ":" << s.line;
    for (const std::string& part : {s.mode, s.backend}) {
      if (!part.empty()) out << " &middot; " << HtmlEscape(part);
    }
    out << " &middot; " << s.ranks << " ranks &middot; " << s.steps << " steps &middot; "
        << FormatSeconds(s.duration_s);
    if (!s.run_dir.empty()) out << " &middot; traces in " << HtmlEscape(s.run_dir);
    out << "</p>\n";
    if (!s.description.empty()) out << "<p>" << HtmlEscape(s.description) << "</p>\n";
    if (!s.reason.empty()) out << "<p><b>Reason:</b> " << HtmlEscape(s.reason) << "</p>\n";
    Verdicts(out, s);
    FindingsTable(out, s);

    const ScenarioSeries& series = s.series;
    if (!series.steps.empty() && !series.loss_by_rank.empty()) {
      ChartData loss = LossData(series);
      out << Canvas("loss-" + std::to_string(i), 300, loss.points, "loss per rank per step");
      entry["loss"] = std::move(loss.json);
    } else {
      out << "<p class=\"note\">No loss values recorded.</p>\n";
    }
    if (!series.divergent_cells.empty()) {
      size_t rows_omitted = 0;
      ChartData div = DivergenceData(series, &rows_omitted);
      const size_t rows = div.json["tensors"].size();
      div.json["min_step"] = series.steps.empty() ? 0 : series.steps.front();
      div.json["max_step"] = series.steps.empty() ? 0 : series.steps.back();
      out << Canvas("divergence-" + std::to_string(i), 90 + 18 * static_cast<int>(rows), div.points,
                    "divergence map: step by tensor");
      if (rows_omitted > 0 || series.divergent_cells_omitted > 0) {
        out << "<p class=\"note\">Divergence map shows " << rows << " tensors";
        if (rows_omitted > 0) out << " (" << rows_omitted << " more diverge)";
        if (series.divergent_cells_omitted > 0) {
          out << "; " << series.divergent_cells_omitted << " later divergent cells were not recorded (cap)";
        }
        out << ". report.json has the recorded cells.</p>\n";
      }
      entry["divergence"] = std::move(div.json);
    } else if (!series.tensors.empty()) {
      out << "<p class=\"note\">Divergence map: all " << series.tensors.size()
          << " replicated tensors agree across ranks at every recorded step.</p>\n";
    }
    if (ShowsTimeline(s)) {
      ChartData timeline = TimelineData(s);
      const int ranks = static_cast<int>(timeline.json["ranks"].size());
      out << Canvas("timeline-" + std::to_string(i), 90 + 32 * ranks, timeline.points,
                    "timeline of the last collectives per rank");
      entry["timeline"] = std::move(timeline.json);
    }
    RankLogs(out, s);
    out << "</section>\n";
    scenarios.push_back(std::move(entry));
  }

  blob["scenarios"] = std::move(scenarios);
  out << "<script type=\"application/json\" id=\"lockstep-data\">" << ScriptSafeJson(blob) << "</script>\n";
  out << "<script>\n" << HtmlRenderSource() << "</script>\n</body>\n</html>\n";
  if (!out) return IoError("html reporter: write failed");
  return Status::Ok();
}

}  // namespace lockstep
