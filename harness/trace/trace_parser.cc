#include "harness/trace/trace_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/core/untrusted_input.h"
#include "harness/trace/tensor_table.h"
#include "harness/trace/trace_fields.h"

namespace lockstep {

namespace f = trace_field;  // the format's names
namespace {

using nlohmann::json;

// Non-finite doubles are written as "nan", "inf", "-inf"; null (what other JSON writers emit for
// NaN) reads as NaN too.
double GetDouble(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number()) return it->get<double>();
  if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw json::type_error::create(302, std::string("field '") + key + "' is not a number", &j);
}

// A value as written, shortened for a message.
std::string Shown(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// An absent key is `fallback`. Integers must be JSON integers in range: 3.5, null and 1e300 are
// errors, never 3, 0 or INT64_MIN.
template <typename T>
T Get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (std::optional<T> v = JsonInteger<T>(*it)) return *v;
    throw json::type_error::create(
        302, std::string("field '") + key + "' must be " + IntegerRangeText<T>() + ", got " + Shown(*it), &j);
  } else {
    if (it->is_null()) return fallback;
    return it->get<T>();
  }
}

// An array of integers (absent: empty), each a JSON integer in range, as Get's.
std::vector<int64_t> GetIntegers(const json& j, const char* key) {
  std::vector<int64_t> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) throw json::type_error::create(302, std::string("field '") + key + "' is not an array", &j);
  out.reserve(it->size());
  for (const json& v : *it) {
    std::optional<int64_t> n = JsonInteger<int64_t>(v);
    if (!n) throw json::type_error::create(302, std::string("field '") + key + "' holds " + Shown(v) + ", not an integer", &j);
    out.push_back(*n);
  }
  return out;
}

// "lockstep.trace/1.0" -> major 1; nullopt when the name is not ours or the version unreadable.
std::optional<int> SchemaMajor(const std::string& schema) {
  const std::string prefix = std::string(kTraceSchemaName) + "/";
  if (schema.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const char* first = schema.data() + prefix.size();
  const char* last = schema.data() + schema.size();
  int major = 0;
  auto r = std::from_chars(first, last, major);
  if (r.ec != std::errc() || r.ptr == first) return std::nullopt;
  return major;
}

TraceHeader ParseHeader(const json& j) {
  TraceHeader h;
  h.schema = Get<std::string>(j, f::kSchema, "");
  h.rank = Get<int>(j, f::kRank, 0);
  h.world_size = Get<int>(j, f::kWorldSize, 1);
  // Readers size per-rank tables by it: a claim past what lockstep runs is refused here, once.
  if (h.world_size < 0 || h.world_size > kMaxWorldSize) {
    throw json::other_error::create(501, "header field world_size " + std::to_string(h.world_size) +
                                             " is out of range (0 to " + std::to_string(kMaxWorldSize) + ")", &j);
  }
  h.local_rank = Get<int>(j, f::kLocalRank, 0);
  h.slice = Get<int>(j, f::kSlice, 0);
  h.host = Get<std::string>(j, f::kHost, "");
  h.pid = Get<int64_t>(j, f::kPid, 0);
  h.device = Get<std::string>(j, f::kDevice, "");
  h.backend = Get<std::string>(j, f::kBackend, "");
  h.scenario_id = Get<std::string>(j, f::kScenarioId, "");
  h.scenario_digest = Get<std::string>(j, f::kScenarioDigest, "");
  h.versions = Get<std::map<std::string, std::string>>(j, f::kVersions, {});
  h.environment = Get<std::map<std::string, std::string>>(j, f::kEnvironment, {});
  return h;
}

TensorKind GetKind(const json& t) {
  const std::string kind = Get<std::string>(t, f::kKind, "param");
  auto k = FromString<TensorKind>(kind);
  if (!k) throw json::other_error::create(501, "unknown tensor kind '" + kind + "'", &t);
  return *k;
}

// A replica group's ranks and label: a `replica_group` record, or a dumped tensor's `group`.
std::shared_ptr<const ReplicaGroup> ParseReplicaGroup(const json& j, int world_size) {
  auto ranks = j.find(f::kRanks);
  if (ranks == j.end() || !ranks->is_array()) {
    throw json::other_error::create(501, "a replica group without its `ranks` list", &j);
  }
  auto g = std::make_shared<ReplicaGroup>();
  for (const json& r : *ranks) {
    const std::optional<int> rank = JsonInteger<int>(r);
    if (!rank || *rank < 0 || *rank >= world_size) {
      throw json::other_error::create(501, "replica group rank " + Shown(r) + " is not a rank of a world of " +
                                               std::to_string(world_size), &j);
    }
    if (!g->ranks.empty() && *rank <= g->ranks.back()) {
      throw json::other_error::create(501, "replica group ranks are not increasing at " + Shown(r), &j);
    }
    g->ranks.push_back(*rank);
  }
  g->label = Get<std::string>(j, f::kLabel, "");
  return g;
}

// A tensor's description: what /1 writes per step and /2 once in a `tensors` record. `groups`:
// the replica groups defined so far, which a `tensors` record's `group` ids name.
TensorRecord ParseTensorDescription(const json& t, const std::map<int64_t, std::shared_ptr<const ReplicaGroup>>& groups,
                                    int world_size) {
  if (!t.is_object()) throw json::type_error::create(302, "a tensor entry is not an object: " + Shown(t), &t);
  TensorRecord r;
  r.name = Get<std::string>(t, f::kName, "");
  r.kind = GetKind(t);
  r.numel = Get<int64_t>(t, f::kNumel, 0);
  r.dtype = Get<std::string>(t, f::kDtype, "");
  r.replicated = Get<bool>(t, f::kReplicated, true);
  if (auto g = t.find(f::kGroup); g != t.end()) {
    if (g->is_object()) {  // `lockstep trace dump`'s shape: the group itself
      r.group = ParseReplicaGroup(*g, world_size);
    } else {
      const int64_t id = Get<int64_t>(t, f::kGroup, 0);
      auto it = groups.find(id);
      if (it == groups.end()) {
        throw json::other_error::create(501, "tensor '" + r.name + "' names replica group " + std::to_string(id) +
                                                 ", which no earlier replica_group record defines", &t);
      }
      r.group = it->second;
    }
  }
  return r;
}

// /1's inline tensor list: each entry has its digest (hex) and norm.
std::vector<TensorRecord> ParseInlineTensors(const json& list,
                                             const std::map<int64_t, std::shared_ptr<const ReplicaGroup>>& groups,
                                             int world_size) {
  std::vector<TensorRecord> tensors;
  tensors.reserve(list.size());
  for (const json& t : list) {
    TensorRecord r = ParseTensorDescription(t, groups, world_size);
    const std::string hex = Get<std::string>(t, f::kDigest, "");
    auto d = Digest128::FromHex(hex);
    if (!d) throw json::other_error::create(501, "bad digest '" + hex + "' for " + r.name, &t);
    r.digest = *d;
    r.norm = GetDouble(t, f::kNorm, 0.0);
    tensors.push_back(std::move(r));
  }
  return tensors;
}

// A step's `tp_inputs` entry (since 2.4): a tensor-parallel module's replicated input.
TpInputRecord ParseTpInput(const json& t, int world_size) {
  if (!t.is_object()) throw json::type_error::create(302, "a tp_replicated_inputs entry is not an object: " + Shown(t), &t);
  TpInputRecord in;
  in.module = Get<std::string>(t, f::kModule, "");
  in.input = Get<std::string>(t, f::kInput, "");
  const std::string hex = Get<std::string>(t, f::kDigest, "");
  auto d = Digest128::FromHex(hex);
  if (!d) throw json::other_error::create(501, "bad digest '" + hex + "' for tp input " + in.module, &t);
  in.digest = *d;
  in.forwards = Get<int64_t>(t, f::kForwards, 0);
  in.group = *ParseReplicaGroup(t, world_size);
  return in;
}

CollectiveRecord ParseCollectiveBegin(const json& j) {
  CollectiveRecord c;
  c.group = Get<std::string>(j, f::kGroup, "");
  c.seq = Get<uint64_t>(j, f::kSeq, 0);
  c.op = Get<std::string>(j, f::kOp, "");
  c.dtype = Get<std::string>(j, f::kDtype, "");
  c.count = Get<int64_t>(j, f::kCount, 0);
  c.root = Get<int>(j, f::kRoot, -1);
  c.reduce = Get<std::string>(j, f::kReduce, "");
  c.group_rank = Get<int>(j, f::kGroupRank, -1);
  c.in_splits = GetIntegers(j, f::kInSplits);
  c.out_splits = GetIntegers(j, f::kOutSplits);
  c.step = Get<int64_t>(j, f::kStep, 0);
  c.start_s = GetDouble(j, f::kStartS, 0.0);
  if (j.contains(f::kEndS)) c.end_s = GetDouble(j, f::kEndS, 0.0);
  c.where = Get<std::string>(j, f::kWhere, "");
  return c;
}

}  // namespace

TraceParser::TraceParser(std::string file, Options options) : file_(std::move(file)), options_(options) {}

std::string TraceParser::Where() const { return file_ + ":" + std::to_string(line_); }

Result<std::optional<TraceRecord>> TraceParser::Parse(std::string_view line) {
  ++line_;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::optional<TraceRecord>();
  if (line.size() > kMaxTraceRecordBytes) {
    return InvalidArgumentError(Where() + ": record of " + std::to_string(line.size()) +
                                " bytes; a trace record may be at most " + std::to_string(kMaxTraceRecordBytes) +
                                " bytes");
  }
  if (auto deep = FindJsonTooDeep(line)) return InvalidArgumentError(Where() + ": " + *deep);
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(Where() + ": not a JSON trace record");

  try {
    const std::string type = Get<std::string>(j, f::kType, "");
    if (!have_header_) {
      if (type != f::kHeaderRecord) return InvalidArgumentError(Where() + ": not a lockstep trace (first record is not a header)");
      TraceHeader h = ParseHeader(j);
      auto major = SchemaMajor(h.schema);
      if (!major) return InvalidArgumentError(Where() + ": unknown trace schema '" + h.schema + "'");
      if (*major < kOldestTraceSchemaMajor || *major > kTraceSchemaMajor) {
        return InvalidArgumentError(Where() + ": trace schema " + h.schema + " has major version " +
                                    std::to_string(*major) + "; this lockstep reads major versions " +
                                    std::to_string(kOldestTraceSchemaMajor) + " to " +
                                    std::to_string(kTraceSchemaMajor));
      }
      header_ = h;
      have_header_ = true;
      return std::optional<TraceRecord>(std::move(h));
    }
    if (type == f::kStepRecord) {
      StepRecord s;
      s.step = Get<int64_t>(j, f::kStep, 0);
      s.loss = GetDouble(j, f::kLoss, std::numeric_limits<double>::quiet_NaN());
      s.loss_reported = j.contains(f::kLoss);
      s.grad_norm = GetDouble(j, f::kGradNorm, std::numeric_limits<double>::quiet_NaN());
      s.lr = GetDouble(j, f::kLr, 0.0);
      s.wall_s = GetDouble(j, f::kWallS, 0.0);
      if (auto forwards = j.find(f::kForwards); forwards != j.end()) {
        if (!forwards->is_number_integer() || forwards->get<int64_t>() < 0) {
          return InvalidArgumentError(Where() + ": field 'forwards' is not a count (a whole number, 0 or more)");
        }
        s.forwards = forwards->get<int64_t>();
      }
      if (!options_.tensors) return std::optional<TraceRecord>(std::move(s));
      if (auto settings = j.find(f::kOptimizer); settings != j.end()) {
        if (!settings->is_object()) return InvalidArgumentError(Where() + ": field 'optimizer' is not an object");
        s.optimizer.reserve(settings->size());
        for (auto it = settings->begin(); it != settings->end(); ++it) {
          s.optimizer.emplace_back(it.key(), GetDouble(*settings, it.key().c_str(), 0.0));
        }
      }
      if (auto edited = j.find(f::kEditedAfterUpdate); edited != j.end()) {
        if (!edited->is_array()) return InvalidArgumentError(Where() + ": field 'edited_after_update' is not an array");
        std::vector<std::string> names;
        for (const auto& name : *edited) {
          if (!name.is_string()) {
            return InvalidArgumentError(Where() + ": field 'edited_after_update' holds a non-string");
          }
          names.push_back(name.get<std::string>());
        }
        s.edited_after_update = std::move(names);
      }
      if (auto inputs = j.find(f::kTpInputs); inputs != j.end()) {
        if (!inputs->is_array()) return InvalidArgumentError(Where() + ": field 'tp_replicated_inputs' is not an array");
        s.tp_inputs.reserve(inputs->size());
        for (const json& t : *inputs) s.tp_inputs.push_back(ParseTpInput(t, header_.world_size));
      }
      // Either form in either version: a list of whole tensors (/1), or a table against the
      // current `tensors` record (/2).
      if (auto list = j.find(f::kTensors); list != j.end() && list->is_array()) {
        s.tensors = ParseInlineTensors(*list, groups_, header_.world_size);
      } else if (auto table = j.find(f::kTable); table != j.end()) {
        if (!table->is_string()) return InvalidArgumentError(Where() + ": field 'table' is not a string");
        const int64_t n = Get<int64_t>(j, f::kN, -1);
        if (n != static_cast<int64_t>(layout_.size())) {
          return InvalidArgumentError(Where() + ": step " + std::to_string(s.step) + " has " + std::to_string(n) +
                                      " tensors, the trace's last `tensors` record names " +
                                      std::to_string(layout_.size()));
        }
        s.tensors = layout_;
        if (auto bad = ReadTensorTable(table->get_ref<const std::string&>(), s.tensors)) {
          return InvalidArgumentError(Where() + ": step " + std::to_string(s.step) + ": " + *bad);
        }
      }
      return std::optional<TraceRecord>(std::move(s));
    }
    if (type == f::kTensorsRecord) {
      auto list = j.find(f::kTensors);
      if (list == j.end() || !list->is_array()) {
        return InvalidArgumentError(Where() + ": a `tensors` record without its `tensors` list");
      }
      std::vector<TensorRecord> layout;
      layout.reserve(list->size());
      for (const json& t : *list) layout.push_back(ParseTensorDescription(t, groups_, header_.world_size));
      layout_ = std::move(layout);
      return std::optional<TraceRecord>();
    }
    if (type == f::kReplicaGroupRecord) {
      const int64_t id = Get<int64_t>(j, f::kId, 0);
      if (id < 1) return InvalidArgumentError(Where() + ": a replica_group record's id must be at least 1");
      std::shared_ptr<const ReplicaGroup> g = ParseReplicaGroup(j, header_.world_size);
      if (auto it = groups_.find(id); it != groups_.end() && *it->second != *g) {
        return InvalidArgumentError(Where() + ": replica group " + std::to_string(id) + " defined again, differently");
      }
      groups_[id] = std::move(g);
      return std::optional<TraceRecord>();
    }
    if (type == f::kCollectiveBeginRecord) return std::optional<TraceRecord>(ParseCollectiveBegin(j));
    if (type == f::kCollectiveEndRecord) {
      CollectiveEndRecord e;
      e.group = Get<std::string>(j, f::kGroup, "");
      e.seq = Get<uint64_t>(j, f::kSeq, 0);
      e.end_s = GetDouble(j, f::kEndS, 0.0);
      return std::optional<TraceRecord>(std::move(e));
    }
    if (type == f::kDiscoveryRecord) {
      DiscoveryRecord d;
      d.call = Get<int>(j, f::kCall, 0);
      d.phase = Get<std::string>(j, f::kPhase, "");
      d.step = Get<int64_t>(j, f::kStep, 0);
      d.name = Get<std::string>(j, f::kName, kTopologyDiscovery);
      d.where = Get<std::string>(j, f::kWhere, "");
      d.comm = Get<std::string>(j, f::kComm, "");
      return std::optional<TraceRecord>(std::move(d));
    }
    if (type == f::kHeartbeatRecord) {
      HeartbeatRecord h;
      h.step = Get<int64_t>(j, f::kStep, 0);
      h.wall_s = GetDouble(j, f::kWallS, 0.0);
      return std::optional<TraceRecord>(h);
    }
    if (type == f::kFooterRecord) {
      TraceFooter f;
      f.steps_completed = Get<int64_t>(j, f::kStepsCompleted, 0);
      f.status = Get<std::string>(j, f::kStatus, "");
      return std::optional<TraceRecord>(std::move(f));
    }
    if (type == f::kLogRecord) return std::optional<TraceRecord>(LogRecord{Get<std::string>(j, f::kLine, "")});
    // Other record types come from a newer minor version: skipped.
    return std::optional<TraceRecord>();
  } catch (const json::exception& e) {
    return InvalidArgumentError(Where() + ": bad trace record: " + e.what());
  }
}

size_t TraceDataLength(std::string_view bytes) {
  const size_t zero = bytes.find('\0');
  return zero == std::string_view::npos ? bytes.size() : zero;
}

void TraceLines::Append(std::string_view bytes) {
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
}

std::optional<std::string_view> TraceLines::Next() {
  const size_t nl = buffer_.find('\n', pos_);
  if (nl == std::string::npos) return std::nullopt;
  std::string_view line(buffer_.data() + pos_, nl - pos_);
  pos_ = nl + 1;
  return line;
}

}  // namespace lockstep
