#include "harness/trace/trace_record_json.h"

#include "harness/trace/trace_fields.h"

#include <cmath>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

namespace lockstep {
namespace {

using nlohmann::ordered_json;

ordered_json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ordered_json ToJson(const TraceHeader& h) {
  namespace f = trace_field;
  return {{f::kType, f::kHeaderType},           {f::kSchema, h.schema},
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
    tensors.push_back({{"name", t.name},
                       {"kind", ToString(t.kind)},
                       {"digest", t.digest.ToHex()},
                       {"numel", t.numel},
                       {"dtype", t.dtype},
                       {"norm", Number(t.norm)},
                       {"replicated", t.replicated}});
  }
  return {{"type", "step"},          {"step", s.step},     {"loss", Number(s.loss)}, {"grad_norm", Number(s.grad_norm)},
          {"lr", Number(s.lr)},      {"wall_s", Number(s.wall_s)}, {"tensors", std::move(tensors)}};
}

ordered_json ToJson(const CollectiveRecord& c) {
  ordered_json j = {{"type", "collective_begin"}, {"group", c.group}, {"seq", c.seq},   {"op", c.op},
                    {"dtype", c.dtype},           {"count", c.count}, {"root", c.root}, {"reduce", c.reduce},
                    {"step", c.step},             {"start_s", Number(c.start_s)}};
  if (c.end_s) j["end_s"] = Number(*c.end_s);
  return j;
}

ordered_json ToJson(const CollectiveEndRecord& e) {
  return {{"type", "collective_end"}, {"group", e.group}, {"seq", e.seq}, {"end_s", Number(e.end_s)}};
}

ordered_json ToJson(const DiscoveryRecord& d) {
  ordered_json j = {{"type", "discovery"}, {"call", d.call},   {"name", d.name.empty() ? kTopologyDiscovery : d.name},
                    {"phase", d.phase},    {"step", d.step}};
  if (!d.where.empty()) j["where"] = d.where;
  if (!d.comm.empty()) j["comm"] = d.comm;
  return j;
}

ordered_json ToJson(const HeartbeatRecord& h) {
  return {{"type", "heartbeat"}, {"step", h.step}, {"wall_s", Number(h.wall_s)}};
}

ordered_json ToJson(const TraceFooter& f) {
  return {{"type", "footer"}, {"steps_completed", f.steps_completed}, {"status", f.status}};
}

ordered_json ToJson(const LogRecord& l) { return {{"type", "log"}, {"line", l.line}}; }

}  // namespace

std::string TraceRecordToJson(const TraceRecord& record) {
  const ordered_json j = std::visit([](const auto& r) { return ToJson(r); }, record);
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace lockstep
