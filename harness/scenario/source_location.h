// A place in a scenario file, for the messages that point at it.
#pragma once

#include <string>

namespace lockstep {

// 1-based position in a scenario file; line 0 means "no position" (built in code).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

}  // namespace lockstep
