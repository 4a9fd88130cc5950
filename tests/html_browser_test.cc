// The HTML report in a real browser: headless Chromium (Debian's chromium) loads the report of a
// failing run from a file:// URL, as a user opens a downloaded artifact, with no network. The
// page must run without a console error and draw every chart with data; a screenshot is kept.
//
// The page tells what happened in its DOM, which --dump-dom prints after the load event
// (reports/html_reporter.cc): <html data-errors="N"> counts uncaught errors and console
// errors/warnings (listed in #lockstep-errors), <body data-rendered="true" data-charts="N"> is
// set once every chart was drawn, and each <canvas data-points="P"> gets data-drawn="P" when
// Chart.js laid out its P points. Chromium's own console log (--enable-logging=stderr) is checked too.
//
// Which report: $LOCKSTEP_HTML_REPORT when set (e.g. out/report.html of a failing injection
// run), else the canned failing run fixtures/reports/mixed.report.json rendered by the HTML
// reporter. Which browser: $LOCKSTEP_CHROMIUM, else chromium or google-chrome on PATH; none: skip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"
#include "harness/result/run_result_json.h"
#include "reports/reporter_registry.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ProgramResult;

constexpr int kBrowserTimeoutS = 120;

// Each test writes under its own folder: ctest runs the tests of this binary side by side.
fs::path ArtifactDir() {
  return fs::path(LOCKSTEP_BINARY_DIR) / "html_browser_test" /
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FindChromium() {
  if (const char* env = std::getenv("LOCKSTEP_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    // Not Ubuntu's chromium-browser: a wrapper around a snap, which does not run in containers.
    for (const char* name : {"chromium", "google-chrome-stable", "google-chrome"}) {
      const fs::path candidate = fs::path(dir) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

// The report under test, as an absolute path.
fs::path ReportUnderTest() {
  if (const char* env = std::getenv("LOCKSTEP_HTML_REPORT"); env && *env) return fs::absolute(env);
  const fs::path html = ArtifactDir() / "mixed.html";
  Result<RunResult> result =
      ReadRunResultFile((fs::path(LOCKSTEP_SOURCE_DIR) / "fixtures/reports/mixed.report.json").string());
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  Result<std::unique_ptr<Reporter>> reporter = MakeReporter("html");
  EXPECT_TRUE(reporter.ok()) << reporter.status().ToString();
  if (result.ok() && reporter.ok()) {
    Status written = RenderToFile(**reporter, *result, html.string());
    EXPECT_TRUE(written.ok()) << written.ToString();
  }
  return html;
}

struct BrowserRun {
  ProgramResult result;
  std::vector<std::string> console;  // Chromium's CONSOLE log lines: whatever the page logged
};

// One headless Chromium run on `page` with a fresh profile, so no state leaks between runs.
BrowserRun RunChromium(const std::string& chromium, const fs::path& page, const std::vector<std::string>& extra) {
  const testing::TempDir profile("lockstep_chromium_");
  std::vector<std::string> args = {std::to_string(kBrowserTimeoutS),
                                   chromium,
                                   "--headless",
                                   "--no-sandbox",  // tests run as root in containers
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--user-data-dir=" + profile.path().string(),
                                   "--enable-logging=stderr",
                                   "--v=0"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("file://" + page.string());
  BrowserRun run;
  run.result = testing::RunProgram("/usr/bin/timeout", args, ArtifactDir());
  for (const std::string& line : testing::Lines(run.result.err)) {
    if (line.find(":CONSOLE") != std::string::npos) run.console.push_back(line);
  }
  return run;
}

std::string Attribute(const std::string& tag, const std::string& name) {
  const std::regex attr("\\s" + name + "=\"([^\"]*)\"");
  std::smatch m;
  return std::regex_search(tag, m, attr) ? m[1].str() : "";
}

std::vector<std::string> Tags(const std::string& html, const std::string& element) {
  std::vector<std::string> tags;
  const std::regex tag("<" + element + "\\b[^>]*>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator(); ++it) {
    tags.push_back(it->str());
  }
  return tags;
}

// What the page wrote into #lockstep-errors.
std::string ErrorList(const std::string& dom) {
  const std::regex list(R"(<pre id="lockstep-errors"[^>]*>([\s\S]*?)</pre>)");
  std::smatch m;
  return std::regex_search(dom, m, list) ? m[1].str() : "(no #lockstep-errors element)";
}

class HtmlBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium not found (Debian package chromium, installed by ci/install-deps.sh; or set "
                      "LOCKSTEP_CHROMIUM): the HTML report was not checked in a browser";
    }
    fs::create_directories(ArtifactDir());
    page_ = ReportUnderTest();
    ASSERT_TRUE(fs::is_regular_file(page_)) << page_;
    std::cout << "report under test: " << page_.string() << "\n";
  }

  std::string chromium_;
  fs::path page_;
};

TEST_F(HtmlBrowserTest, RendersEveryChartWithDataAndNoConsoleError) {
  const std::string source = ReadFile(page_);
  const std::vector<std::string> declared = Tags(source, "canvas");
  ASSERT_FALSE(declared.empty()) << "the report has no chart at all";

  BrowserRun run = RunChromium(chromium_, page_, {"--dump-dom"});
  ASSERT_EQ(run.result.exit_code, 0) << "chromium failed:\n" << run.result.err;
  const std::string& dom = run.result.out;
  std::ofstream(ArtifactDir() / (page_.stem().string() + ".dom.html")) << dom;
  ASSERT_THAT(dom, HasSubstr("</html>")) << "no DOM dumped:\n" << run.result.err;

  // No error, uncaught or logged, in the page or in Chromium's console log.
  const std::vector<std::string> html_tag = Tags(dom, "html");
  ASSERT_EQ(html_tag.size(), 1u);
  EXPECT_EQ(Attribute(html_tag[0], "data-errors"), "0") << ErrorList(dom);
  EXPECT_EQ(ErrorList(dom), "");
  EXPECT_TRUE(run.console.empty()) << "the page logged:\n" << ::testing::PrintToString(run.console);

  // The render script ran to its end and drew every chart of the page.
  const std::vector<std::string> body = Tags(dom, "body");
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(Attribute(body[0], "data-rendered"), "true") << body[0];
  EXPECT_EQ(Attribute(body[0], "data-charts"), std::to_string(declared.size())) << body[0];
  const std::vector<std::string> canvases = Tags(dom, "canvas");
  ASSERT_EQ(canvases.size(), declared.size());
  for (const std::string& canvas : canvases) {
    SCOPED_TRACE(canvas);
    const std::string points = Attribute(canvas, "data-points");
    EXPECT_GT(std::atoi(points.c_str()), 0) << "a chart without data";
    EXPECT_EQ(Attribute(canvas, "data-drawn"), points) << "not every point was drawn";
  }
}

TEST_F(HtmlBrowserTest, ScreenshotIsKept) {
  const fs::path shot = ArtifactDir() / (page_.stem().string() + ".png");
  fs::remove(shot);
  BrowserRun run = RunChromium(chromium_, page_,
                               {"--screenshot=" + shot.string(), "--window-size=1280,2000", "--hide-scrollbars"});
  ASSERT_EQ(run.result.exit_code, 0) << "chromium failed:\n" << run.result.err;
  ASSERT_TRUE(fs::is_regular_file(shot)) << run.result.err;
  const std::string png = ReadFile(shot);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // A blank 1280x2000 page compresses to a few KB; text, tables and charts do not.
  EXPECT_GT(png.size(), 50u * 1024) << "the screenshot looks blank";
  EXPECT_TRUE(run.console.empty()) << ::testing::PrintToString(run.console);
  RecordProperty("screenshot", shot.string());
  std::cout << "screenshot: " << shot.string() << "\n";
}

// Measures the laid-out page at the window's width and writes what it found into <html>'s data
// attributes, which --dump-dom prints: what overflows its box horizontally (the page, a table
// wider than its container, a cell or <pre> whose content is wider than itself), how many cause
// lines there are and how many of them are laid out (a height, no closed <details> around them),
// and the context table's fields that appear more than once ("git sha" and "git_sha" are one).
constexpr const char* kLayoutProbe = R"js(<script id="lockstep-test-layout">
(function () {
  var html = document.documentElement, over = [];
  if (html.scrollWidth > html.clientWidth) over.push("page:" + html.scrollWidth + ">" + html.clientWidth);
  document.querySelectorAll("table").forEach(function (t, i) {
    var name = t.id || t.className || ("table" + i);
    if (t.offsetWidth > t.parentElement.clientWidth) over.push(name + ":" + t.offsetWidth + ">" + t.parentElement.clientWidth);
    t.querySelectorAll("td, pre").forEach(function (c) {
      if (c.scrollWidth > c.clientWidth + 1) over.push(name + ">" + c.tagName.toLowerCase() + ":" + c.scrollWidth + ">" + c.clientWidth);
    });
  });
  var causes = document.querySelectorAll(".cause"), visible = 0;
  causes.forEach(function (c) {
    if (c.offsetHeight > 0 && c.getClientRects().length > 0 && !c.closest("details:not([open])")) visible++;
  });
  var seen = {}, twice = [];
  document.querySelectorAll("#context th").forEach(function (th) {
    var key = th.textContent.replace(/_/g, " ");
    if (seen[key]) twice.push(key);
    seen[key] = true;
  });
  html.setAttribute("data-overflowing", over.join(" "));
  html.setAttribute("data-causes", String(causes.length));
  html.setAttribute("data-causes-visible", String(visible));
  html.setAttribute("data-context-twice", twice.join(","));
})();
</script>
)js";

struct Layout {
  std::string overflowing, causes, causes_visible, context_twice;
};

// `page` with the layout probe added, in headless Chromium at a 1400 x 900 window.
Layout MeasureLayout(const std::string& chromium, const std::string& page_source, const std::string& name) {
  std::string source = page_source;
  const size_t end = source.rfind("</body>");
  EXPECT_NE(end, std::string::npos);
  if (end != std::string::npos) source.insert(end, kLayoutProbe);
  const fs::path page = ArtifactDir() / name;
  std::ofstream(page) << source;
  BrowserRun run = RunChromium(chromium, page, {"--dump-dom", "--window-size=1400,900"});
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  std::ofstream(ArtifactDir() / (page.stem().string() + ".dom.html")) << run.result.out;
  const std::vector<std::string> html_tag = Tags(run.result.out, "html");
  EXPECT_EQ(html_tag.size(), 1u) << run.result.err;
  if (html_tag.size() != 1) return {};
  EXPECT_EQ(Attribute(html_tag[0], "data-causes").empty(), false) << "the layout probe did not run";
  return Layout{Attribute(html_tag[0], "data-overflowing"), Attribute(html_tag[0], "data-causes"),
                Attribute(html_tag[0], "data-causes-visible"), Attribute(html_tag[0], "data-context-twice")};
}

TEST_F(HtmlBrowserTest, FitsA1400PxWindowWithEveryCauseShownAndEachFieldOnce) {
  const std::string source = ReadFile(page_);
  const Layout layout = MeasureLayout(chromium_, source, "layout.html");
  EXPECT_EQ(layout.overflowing, "") << "wider than its box at 1400 px";
  EXPECT_EQ(layout.context_twice, "") << "context fields shown twice";
  // Every cause line of the page is laid out, none hidden in a closed <details>; the canned
  // failing run has one (its synced_grads finding), in the findings and in the summary.
  EXPECT_EQ(layout.causes_visible, layout.causes);
  if (!std::getenv("LOCKSTEP_HTML_REPORT")) {
    EXPECT_EQ(layout.causes, "2");
  }
}

TEST_F(HtmlBrowserTest, LayoutChecksCatchAWideTableAHiddenCauseAndARepeatedField) {
  // The checks above must be able to fail: a cell that cannot wrap, a cause inside a closed
  // <details>, and the git sha row twice.
  std::string source = ReadFile(page_);
  const size_t context = source.find("<table id=\"context\">\n");
  ASSERT_NE(context, std::string::npos);
  source.insert(context + std::string("<table id=\"context\">\n").size(),
                "<tr><th>git_sha</th><td>again</td></tr>\n");
  const size_t end = source.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  source.insert(end, "<table id=\"wide\"><tr><td style=\"white-space: nowrap\">" + std::string(4000, 'x') +
                         "</td></tr></table>\n<details><summary>more</summary><div class=\"cause\">cause: hidden</div>"
                         "</details>\n");
  const Layout layout = MeasureLayout(chromium_, source, "bad_layout.html");
  EXPECT_THAT(layout.overflowing, HasSubstr("page:"));
  EXPECT_THAT(layout.overflowing, HasSubstr("wide:"));
  EXPECT_THAT(layout.context_twice, HasSubstr("git sha"));
  EXPECT_NE(layout.causes_visible, layout.causes);
}

TEST_F(HtmlBrowserTest, AnErrorInThePageIsCaught) {
  // The checks above must be able to fail: the same page with a script that throws and one that
  // logs an error, and the page's own error list and Chromium's log both show them.
  std::string source = ReadFile(page_);
  const size_t end = source.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  source.insert(end, "<script>console.error('lockstep-test: logged');</script>\n"
                     "<script>lockstepNoSuchFunction();</script>\n");
  const fs::path broken = ArtifactDir() / "broken.html";
  std::ofstream(broken) << source;

  BrowserRun run = RunChromium(chromium_, broken, {"--dump-dom"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string& dom = run.result.out;
  const std::vector<std::string> html_tag = Tags(dom, "html");
  ASSERT_EQ(html_tag.size(), 1u);
  EXPECT_EQ(Attribute(html_tag[0], "data-errors"), "2");
  EXPECT_THAT(ErrorList(dom), HasSubstr("console.error: lockstep-test: logged"));
  EXPECT_THAT(ErrorList(dom), HasSubstr("lockstepNoSuchFunction is not defined"));
  EXPECT_THAT(::testing::PrintToString(run.console), HasSubstr("lockstepNoSuchFunction"));
}

}  // namespace
}  // namespace lockstep
