// A checker's verdict is data: a finding says what went wrong, where (step, tensor, collective)
// and on which ranks. Exceptions and error Statuses are reserved for the harness breaking.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/name_table.h"

namespace lockstep {

enum class FindingOutcome {
  kFail,      // a problem nobody expected
  kExpected,  // matches an `expect:` entry of the scenario (an injected bug was caught)
  kError,     // the checker could not judge (missing data); counts as a failure
};
template <> const NameTable<FindingOutcome>& NamesOf<FindingOutcome>();
const char* ToString(FindingOutcome outcome);

struct Finding {
  std::string checker;
  FindingOutcome outcome = FindingOutcome::kFail;
  std::optional<int64_t> step;
  std::string tensor;                 // first/representative tensor; "" when not tensor-specific
  std::vector<std::string> tensors;   // all divergent tensors at `step` (may be capped)
  std::vector<int> ranks;             // the odd ranks / the ranks concerned
  std::string message;
  // What probably went wrong, where the records support it (checkers/divergence_cause.h for
  // replica findings, checkers/collective_order_cause.h for collective_order ones): one
  // line, "" when no known cause fits.
  std::string cause;
  std::map<std::string, std::string> details;  // extra, checker-specific ("collective_seq", "max_rel_diff")
};

}  // namespace lockstep
