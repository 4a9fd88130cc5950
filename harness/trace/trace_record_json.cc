#include "harness/trace/trace_record_json.h"

#include "harness/trace/trace_fields.h"

#include <cmath>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

namespace lockstep {

namespace f = trace_field;  // the format's names
namespace {

using nlohmann::ordered_json;

ordered_json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ordered_json ToJson(const TraceHeader& h) {
  return {{f::kType, f::kHeaderRecord},           {f::kSchema, h.schema},
          {f::kRank, h.rank},                   {f::kWorldSize, h.world_size},
          {f::kLocalRank, h.local_rank},        {f::kSlice, h.slice},
          {f::kHost, h.host},                   {f::kPid, h.pid},
          {f::kDevice, h.device},               {f::kBackend, h.backend},
          {f::kScenarioId, h.scenario_id},      {f::kScenarioDigest, h.scenario_digest},
          {f::kVersions, h.versions},           {f::kEnvironment, h.environment}};
}

ordered_json ToJson(const StepRecord& s) {
  ordered_json tensors = ordered_json::array();
  for (const TensorRecord& t : s.tensors) {
    tensors.push_back({{f::kName, t.name},
                       {f::kKind, ToString(t.kind)},
                       {f::kDigest, t.digest.ToHex()},
                       {f::kNumel, t.numel},
                       {f::kDtype, t.dtype},
                       {f::kNorm, Number(t.norm)},
                       {f::kReplicated, t.replicated}});
    if (t.group != nullptr) {
      tensors.back()[f::kGroup] = {{f::kRanks, t.group->ranks}, {f::kLabel, t.group->label}};
    }
  }
  ordered_json j = {{f::kType, f::kStepRecord},          {f::kStep, s.step},     {f::kLoss, Number(s.loss)}, {f::kGradNorm, Number(s.grad_norm)},
          {f::kLr, Number(s.lr)},      {f::kWallS, Number(s.wall_s)}, {f::kTensors, std::move(tensors)}};
  if (!s.loss_reported) j.erase(f::kLoss);
  if (!s.optimizer.empty()) {
    ordered_json settings = ordered_json::object();
    for (const auto& [setting, value] : s.optimizer) settings[setting] = Number(value);
    j[f::kOptimizer] = std::move(settings);
  }
  if (s.edited_after_update) j[f::kEditedAfterUpdate] = *s.edited_after_update;
  if (s.forwards) j[f::kForwards] = *s.forwards;
  if (!s.tp_inputs.empty()) {
    ordered_json inputs = ordered_json::array();
    for (const TpInputRecord& in : s.tp_inputs) {
      inputs.push_back({{f::kModule, in.module},          {f::kInput, in.input},
                        {f::kDigest, in.digest.ToHex()},  {f::kForwards, in.forwards},
                        {f::kRanks, in.group.ranks},      {f::kLabel, in.group.label}});
    }
    j[f::kTpInputs] = std::move(inputs);
  }
  return j;
}

ordered_json ToJson(const CollectiveRecord& c) {
  ordered_json j = {{f::kType, f::kCollectiveBeginRecord}, {f::kGroup, c.group}, {f::kSeq, c.seq},   {f::kOp, c.op},
                    {f::kDtype, c.dtype},           {f::kCount, c.count}, {f::kRoot, c.root}, {f::kReduce, c.reduce},
                    {f::kStep, c.step},             {f::kStartS, Number(c.start_s)}};
  if (c.group_rank >= 0) j[f::kGroupRank] = c.group_rank;
  if (!c.in_splits.empty()) j[f::kInSplits] = c.in_splits;
  if (!c.out_splits.empty()) j[f::kOutSplits] = c.out_splits;
  if (c.end_s) j[f::kEndS] = Number(*c.end_s);
  if (!c.where.empty()) j[f::kWhere] = c.where;
  return j;
}

ordered_json ToJson(const CollectiveEndRecord& e) {
  return {{f::kType, f::kCollectiveEndRecord}, {f::kGroup, e.group}, {f::kSeq, e.seq}, {f::kEndS, Number(e.end_s)}};
}

ordered_json ToJson(const DiscoveryRecord& d) {
  ordered_json j = {{f::kType, f::kDiscoveryRecord}, {f::kCall, d.call},   {f::kName, d.name.empty() ? kTopologyDiscovery : d.name},
                    {f::kPhase, d.phase},    {f::kStep, d.step}};
  if (!d.where.empty()) j[f::kWhere] = d.where;
  if (!d.comm.empty()) j[f::kComm] = d.comm;
  return j;
}

ordered_json ToJson(const HeartbeatRecord& h) {
  return {{f::kType, f::kHeartbeatRecord}, {f::kStep, h.step}, {f::kWallS, Number(h.wall_s)}};
}

ordered_json ToJson(const TraceFooter& f) {
  return {{f::kType, f::kFooterRecord}, {f::kStepsCompleted, f.steps_completed}, {f::kStatus, f.status}};
}

ordered_json ToJson(const LogRecord& l) { return {{f::kType, f::kLogRecord}, {f::kLine, l.line}}; }

}  // namespace

std::string TraceRecordToJson(const TraceRecord& record) {
  const ordered_json j = std::visit([](const auto& r) { return ToJson(r); }, record);
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace lockstep
