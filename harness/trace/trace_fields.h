// The trace format's field names (docs/TRACE.md), each written once: the writer, the parser and
// the JSON shape `lockstep trace dump` prints all take them from here, as report.json's writer
// and reader take theirs from run_result_json.cc's `key::` constants.
#pragma once

namespace lockstep::trace_field {

inline constexpr const char* kType = "type";

// The header record.
inline constexpr const char* kHeaderType = "header";
inline constexpr const char* kSchema = "schema";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kLocalRank = "local_rank";
inline constexpr const char* kSlice = "slice";
inline constexpr const char* kHost = "host";
inline constexpr const char* kPid = "pid";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kBackend = "backend";
inline constexpr const char* kScenarioId = "scenario_id";
inline constexpr const char* kScenarioDigest = "scenario_digest";
inline constexpr const char* kVersions = "versions";
// Added in 2.1: the settings that change numerics or collectives (harness/trace/world_settings.h).
inline constexpr const char* kEnvironment = "environment";

}  // namespace lockstep::trace_field
