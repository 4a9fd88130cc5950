#include "harness/result/finding.h"

namespace lockstep {

// report.json writes and reads these names.
template <>
const NameTable<FindingOutcome>& NamesOf<FindingOutcome>() {
  static const NameTable<FindingOutcome> kTable = {
      {"fail", FindingOutcome::kFail}, {"expected", FindingOutcome::kExpected}, {"error", FindingOutcome::kError}};
  return kTable;
}

const char* ToString(FindingOutcome outcome) { return NameOf(outcome); }

}  // namespace lockstep
