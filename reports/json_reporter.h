// report.json (schema lockstep.report/1), the machine-readable result every other format can be
// rendered again from (`lockstep report DIR`).
#pragma once

#include "reports/reporter.h"

namespace lockstep {

class JsonReporter : public Reporter {
 public:
  std::string name() const override { return "json"; }
  Status Render(const RunResult& result, std::ostream& out) const override;
};

}  // namespace lockstep
