#include "harness/trace/trace_reader.h"

#include <charconv>
#include <cmath>
#include <deque>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/core/untrusted_input.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
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
  h.schema = Get<std::string>(j, "schema", "");
  h.rank = Get<int>(j, "rank", 0);
  h.world_size = Get<int>(j, "world_size", 1);
  h.local_rank = Get<int>(j, "local_rank", 0);
  h.slice = Get<int>(j, "slice", 0);
  h.host = Get<std::string>(j, "host", "");
  h.pid = Get<int64_t>(j, "pid", 0);
  h.device = Get<std::string>(j, "device", "");
  h.backend = Get<std::string>(j, "backend", "");
  h.scenario_id = Get<std::string>(j, "scenario_id", "");
  h.scenario_digest = Get<std::string>(j, "scenario_digest", "");
  h.versions = Get<std::map<std::string, std::string>>(j, "versions", {});
  return h;
}

StepRecord ParseStep(const json& j) {
  StepRecord s;
  s.step = Get<int64_t>(j, "step", 0);
  s.loss = GetDouble(j, "loss", std::numeric_limits<double>::quiet_NaN());
  s.grad_norm = GetDouble(j, "grad_norm", std::numeric_limits<double>::quiet_NaN());
  s.lr = GetDouble(j, "lr", 0.0);
  s.wall_s = GetDouble(j, "wall_s", 0.0);
  auto it = j.find("tensors");
  if (it != j.end() && it->is_array()) {
    s.tensors.reserve(it->size());
    for (const json& t : *it) {
      TensorRecord r;
      r.name = Get<std::string>(t, "name", "");
      const std::string kind = Get<std::string>(t, "kind", "param");
      auto k = FromString<TensorKind>(kind);
      if (!k) throw json::other_error::create(501, "unknown tensor kind '" + kind + "'", &t);
      r.kind = *k;
      const std::string hex = Get<std::string>(t, "digest", "");
      auto d = Digest128::FromHex(hex);
      if (!d) throw json::other_error::create(501, "bad digest '" + hex + "' for " + r.name, &t);
      r.digest = *d;
      r.numel = Get<int64_t>(t, "numel", 0);
      r.dtype = Get<std::string>(t, "dtype", "");
      r.norm = GetDouble(t, "norm", 0.0);
      r.replicated = Get<bool>(t, "replicated", true);
      s.tensors.push_back(std::move(r));
    }
  }
  return s;
}

CollectiveRecord ParseCollectiveBegin(const json& j) {
  CollectiveRecord c;
  c.group = Get<std::string>(j, "group", "");
  c.seq = Get<uint64_t>(j, "seq", 0);
  c.op = Get<std::string>(j, "op", "");
  c.dtype = Get<std::string>(j, "dtype", "");
  c.count = Get<int64_t>(j, "count", 0);
  c.root = Get<int>(j, "root", -1);
  c.reduce = Get<std::string>(j, "reduce", "");
  c.step = Get<int64_t>(j, "step", 0);
  c.start_s = GetDouble(j, "start_s", 0.0);
  if (j.contains("end_s")) c.end_s = GetDouble(j, "end_s", 0.0);
  return c;
}

}  // namespace

Result<RankTrace> ReadTrace(const std::filesystem::path& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::string data, ReadBoundedFile(path, kMaxTraceBytes, "trace"));
  return ParseTrace(data, path.filename().string());
}

Result<RankTrace> ParseTrace(std::string_view data, const std::string& file) {
  RankTrace trace;
  if (data.empty()) {
    // The header is written at open, so an empty file means the rank died inside that write.
    trace.truncated = true;
    trace.truncation_note = file + ":1: empty file (the rank died before its header was written)";
    return trace;
  }

  std::map<std::pair<std::string, uint64_t>, size_t> open_collectives;
  std::deque<std::string> log_tail;
  bool have_header = false;
  size_t pos = 0;
  int line_no = 0;
  while (pos < data.size()) {
    ++line_no;
    const size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      // A record is whole only with its newline: the writer emits both in one write(2).
      trace.truncated = true;
      trace.truncation_note = file + ":" + std::to_string(line_no) + ": last record cut (" +
                              std::to_string(data.size() - pos) + " bytes)";
      break;
    }
    const char* first = data.data() + pos;
    const char* last = data.data() + nl;
    pos = nl + 1;
    if (first == last) continue;
    const std::string where = file + ":" + std::to_string(line_no);
    if (static_cast<size_t>(last - first) > kMaxTraceRecordBytes) {
      return InvalidArgumentError(where + ": record of " + std::to_string(last - first) + " bytes; a trace record may be at most " +
                                  std::to_string(kMaxTraceRecordBytes) + " bytes");
    }
    if (auto deep = FindJsonTooDeep(std::string_view(first, static_cast<size_t>(last - first)))) {
      return InvalidArgumentError(where + ": " + *deep);
    }

    json j = json::parse(first, last, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return InvalidArgumentError(where + ": not a JSON trace record");
    }
    try {
      const std::string type = Get<std::string>(j, "type", "");
      if (!have_header) {
        if (type != "header") return InvalidArgumentError(where + ": not a lockstep trace (first record is not a header)");
        trace.header = ParseHeader(j);
        auto major = SchemaMajor(trace.header.schema);
        if (!major) return InvalidArgumentError(where + ": unknown trace schema '" + trace.header.schema + "'");
        if (*major != kTraceSchemaMajor) {
          return InvalidArgumentError(where + ": trace schema " + trace.header.schema + " has major version " +
                                      std::to_string(*major) + "; this lockstep reads major version " +
                                      std::to_string(kTraceSchemaMajor));
        }
        have_header = true;
      } else if (type == "step") {
        trace.steps.push_back(ParseStep(j));
      } else if (type == "collective_begin") {
        CollectiveRecord c = ParseCollectiveBegin(j);
        open_collectives[{c.group, c.seq}] = trace.collectives.size();
        trace.collectives.push_back(std::move(c));
      } else if (type == "collective_end") {
        auto it = open_collectives.find({Get<std::string>(j, "group", ""), Get<uint64_t>(j, "seq", 0)});
        // An end without its begin cannot be placed; ignoring it keeps the rest readable.
        if (it != open_collectives.end()) {
          trace.collectives[it->second].end_s = GetDouble(j, "end_s", 0.0);
          open_collectives.erase(it);
        }
      } else if (type == "discovery") {
        DiscoveryRecord d;
        d.call = Get<int>(j, "call", 0);
        d.phase = Get<std::string>(j, "phase", "");
        d.step = Get<int64_t>(j, "step", 0);
        d.name = Get<std::string>(j, "name", kTopologyDiscovery);
        d.where = Get<std::string>(j, "where", "");
        d.comm = Get<std::string>(j, "comm", "");
        trace.discoveries.push_back(std::move(d));
      } else if (type == "heartbeat") {
        trace.last_heartbeat_s = GetDouble(j, "wall_s", trace.last_heartbeat_s);
      } else if (type == "footer") {
        TraceFooter f;
        f.steps_completed = Get<int64_t>(j, "steps_completed", 0);
        f.status = Get<std::string>(j, "status", "");
        trace.footer = std::move(f);
      } else if (type == "log") {
        log_tail.push_back(Get<std::string>(j, "line", ""));
        if (log_tail.size() > kTraceLogTailLines) log_tail.pop_front();
      }
      // Other record types come from a newer minor version: skipped.
    } catch (const json::exception& e) {
      return InvalidArgumentError(where + ": bad trace record: " + e.what());
    }
  }
  trace.log_tail.assign(log_tail.begin(), log_tail.end());
  if (!have_header && !trace.truncated) {
    return InvalidArgumentError(file + ": not a lockstep trace (no header record)");
  }
  return trace;
}

Result<std::vector<RankTrace>> ReadTraceDir(const std::filesystem::path& dir, int world_size) {
  if (world_size < 1) return InvalidArgumentError("ReadTraceDir: world size " + std::to_string(world_size) + " < 1");
  std::vector<RankTrace> traces(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    const std::filesystem::path path = dir / TraceFileName(r);
    RankTrace& t = traces[static_cast<size_t>(r)];
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      t.header.rank = r;
      t.header.world_size = world_size;
      t.missing = true;
      t.truncation_note = TraceFileName(r) + ": missing (the rank never started writing its trace)";
      continue;
    }
    LOCKSTEP_ASSIGN_OR_RETURN(t, ReadTrace(path));
    if (t.header.schema.empty()) {
      // Empty file: no header to say which rank it was; the file name does.
      t.header.rank = r;
      t.header.world_size = world_size;
    } else if (t.header.rank != r) {
      return InvalidArgumentError(path.string() + ": header says rank " + std::to_string(t.header.rank) +
                                  ", file name says rank " + std::to_string(r));
    }
  }
  return traces;
}

}  // namespace lockstep
