// The names of every checker, for scenario validation (`checks:`) and the registry. Kept in one
// place so a scenario that names a checker that does not exist fails before anything runs.
#pragma once

#include <array>
#include <string_view>

namespace lockstep {

inline constexpr std::array<std::string_view, 12> kCheckerNames = {
    "replica_weights", "synced_grads", "optimizer_state", "buffers",  "collective_order",
    "discovery_count", "finite",       "hang",            "crash",    "reference",
    "determinism",     "golden",
};

}  // namespace lockstep
