// The dtype names lockstep writes into fingerprints, traces and messages ("float32", "int64"),
// the numpy / torch.float32 spelling rather than c10's "Float", so traces read the same as Python.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace lockstep {

std::string DtypeName(c10::ScalarType dtype);

}  // namespace lockstep
