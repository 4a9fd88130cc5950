// One self-contained HTML file: run context, summary table, and per scenario a loss chart (one
// line per rank), a divergence map (step x tensor, hover shows rank groups and digests) and, for
// hangs, a timeline of each rank's last collectives. Charts are drawn by Chart.js, inlined from
// Debian's libjs-chart.js at build time, so the file opens offline from a downloaded artifact.
//
// For browser tests the page is deterministic (no clock, no animation, fixed canvas sizes); every
// chart canvas has an id ("loss-0", "divergence-0", "timeline-0") and a data-points attribute,
// and after drawing, window.lockstepCharts lists {id, kind, points} of each chart drawn and
// window.lockstepRendered is true. In the DOM, for headless browsers' --dump-dom: <html
// data-errors="N"> counts the page's uncaught errors and console errors/warnings (listed in the
// hidden <pre id="lockstep-errors">), and <body data-rendered="true" data-charts="N"> is set once
// every chart was drawn.
#pragma once

#include "reports/reporter.h"

namespace lockstep {

struct HtmlReporterOptions {
  // false: a placeholder comment instead of the 200 KB library (golden files stay readable).
  bool inline_chart_js = true;
};

class HtmlReporter : public Reporter {
 public:
  explicit HtmlReporter(HtmlReporterOptions options = {}) : options_(options) {}
  std::string name() const override { return "html"; }
  Status Render(const RunResult& result, std::ostream& out) const override;

 private:
  HtmlReporterOptions options_;
};

}  // namespace lockstep
