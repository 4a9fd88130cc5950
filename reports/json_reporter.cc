#include "reports/json_reporter.h"

#include "harness/result/run_result_json.h"

namespace lockstep {

Status JsonReporter::Render(const RunResult& result, std::ostream& out) const {
  out << SerializeRunResult(result);
  if (!out) return IoError("json reporter: write failed");
  return Status::Ok();
}

}  // namespace lockstep
