// The environment variables a trace header records (`environment`, docs/TRACE.md): those that
// change how a rank computes or communicates, so that ranks that disagree on them can be named
// (checkers/config_agreement_checker.h). Settings that legitimately differ per rank or node
// (RANK, LOCAL_RANK, NCCL_SOCKET_IFNAME, NCCL_DEBUG_FILE) are not among them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

// Every recorded variable, by name, in the order docs/TRACE.md lists them.
const std::vector<std::string_view>& WorldSettingVariables();

// The recorded variables this process has set, with their values (unset ones are absent).
std::map<std::string, std::string> RecordedEnvironment();

}  // namespace lockstep
