#include "reports/html_reporter.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/chart_js.h"
#include "reports/golden_file_testutil.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Render(const RunResult& result, bool inline_chart_js = false) {
  std::ostringstream out;
  HtmlReporterOptions options;
  options.inline_chart_js = inline_chart_js;
  Status status = HtmlReporter(options).Render(result, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out.str();
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

nlohmann::json DataBlob(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"lockstep-data\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

std::string CanvasTag(const std::string& html, const std::string& id) {
  const size_t begin = html.find("<canvas id=\"" + id + "\"");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find('>', begin) - begin + 1);
}

TEST(HtmlReporterTest, GoldenClean) { testing::ExpectMatchesGolden(Render(testing::LoadFixture("clean")), "clean.html"); }
TEST(HtmlReporterTest, GoldenMixed) { testing::ExpectMatchesGolden(Render(testing::LoadFixture("mixed")), "mixed.html"); }
TEST(HtmlReporterTest, GoldenHostile) {
  testing::ExpectMatchesGolden(Render(testing::LoadFixture("hostile")), "hostile.html");
}

TEST(HtmlReporterTest, EachContextFieldOnce) {
  // The canned context has the git sha as a row and again among the versions ("git_sha").
  const RunResult mixed = testing::LoadFixture("mixed");
  ASSERT_EQ(mixed.context.versions.count("git_sha"), 1u);
  const std::string html = Render(mixed);
  EXPECT_EQ(Count(html, "<th>git sha</th>"), 1u);
  EXPECT_EQ(Count(html, "<th>git_sha</th>"), 0u);
  EXPECT_EQ(Count(html, "<th>libtorch</th>"), 1u);  // the other versions stay
}

TEST(HtmlReporterTest, ShowsTheCauseUnderItsFindingAndInTheSummary) {
  const std::string html = Render(testing::LoadFixture("mixed"));
  const std::string line =
      "<div class=\"cause\">cause: rank 1&#39;s gradients are 4x the others&#39; (every divergent gradient at step "
      "3): a sum not divided by the world size (4)</div>";
  EXPECT_EQ(Count(html, line), 2u) << "once in the findings table, once in the summary's first finding";
  EXPECT_EQ(Count(Render(testing::LoadFixture("clean")), "class=\"cause\""), 0u);
}

// What each checker compared, beside its verdict; a pass that compared no parameter says so.
TEST(HtmlReporterTest, SaysWhatEachCheckerCompared) {
  RunResult run = testing::LoadFixture("clean");
  ASSERT_FALSE(run.scenarios.empty());
  ScenarioResult& s = run.scenarios[0];
  s.checkers.clear();
  s.checkers.push_back({"replica_weights", Outcome::kPass, 0.0, "", CheckerCoverage{"param", 0, 0, 0, 0}});
  s.checkers.push_back({"optimizer_state", Outcome::kPass, 0.0, "", CheckerCoverage{"optimizer_state", 2, 5, 1, 10}});
  const std::string html = Render(run);
  EXPECT_EQ(Count(html, "optimizer_state <span class=\"good\">pass</span> (2 optimizer_state tensors in 5 steps, 1 group)"), 1u)
      << html;
  EXPECT_EQ(Count(html, "(no param tensor held by two ranks that must agree)"), 1u);
  EXPECT_EQ(Count(html, "no parameter had a replica to compare (replica_weights compared nothing)"), 1u);
}

TEST(HtmlReporterTest, InlinesChartJsForOfflineUse) {
  const std::string html = Render(testing::LoadFixture("clean"), /*inline_chart_js=*/true);
  ASSERT_GT(ChartJsSource().size(), 100000u);
  EXPECT_THAT(std::string(ChartJsSource().substr(0, 200)), HasSubstr("Chart.js v"));
  EXPECT_THAT(html, HasSubstr(std::string(ChartJsSource())));
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));  // nothing fetched from the network
  EXPECT_THAT(html, Not(HasSubstr("href=\"http")));
}

TEST(HtmlReporterTest, IsDeterministic) {
  const RunResult r = testing::LoadFixture("mixed");
  EXPECT_EQ(Render(r, true), Render(r, true));
}

TEST(HtmlReporterTest, ChartsCarryTheirData) {
  const std::string html = Render(testing::LoadFixture("mixed"));
  // ddp_grad_not_reduced is scenario 1: 4 ranks x 5 finite losses, 9 divergent cells, no hang.
  EXPECT_THAT(CanvasTag(html, "loss-1"), HasSubstr("data-points=\"20\""));
  EXPECT_THAT(CanvasTag(html, "divergence-1"), HasSubstr("data-points=\"9\""));
  EXPECT_EQ(CanvasTag(html, "timeline-1"), "");
  // ddp_hang is scenario 6: 12 completed and 3 stuck collectives.
  EXPECT_THAT(CanvasTag(html, "timeline-6"), HasSubstr("data-points=\"15\""));
  // ddp_lr_blowup (4): infinite losses are gaps, not points.
  EXPECT_THAT(CanvasTag(html, "loss-4"), HasSubstr("data-points=\"2\""));
  // ddp_launch_error (5) has no series at all.
  EXPECT_EQ(CanvasTag(html, "loss-5"), "");
  EXPECT_THAT(html, HasSubstr("<section class=\"scenario\" id=\"scenario-5\">"));

  const nlohmann::json blob = DataBlob(html);
  const auto& hang = blob["scenarios"][6]["timeline"];
  EXPECT_EQ(hang["ranks"], nlohmann::json({"rank 0", "rank 1", "rank 2", "rank 3"}));
  int stuck = 0;
  for (const auto& bar : hang["bars"]) stuck += bar["in_flight"].get<bool>() ? 1 : 0;
  EXPECT_EQ(stuck, 3);
  const auto& cell = blob["scenarios"][1]["divergence"]["cells"][0];
  EXPECT_EQ(cell["x"], 3);
  EXPECT_EQ(cell["y"], "fc1.weight");
  EXPECT_EQ(cell["groups"][0]["ranks"], nlohmann::json({0, 2, 3}));
  EXPECT_EQ(cell["groups"][1]["digest"], "9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49");
}

TEST(HtmlReporterTest, HostileNamesCannotEscape) {
  const std::string html = Render(testing::LoadFixture("hostile"));
  // Only the four script elements the reporter writes: error capture, library, data, renderer.
  EXPECT_EQ(Count(html, "<script"), 4u);
  EXPECT_EQ(Count(html, "</script"), 4u);
  EXPECT_EQ(Count(html, "<!--"), 0u);
  EXPECT_THAT(html, HasSubstr("bad&amp;name"));
  EXPECT_THAT(html, HasSubstr("&lt;/script&gt;&lt;!--&lt;script&gt;"));
  EXPECT_THAT(html, HasSubstr("quote&quot;&#39;s"));
  EXPECT_THAT(html, HasSubstr("unicode-日本語-αβγ-🚀"));
  EXPECT_THAT(html, Not(HasSubstr("\x01")));
  EXPECT_THAT(html, Not(HasSubstr("\xED\xA0\x80")));
  const nlohmann::json blob = DataBlob(html);  // still parses, names intact
  EXPECT_EQ(blob["scenarios"][7]["divergence"]["cells"][0]["y"], "layer<7>.weight&\"x\"]]>");
}

// The page's own drawing script, run under Node against a stand-in DOM. With `real_chart_js` the
// Chart.js inlined into the page draws every chart for real (its BasicPlatform on a recording 2D
// context): a bad chart configuration throws or logs there as it would in a browser. Otherwise a
// stand-in Chart records the configurations. Either way the script must run to the end, draw each
// canvas with as many points as the canvas declares, log nothing to the console, and its tooltip
// callbacks must work. (A real browser is the Chromium test's job.)
constexpr const char* kNodeDriver = R"js(
const fs = require('fs');
const [page, mode] = process.argv.slice(2);
const html = fs.readFileSync(page, 'utf8');
const logged = [];
for (const level of ['error', 'warn', 'log', 'info']) console[level] = (...args) => logged.push(level + ': ' + args.join(' '));
const blob = html.match(/<script type="application\/json" id="lockstep-data">([\s\S]*?)<\/script>/)[1];
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(m => m[1]);
const canvases = {};
for (const m of html.matchAll(/<canvas id="([^"]+)" width="(\d+)" height="(\d+)" data-points="(\d+)"/g)) {
  canvases[m[1]] = {width: +m[2], height: +m[3], declared: +m[4]};
}
const configs = [];
const drawn = [];
if (mode === 'real') {
  (0, eval)(scripts[0]);  // the inlined library: its UMD wrapper sets globalThis.Chart
  const RealChart = globalThis.Chart;
  const recordingCanvas = (w, h) => {
    const canvas = {width: w, height: h, style: {}};
    const state = {canvas, getLineDash: () => [], createLinearGradient: () => ({addColorStop() {}}),
                   measureText: t => ({width: String(t).length * 6, actualBoundingBoxAscent: 8, actualBoundingBoxDescent: 2})};
    const ctx = new Proxy(state, {get: (t, k) => (k in t ? t[k] : () => {}), set: (t, k, v) => { t[k] = v; return true; }});
    canvas.getContext = () => ctx;
    return canvas;
  };
  globalThis.Chart = function (stub, config) {
    configs.push(config);
    config.platform = RealChart.BasicPlatform;
    const chart = new RealChart(recordingCanvas(stub.width, stub.height), config);
    drawn.push(chart);
    return chart;
  };
} else {
  globalThis.Chart = function (stub, config) { this.data = config.data; configs.push(config); };
}
globalThis.window = {};
globalThis.document = {
  body: {setAttribute() {}},
  getElementById(id) {
    if (id === 'lockstep-data') return {textContent: blob};
    const c = canvases[id];
    return c ? Object.assign(c, {setAttribute(k, v) { c[k] = v; }}) : null;
  },
};
(0, eval)(scripts[scripts.length - 1]);
const laidOut = drawn.map(chart => chart.data.datasets.map((d, i) => [d.data.length, chart.getDatasetMeta(i).data.length]));
const tooltips = [];
for (const config of configs) {
  const cb = config.options.plugins.tooltip && config.options.plugins.tooltip.callbacks;
  for (const dataset of config.data.datasets) {
    if (!cb || dataset.data.length === 0) continue;
    const item = {raw: dataset.data[0]};
    tooltips.push([].concat(cb.title ? cb.title([item]) : [], cb.label(item)).join(' | '));
  }
}
process.stdout.write(JSON.stringify({
  rendered: window.lockstepRendered, logged, laidOut,
  charts: window.lockstepCharts.map(c => ({id: c.id, kind: c.kind, points: c.points,
                                           declared: canvases[c.id].declared, drawn: canvases[c.id]['data-drawn']})),
  canvases: Object.keys(canvases).length, tooltips}));
)js";

nlohmann::json RunInNode(const std::string& fixture, bool real_chart_js) {
  // Per test and mode, so that ctest -j running tests side by side never shares a file.
  static const testing::TempDir scratch("lockstep_html_test_");  // removed when the test program ends
  const std::string dir =
      (scratch / (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_")).string();
  const std::string page = dir + fixture + (real_chart_js ? ".real.html" : ".stub.html");
  std::ofstream(page) << Render(testing::LoadFixture(fixture), /*inline_chart_js=*/real_chart_js);
  const std::string driver = dir + fixture + "_driver.js";
  std::ofstream(driver) << kNodeDriver;
  FILE* pipe = popen(("node '" + driver + "' '" + page + "' " + (real_chart_js ? "real" : "stub") + " 2>&1").c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return nullptr;
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) output.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << output;
  nlohmann::json r = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(r.is_discarded()) << output;
  return r;
}

void ExpectEveryCanvasDrawn(const nlohmann::json& r) {
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(r["rendered"].get<bool>());
  EXPECT_EQ(r["logged"], nlohmann::json::array());  // no console errors or warnings
  EXPECT_EQ(r["charts"].size(), r["canvases"].get<size_t>());
  for (const auto& c : r["charts"]) {
    EXPECT_EQ(c["points"], c["declared"]) << c.dump();
    EXPECT_EQ(c["drawn"], std::to_string(c["points"].get<int>())) << c.dump();
  }
  for (const auto& chart : r["laidOut"]) {
    for (const auto& dataset : chart) EXPECT_EQ(dataset[0], dataset[1]) << r["laidOut"].dump();
  }
}

void ExpectTooltips(const nlohmann::json& r) {
  bool divergence_tooltip = false, timeline_tooltip = false;
  for (const auto& t : r["tooltips"]) {
    const std::string s = t.get<std::string>();
    divergence_tooltip |= s == "step 3, fc1.weight | ranks [0, 2, 3]: 3f1e0c9a5b7d2e4f8a6c1b3d5e7f9a0b | ranks [1]: "
                               "9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49";
    timeline_tooltip |= s.find("all_reduce world seq 17 (step 4), never completed") != std::string::npos;
  }
  EXPECT_TRUE(divergence_tooltip) << r["tooltips"].dump();
  EXPECT_TRUE(timeline_tooltip) << r["tooltips"].dump();
}

bool HaveNode() { return std::system("node --version > /dev/null 2>&1") == 0; }

TEST(HtmlReporterTest, RenderScriptDrawsEveryCanvas) {
  if (!HaveNode()) GTEST_SKIP() << "node not found (Debian package nodejs): render script not run";
  const nlohmann::json r = RunInNode("mixed", /*real_chart_js=*/false);
  ExpectEveryCanvasDrawn(r);
  EXPECT_EQ(r["charts"].size(), 9u);  // 6 loss curves, 2 divergence maps, 1 hang timeline
  ExpectTooltips(r);
}

TEST(HtmlReporterTest, InlinedChartJsDrawsEveryChart) {
  if (!HaveNode()) GTEST_SKIP() << "node not found (Debian package nodejs): Chart.js not run";
  for (const char* fixture : {"clean", "mixed", "hostile"}) {
    SCOPED_TRACE(fixture);
    const nlohmann::json r = RunInNode(fixture, /*real_chart_js=*/true);
    ExpectEveryCanvasDrawn(r);
    EXPECT_EQ(r["laidOut"].size(), r["charts"].size());
    if (std::string(fixture) == "mixed") ExpectTooltips(r);
  }
}

}  // namespace
}  // namespace lockstep
