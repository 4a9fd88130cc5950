#include "harness/scenario/diagnostic.h"

namespace lockstep {

std::string Diagnostic::ToString() const {
  if (location.line <= 0) return location.file + ": " + message;
  return location.file + ":" + std::to_string(location.line) + ":" + std::to_string(location.column) + ": " + message;
}

}  // namespace lockstep
