// JUnit XML for CI test publishers: a <testsuite> per scenario, a <testcase> per checker.
// Layout and the attributes each publisher reads: docs/REPORTS.md. Valid XML 1.0 whatever the
// names contain (see text_escape.h).
#pragma once

#include "reports/reporter.h"

namespace lockstep {

class JunitReporter : public Reporter {
 public:
  std::string name() const override { return "junit"; }
  Status Render(const RunResult& result, std::ostream& out) const override;
};

}  // namespace lockstep
