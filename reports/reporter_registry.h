// File reporters by name (google/benchmark style factory), and the atomic file write they share:
// a report is written to FILE.tmp and renamed over FILE, so a render that fails half-way never
// destroys the report a previous run left there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "reports/reporter.h"

namespace lockstep {

// "json", "junit", "markdown", "html": each reporter's name(), in the registry's order.
std::vector<std::string> ReporterNames();

// A file report the command line asks for with `--<format> FILE`. json has none: `lockstep run`
// always writes report.json.
struct ReportFlag {
  std::string format;  // the reporter's name, also the flag's
  std::string help;
};
std::vector<ReportFlag> ReportFileFlags();

// NotFound (listing the known names) for an unknown name.
Result<std::unique_ptr<Reporter>> MakeReporter(const std::string& name);

// Writes `contents` to path + ".tmp", flushes it, and renames it over `path`.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

// Renders into memory first, then WriteFileAtomically: a failed render leaves `path` untouched.
Status RenderToFile(const Reporter& reporter, const RunResult& result, const std::string& path);

}  // namespace lockstep
