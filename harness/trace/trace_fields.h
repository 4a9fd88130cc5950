// The trace format's names (docs/TRACE.md), each written once: the writer, the parser and the
// JSON shape `lockstep trace dump` prints all take them from here, as report.json's writer and
// reader take theirs from run_result_json.cc's `key::` constants.
#pragma once

namespace lockstep::trace_field {

// Every record's `type`, and its values.
inline constexpr const char* kType = "type";
inline constexpr const char* kHeaderRecord = "header";
inline constexpr const char* kTensorsRecord = "tensors";
inline constexpr const char* kStepRecord = "step";
inline constexpr const char* kCollectiveBeginRecord = "collective_begin";
inline constexpr const char* kCollectiveEndRecord = "collective_end";
inline constexpr const char* kDiscoveryRecord = "discovery";
inline constexpr const char* kHeartbeatRecord = "heartbeat";
inline constexpr const char* kFooterRecord = "footer";
inline constexpr const char* kLogRecord = "log";
inline constexpr const char* kReplicaGroupRecord = "replica_group";  // since 2.2

// The header.
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

// Added in 2.1: the header's settings that change numerics or collectives (world_settings.h).
inline constexpr const char* kEnvironment = "environment";

// A tensor: in a `tensors` record (name, kind, numel, dtype, replicated) and in /1's steps (also digest, norm).
inline constexpr const char* kTensors = "tensors";
inline constexpr const char* kName = "name";
inline constexpr const char* kKind = "kind";
inline constexpr const char* kNumel = "numel";
inline constexpr const char* kDtype = "dtype";
inline constexpr const char* kReplicated = "replicated";
inline constexpr const char* kDigest = "digest";
inline constexpr const char* kNorm = "norm";

// Added in 2.2: a `replica_group` record (id, ranks, label), and a tensor's `group` (its id in a
// `tensors` record; `lockstep trace dump` writes the group itself, {ranks, label}).
inline constexpr const char* kId = "id";
inline constexpr const char* kRanks = "ranks";
inline constexpr const char* kLabel = "label";
// kGroup ("group", below) names a tensor's replica group as it names a collective's group.

// A step: its scalars, and /2's packed table of `n` tensors.
inline constexpr const char* kStep = "step";
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kGradNorm = "grad_norm";
inline constexpr const char* kLr = "lr";
inline constexpr const char* kWallS = "wall_s";
inline constexpr const char* kN = "n";
inline constexpr const char* kTable = "table";
// Added in 2.3: the optimizer settings the step ran with, {"opt0.group0.lr": 0.01, ...}.
inline constexpr const char* kOptimizer = "optimizer";
// Added in 2.4: the parameters written after the optimizer step, before the record (where watched).
inline constexpr const char* kEditedAfterUpdate = "edited_after_update";
// Added in 2.4: the replicated inputs of the step's tensor-parallel modules, each
// {module, input, digest, forwards, ranks, label} (kDigest, kRanks and kLabel as above).
inline constexpr const char* kTpInputs = "tp_replicated_inputs";
inline constexpr const char* kModule = "module";
inline constexpr const char* kInput = "input";
// Also a step's own field since 2.5: its training forward passes (StepRecord::forwards).
inline constexpr const char* kForwards = "forwards";

// A collective's begin and end.
inline constexpr const char* kGroup = "group";
inline constexpr const char* kSeq = "seq";
inline constexpr const char* kOp = "op";
inline constexpr const char* kCount = "count";
inline constexpr const char* kRoot = "root";
inline constexpr const char* kReduce = "reduce";
inline constexpr const char* kStartS = "start_s";
inline constexpr const char* kEndS = "end_s";
// Added in 2.3: an all_to_all's split sizes in elements, and this rank's rank in its group.
inline constexpr const char* kGroupRank = "group_rank";
inline constexpr const char* kInSplits = "in_splits";
inline constexpr const char* kOutSplits = "out_splits";

// A discovery call.
inline constexpr const char* kCall = "call";
inline constexpr const char* kPhase = "phase";
inline constexpr const char* kWhere = "where";
inline constexpr const char* kComm = "comm";

// The footer and a log line.
inline constexpr const char* kStepsCompleted = "steps_completed";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kLine = "line";

}  // namespace lockstep::trace_field
