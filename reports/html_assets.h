// The HTML report's own style sheet and scripts (reports/assets/), embedded into the binary at
// build time by reports/embed_asset.cmake like Chart.js, so the report stays one offline file and
// the CSS and JavaScript stay files an editor and a linter understand.
#pragma once

#include <string_view>

namespace lockstep {

// assets/report.css.
std::string_view HtmlStyleSource();

// assets/error_capture.js. Runs first, before Chart.js: every uncaught error, unhandled
// rejection and console.error/warn of the page is counted on <html data-errors="N"> and listed in
// the hidden #lockstep-errors, so that a headless browser's --dump-dom shows them
// (tests/html_browser_test). Its <script> has an id so that tools looking for the page's plain
// <script> elements (Chart.js, the render script) skip it.
std::string_view HtmlErrorCaptureSource();

// assets/render.js. Draws every chart from the JSON blob. No clock, no animation, fixed sizes:
// the page renders the same way every time (screenshots in browser tests). Kept to ES5 so any
// browser runs it.
std::string_view HtmlRenderSource();

}  // namespace lockstep
