#include "harness/trace/footer_status.h"

namespace lockstep {

bool IsErrorFooterStatus(const std::string& status) {
  return status != "ok" && status.rfind("stopped after step ", 0) != 0 && status.rfind("fail-fast: ", 0) != 0;
}

bool IsCommunicationFailure(const std::string& status) { return status.rfind("communication: ", 0) == 0; }

}  // namespace lockstep
