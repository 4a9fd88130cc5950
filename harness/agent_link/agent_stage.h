// What the launcher and a node's agent agree on besides their messages (agent_message.h): the
// layout of a node's stage folder for the launch and where the agent finds the launch's secret.
#pragma once

#include <filesystem>

namespace lockstep {

// The launch's secret, in the agent's environment (srun exports the launcher's to its tasks).
inline constexpr const char* kAgentTokenEnv = "LOCKSTEP_AGENT_TOKEN";

// The folders of a stage: the ranks' traces and logs.
inline std::filesystem::path StageTraceDir(const std::filesystem::path& stage) { return stage / "traces"; }
inline std::filesystem::path StageLogDir(const std::filesystem::path& stage) { return stage / "logs"; }

}  // namespace lockstep
