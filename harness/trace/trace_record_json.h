// A trace record as one JSON object in the shape of lockstep.trace/1's records, whatever version
// the trace was written in: a step lists its tensors, each with its name, kind, digest (32 hex
// digits), numel, dtype, norm and replicated. For people and scripts (`lockstep trace dump`):
// one shape to grep and jq, while the file itself stays compact.
#pragma once

#include <string>

#include "harness/trace/trace_record.h"

namespace lockstep {

// One line of JSON without its newline. Non-finite doubles are "nan", "inf", "-inf" as in the
// trace; text that is not UTF-8 has U+FFFD in its place.
std::string TraceRecordToJson(const TraceRecord& record);

}  // namespace lockstep
