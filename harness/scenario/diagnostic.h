// One problem in a scenario file, as the loader reports it and `lockstep validate` prints it.
#pragma once

#include <string>

#include "harness/scenario/source_location.h"

namespace lockstep {

// `location.line` is 0 when the problem is the path itself (no such file, a folder without
// scenarios) rather than a place in a file.
struct Diagnostic {
  SourceLocation location;
  std::string message;
  // "path:line:col: message", or "path: message" without a position.
  std::string ToString() const;
};

}  // namespace lockstep
