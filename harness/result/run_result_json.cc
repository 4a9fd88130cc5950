#include "harness/result/run_result_json.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/core/untrusted_input.h"

namespace lockstep {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kSchemaPrefix = "lockstep.report/";

Json DoubleToJson(double value) {
  if (std::isnan(value)) return nullptr;
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

Json OptionalDoubleToJson(const std::optional<double>& value) {
  return value ? DoubleToJson(*value) : Json(nullptr);
}

Json IntMapToJson(const std::map<int, std::string>& map) {
  Json out = Json::object();
  for (const auto& [key, value] : map) out[std::to_string(key)] = value;
  return out;
}

Json FindingToJson(const Finding& finding) {
  Json out;
  out["checker"] = finding.checker;
  out["outcome"] = ToString(finding.outcome);
  out["step"] = finding.step ? Json(*finding.step) : Json(nullptr);
  out["tensor"] = finding.tensor;
  out["tensors"] = finding.tensors;
  out["ranks"] = finding.ranks;
  out["message"] = finding.message;
  Json details = Json::object();
  for (const auto& [key, value] : finding.details) details[key] = value;
  out["details"] = std::move(details);
  return out;
}

Json VerdictToJson(const CheckerVerdict& verdict) {
  Json out;
  out["checker"] = verdict.checker;
  out["outcome"] = ToString(verdict.outcome);
  out["duration_s"] = DoubleToJson(verdict.duration_s);
  out["skip_reason"] = verdict.skip_reason;
  return out;
}

Json SeriesToJson(const ScenarioSeries& series) {
  Json out;
  out["steps"] = series.steps;
  Json losses = Json::object();
  for (const auto& [rank, values] : series.loss_by_rank) {
    Json list = Json::array();
    for (double v : values) list.push_back(DoubleToJson(v));
    losses[std::to_string(rank)] = std::move(list);
  }
  out["loss_by_rank"] = std::move(losses);
  out["tensors"] = series.tensors;
  Json cells = Json::array();
  for (const DivergenceCell& cell : series.divergent_cells) {
    Json groups = Json::array();
    for (const auto& [ranks, digest] : cell.groups) {
      Json group;
      group["ranks"] = ranks;
      group["digest"] = digest;
      groups.push_back(std::move(group));
    }
    Json c;
    c["step"] = cell.step;
    c["tensor"] = cell.tensor;
    c["groups"] = std::move(groups);
    cells.push_back(std::move(c));
  }
  out["divergent_cells"] = std::move(cells);
  out["divergent_cells_omitted"] = series.divergent_cells_omitted;
  Json collectives = Json::array();
  for (const CollectiveSummary& c : series.last_collectives) {
    Json j;
    j["rank"] = c.rank;
    j["group"] = c.group;
    j["seq"] = c.seq;
    j["op"] = c.op;
    j["step"] = c.step;
    j["start_s"] = DoubleToJson(c.start_s);
    j["end_s"] = OptionalDoubleToJson(c.end_s);
    collectives.push_back(std::move(j));
  }
  out["last_collectives"] = std::move(collectives);
  return out;
}

Json ScenarioToJson(const ScenarioResult& s) {
  Json out;
  out["id"] = s.id;
  out["file"] = s.file;
  out["line"] = s.line;
  out["description"] = s.description;
  out["mode"] = s.mode;
  out["backend"] = s.backend;
  out["ranks"] = s.ranks;
  out["steps"] = s.steps;
  out["outcome"] = ToString(s.outcome);
  out["duration_s"] = DoubleToJson(s.duration_s);
  out["reason"] = s.reason;
  Json findings = Json::array();
  for (const Finding& f : s.findings) findings.push_back(FindingToJson(f));
  out["findings"] = std::move(findings);
  Json checkers = Json::array();
  for (const CheckerVerdict& v : s.checkers) checkers.push_back(VerdictToJson(v));
  out["checkers"] = std::move(checkers);
  out["rank_logs"] = IntMapToJson(s.rank_logs);
  out["run_dir"] = s.run_dir;
  out["series"] = SeriesToJson(s.series);
  return out;
}

// ---- reading ----------------------------------------------------------------------------------
// Every error names the input and the JSON path ("report.json: scenarios[2].findings[0].step:
// expected an integer, got string"), so a hand-edited or foreign file is easy to fix.

const char* TypeName(const Json& j) { return j.type_name(); }

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  Status Error(const std::string& path, const std::string& what) const {
    return InvalidArgumentError(origin_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  // Looks up `key` in the object `obj`; nullptr when absent.
  static const Json* Find(const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  Status ExpectObject(const Json& j, const std::string& path) const {
    if (!j.is_object()) return Error(path, std::string("expected an object, got ") + TypeName(j));
    return Status::Ok();
  }

  Status ExpectArray(const Json& j, const std::string& path) const {
    if (!j.is_array()) return Error(path, std::string("expected an array, got ") + TypeName(j));
    return Status::Ok();
  }

  // Absent or null leaves *out at its default.
  Status String(const Json& obj, const char* key, const std::string& path, std::string* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    if (!j->is_string()) return Error(Join(path, key), std::string("expected a string, got ") + TypeName(*j));
    *out = j->get<std::string>();
    return Status::Ok();
  }

  template <typename T>
  Status Integer(const Json& j, const std::string& path, T* out) const {
    if (!j.is_number_integer()) return Error(path, std::string("expected an integer, got ") + TypeName(j));
    if (j.is_number_unsigned()) {
      const auto v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return Error(path, "integer out of range");
      *out = static_cast<T>(v);
      return Status::Ok();
    }
    const auto v = j.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return Error(path, "integer out of range");
    }
    *out = static_cast<T>(v);
    return Status::Ok();
  }

  template <typename T>
  Status Integer(const Json& obj, const char* key, const std::string& path, T* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    return Integer(*j, Join(path, key), out);
  }

  // null is NaN; "Infinity" / "-Infinity" / "NaN" are the non-finite values JSON cannot spell.
  Status Double(const Json& j, const std::string& path, double* out) const {
    if (j.is_null()) {
      *out = std::numeric_limits<double>::quiet_NaN();
      return Status::Ok();
    }
    if (j.is_number()) {
      *out = j.get<double>();
      return Status::Ok();
    }
    if (j.is_string()) {
      const auto& s = j.get_ref<const std::string&>();
      if (s == "Infinity") *out = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity") *out = -std::numeric_limits<double>::infinity();
      else if (s == "NaN") *out = std::numeric_limits<double>::quiet_NaN();
      else return Error(path, "expected a number, null, \"Infinity\" or \"-Infinity\", got \"" + s + "\"");
      return Status::Ok();
    }
    return Error(path, std::string("expected a number, got ") + TypeName(j));
  }

  // Absent leaves *out at its default; null is NaN.
  Status Double(const Json& obj, const char* key, const std::string& path, double* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr) return Status::Ok();
    return Double(*j, Join(path, key), out);
  }

  Status IntList(const Json& obj, const char* key, const std::string& path, std::vector<int>* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    const std::string p = Join(path, key);
    LOCKSTEP_RETURN_IF_ERROR(ExpectArray(*j, p));
    out->clear();
    for (size_t i = 0; i < j->size(); ++i) {
      int v = 0;
      LOCKSTEP_RETURN_IF_ERROR(Integer((*j)[i], Index(p, i), &v));
      out->push_back(v);
    }
    return Status::Ok();
  }

  Status StringList(const Json& obj, const char* key, const std::string& path,
                    std::vector<std::string>* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    const std::string p = Join(path, key);
    LOCKSTEP_RETURN_IF_ERROR(ExpectArray(*j, p));
    out->clear();
    for (size_t i = 0; i < j->size(); ++i) {
      const Json& e = (*j)[i];
      if (!e.is_string()) return Error(Index(p, i), std::string("expected a string, got ") + TypeName(e));
      out->push_back(e.get<std::string>());
    }
    return Status::Ok();
  }

  Status StringMap(const Json& obj, const char* key, const std::string& path,
                   std::map<std::string, std::string>* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    const std::string p = Join(path, key);
    LOCKSTEP_RETURN_IF_ERROR(ExpectObject(*j, p));
    out->clear();
    for (auto it = j->begin(); it != j->end(); ++it) {
      if (!it.value().is_string()) {
        return Error(Join(p, it.key().c_str()), std::string("expected a string, got ") + TypeName(it.value()));
      }
      (*out)[it.key()] = it.value().get<std::string>();
    }
    return Status::Ok();
  }

  // JSON object keys are strings; ranks are ints.
  Status RankKey(const std::string& key, const std::string& path, int* rank) const {
    size_t used = 0;
    long value = -1;
    try {
      value = std::stol(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || key.empty() || value < 0 || value > std::numeric_limits<int>::max()) {
      return Error(path, "key \"" + key + "\" is not a rank number");
    }
    *rank = static_cast<int>(value);
    return Status::Ok();
  }

  Status RankStringMap(const Json& obj, const char* key, const std::string& path,
                       std::map<int, std::string>* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    const std::string p = Join(path, key);
    LOCKSTEP_RETURN_IF_ERROR(ExpectObject(*j, p));
    out->clear();
    for (auto it = j->begin(); it != j->end(); ++it) {
      int rank = 0;
      LOCKSTEP_RETURN_IF_ERROR(RankKey(it.key(), p, &rank));
      if (!it.value().is_string()) {
        return Error(Join(p, it.key().c_str()), std::string("expected a string, got ") + TypeName(it.value()));
      }
      (*out)[rank] = it.value().get<std::string>();
    }
    return Status::Ok();
  }

  static std::string Join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  static std::string Index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  std::string origin_;
};

Status ReadOutcome(const Reader& r, const Json& obj, const std::string& path, Outcome* out) {
  std::string name;
  LOCKSTEP_RETURN_IF_ERROR(r.String(obj, "outcome", path, &name));
  if (name.empty()) return Status::Ok();
  std::optional<Outcome> outcome = OutcomeFromString(name);
  if (!outcome) {
    return r.Error(Reader::Join(path, "outcome"),
                   "unknown outcome \"" + name + "\" (pass, fail, xfail, xpass, error, timeout, skipped)");
  }
  *out = *outcome;
  return Status::Ok();
}

Status ReadFinding(const Reader& r, const Json& j, const std::string& path, Finding* f) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "checker", path, &f->checker));
  std::string outcome;
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "outcome", path, &outcome));
  if (outcome.empty()) {
    f->outcome = FindingOutcome::kFail;
  } else if (std::optional<FindingOutcome> parsed = FindingOutcomeFromString(outcome)) {
    f->outcome = *parsed;
  } else {
    return r.Error(Reader::Join(path, "outcome"), "unknown finding outcome \"" + outcome + "\" (fail, expected, error)");
  }
  if (const Json* step = Reader::Find(j, "step"); step != nullptr && !step->is_null()) {
    int64_t value = 0;
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*step, Reader::Join(path, "step"), &value));
    f->step = value;
  }
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "tensor", path, &f->tensor));
  LOCKSTEP_RETURN_IF_ERROR(r.StringList(j, "tensors", path, &f->tensors));
  LOCKSTEP_RETURN_IF_ERROR(r.IntList(j, "ranks", path, &f->ranks));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "message", path, &f->message));
  LOCKSTEP_RETURN_IF_ERROR(r.StringMap(j, "details", path, &f->details));
  return Status::Ok();
}

Status ReadVerdict(const Reader& r, const Json& j, const std::string& path, CheckerVerdict* v) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "checker", path, &v->checker));
  LOCKSTEP_RETURN_IF_ERROR(ReadOutcome(r, j, path, &v->outcome));
  LOCKSTEP_RETURN_IF_ERROR(r.Double(j, "duration_s", path, &v->duration_s));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "skip_reason", path, &v->skip_reason));
  return Status::Ok();
}

Status ReadSeries(const Reader& r, const Json& j, const std::string& path, ScenarioSeries* s) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  if (const Json* steps = Reader::Find(j, "steps"); steps != nullptr && !steps->is_null()) {
    const std::string p = Reader::Join(path, "steps");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*steps, p));
    for (size_t i = 0; i < steps->size(); ++i) {
      int64_t v = 0;
      LOCKSTEP_RETURN_IF_ERROR(r.Integer((*steps)[i], Reader::Index(p, i), &v));
      s->steps.push_back(v);
    }
  }
  if (const Json* losses = Reader::Find(j, "loss_by_rank"); losses != nullptr && !losses->is_null()) {
    const std::string p = Reader::Join(path, "loss_by_rank");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(*losses, p));
    for (auto it = losses->begin(); it != losses->end(); ++it) {
      int rank = 0;
      LOCKSTEP_RETURN_IF_ERROR(r.RankKey(it.key(), p, &rank));
      const std::string rp = Reader::Join(p, it.key().c_str());
      LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(it.value(), rp));
      std::vector<double>& values = s->loss_by_rank[rank];
      for (size_t i = 0; i < it.value().size(); ++i) {
        double v = 0;
        LOCKSTEP_RETURN_IF_ERROR(r.Double(it.value()[i], Reader::Index(rp, i), &v));
        values.push_back(v);
      }
    }
  }
  LOCKSTEP_RETURN_IF_ERROR(r.StringList(j, "tensors", path, &s->tensors));
  if (const Json* cells = Reader::Find(j, "divergent_cells"); cells != nullptr && !cells->is_null()) {
    const std::string p = Reader::Join(path, "divergent_cells");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*cells, p));
    for (size_t i = 0; i < cells->size(); ++i) {
      const Json& c = (*cells)[i];
      const std::string cp = Reader::Index(p, i);
      LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(c, cp));
      DivergenceCell cell;
      LOCKSTEP_RETURN_IF_ERROR(r.Integer(c, "step", cp, &cell.step));
      LOCKSTEP_RETURN_IF_ERROR(r.String(c, "tensor", cp, &cell.tensor));
      if (const Json* groups = Reader::Find(c, "groups"); groups != nullptr && !groups->is_null()) {
        const std::string gp = Reader::Join(cp, "groups");
        LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*groups, gp));
        for (size_t g = 0; g < groups->size(); ++g) {
          const Json& group = (*groups)[g];
          const std::string ggp = Reader::Index(gp, g);
          LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(group, ggp));
          std::pair<std::vector<int>, std::string> entry;
          LOCKSTEP_RETURN_IF_ERROR(r.IntList(group, "ranks", ggp, &entry.first));
          LOCKSTEP_RETURN_IF_ERROR(r.String(group, "digest", ggp, &entry.second));
          cell.groups.push_back(std::move(entry));
        }
      }
      s->divergent_cells.push_back(std::move(cell));
    }
  }
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, "divergent_cells_omitted", path, &s->divergent_cells_omitted));
  if (const Json* colls = Reader::Find(j, "last_collectives"); colls != nullptr && !colls->is_null()) {
    const std::string p = Reader::Join(path, "last_collectives");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*colls, p));
    for (size_t i = 0; i < colls->size(); ++i) {
      const Json& c = (*colls)[i];
      const std::string cp = Reader::Index(p, i);
      LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(c, cp));
      CollectiveSummary summary;
      LOCKSTEP_RETURN_IF_ERROR(r.Integer(c, "rank", cp, &summary.rank));
      LOCKSTEP_RETURN_IF_ERROR(r.String(c, "group", cp, &summary.group));
      LOCKSTEP_RETURN_IF_ERROR(r.Integer(c, "seq", cp, &summary.seq));
      LOCKSTEP_RETURN_IF_ERROR(r.String(c, "op", cp, &summary.op));
      LOCKSTEP_RETURN_IF_ERROR(r.Integer(c, "step", cp, &summary.step));
      LOCKSTEP_RETURN_IF_ERROR(r.Double(c, "start_s", cp, &summary.start_s));
      // end_s: null means still in flight (it hung), not NaN.
      if (const Json* end = Reader::Find(c, "end_s"); end != nullptr && !end->is_null()) {
        double v = 0;
        LOCKSTEP_RETURN_IF_ERROR(r.Double(*end, Reader::Join(cp, "end_s"), &v));
        summary.end_s = v;
      }
      s->last_collectives.push_back(std::move(summary));
    }
  }
  return Status::Ok();
}

Status ReadScenario(const Reader& r, const Json& j, const std::string& path, ScenarioResult* s) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  if (Reader::Find(j, "id") == nullptr) return r.Error(path, "missing \"id\"");
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "id", path, &s->id));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "file", path, &s->file));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, "line", path, &s->line));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "description", path, &s->description));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "mode", path, &s->mode));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "backend", path, &s->backend));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, "ranks", path, &s->ranks));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, "steps", path, &s->steps));
  LOCKSTEP_RETURN_IF_ERROR(ReadOutcome(r, j, path, &s->outcome));
  LOCKSTEP_RETURN_IF_ERROR(r.Double(j, "duration_s", path, &s->duration_s));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "reason", path, &s->reason));
  if (const Json* findings = Reader::Find(j, "findings"); findings != nullptr && !findings->is_null()) {
    const std::string p = Reader::Join(path, "findings");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*findings, p));
    for (size_t i = 0; i < findings->size(); ++i) {
      Finding f;
      LOCKSTEP_RETURN_IF_ERROR(ReadFinding(r, (*findings)[i], Reader::Index(p, i), &f));
      s->findings.push_back(std::move(f));
    }
  }
  if (const Json* checkers = Reader::Find(j, "checkers"); checkers != nullptr && !checkers->is_null()) {
    const std::string p = Reader::Join(path, "checkers");
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*checkers, p));
    for (size_t i = 0; i < checkers->size(); ++i) {
      CheckerVerdict v;
      LOCKSTEP_RETURN_IF_ERROR(ReadVerdict(r, (*checkers)[i], Reader::Index(p, i), &v));
      s->checkers.push_back(std::move(v));
    }
  }
  LOCKSTEP_RETURN_IF_ERROR(r.RankStringMap(j, "rank_logs", path, &s->rank_logs));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, "run_dir", path, &s->run_dir));
  if (const Json* series = Reader::Find(j, "series"); series != nullptr && !series->is_null()) {
    LOCKSTEP_RETURN_IF_ERROR(ReadSeries(r, *series, Reader::Join(path, "series"), &s->series));
  }
  return Status::Ok();
}

Status CheckSchema(const Reader& r, const Json& root) {
  const Json* schema = Reader::Find(root, "schema");
  if (schema == nullptr) return r.Error("", std::string("missing \"schema\"; expected \"") + kReportSchema + "\"");
  if (!schema->is_string()) return r.Error("schema", std::string("expected a string, got ") + TypeName(*schema));
  const std::string& name = schema->get_ref<const std::string&>();
  const std::string prefix = kSchemaPrefix;
  if (name.compare(0, prefix.size(), prefix) != 0) {
    return r.Error("schema", "\"" + name + "\" is not a lockstep report schema (expected \"" + kReportSchema + "\")");
  }
  // "1" or "1.<minor>": only the major version decides whether we can read it.
  const std::string version = name.substr(prefix.size());
  const std::string major = version.substr(0, version.find('.'));
  if (major != std::to_string(kReportSchemaMajor)) {
    return r.Error("schema", "unsupported report schema \"" + name + "\": this lockstep reads major version " +
                                 std::to_string(kReportSchemaMajor) + " (\"" + kReportSchema + "\")");
  }
  return Status::Ok();
}

}  // namespace

nlohmann::ordered_json RunResultToJson(const RunResult& result) {
  Json root;
  root["schema"] = kReportSchema;

  const RunContext& c = result.context;
  Json context;
  Json versions = Json::object();
  for (const auto& [key, value] : c.versions) versions[key] = value;
  context["versions"] = std::move(versions);
  context["host"] = c.host;
  context["git_sha"] = c.git_sha;
  context["backend"] = c.backend;
  context["launcher"] = c.launcher;
  context["command_line"] = c.command_line;
  context["started_at"] = c.started_at;
  context["duration_s"] = DoubleToJson(c.duration_s);
  root["context"] = std::move(context);

  const OutcomeCounts counts = CountOutcomes(result);
  Json summary;
  summary["total"] = counts.total;
  summary["passed"] = counts.passed;
  summary["failed"] = counts.failed;
  summary["xfailed"] = counts.xfailed;
  summary["xpassed"] = counts.xpassed;
  summary["errors"] = counts.errors;
  summary["timeouts"] = counts.timeouts;
  summary["skipped"] = counts.skipped;
  root["summary"] = std::move(summary);

  Json scenarios = Json::array();
  for (const ScenarioResult& s : result.scenarios) scenarios.push_back(ScenarioToJson(s));
  root["scenarios"] = std::move(scenarios);
  return root;
}

Result<RunResult> RunResultFromJson(const nlohmann::ordered_json& json, const std::string& origin) {
  const Reader r(origin);
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(json, ""));
  LOCKSTEP_RETURN_IF_ERROR(CheckSchema(r, json));
  RunResult result;
  // "summary" is derived from the scenarios (CountOutcomes) and not read back.
  if (const Json* context = Reader::Find(json, "context"); context != nullptr && !context->is_null()) {
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(*context, "context"));
    RunContext& c = result.context;
    LOCKSTEP_RETURN_IF_ERROR(r.StringMap(*context, "versions", "context", &c.versions));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "host", "context", &c.host));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "git_sha", "context", &c.git_sha));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "backend", "context", &c.backend));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "launcher", "context", &c.launcher));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "command_line", "context", &c.command_line));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, "started_at", "context", &c.started_at));
    LOCKSTEP_RETURN_IF_ERROR(r.Double(*context, "duration_s", "context", &c.duration_s));
  }
  const Json* scenarios = Reader::Find(json, "scenarios");
  if (scenarios == nullptr) return r.Error("", "missing \"scenarios\"");
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectArray(*scenarios, "scenarios"));
  for (size_t i = 0; i < scenarios->size(); ++i) {
    ScenarioResult s;
    LOCKSTEP_RETURN_IF_ERROR(ReadScenario(r, (*scenarios)[i], Reader::Index("scenarios", i), &s));
    result.scenarios.push_back(std::move(s));
  }
  return result;
}

std::string SerializeRunResult(const RunResult& result) {
  return RunResultToJson(result).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<RunResult> ParseRunResult(const std::string& text, const std::string& origin) {
  // Before parsing: a value nested 100,000 deep parses, then overflows the stack when copied.
  if (std::optional<std::string> deep = FindJsonTooDeep(text)) {
    return InvalidArgumentError(origin + ": " + *deep + "; not a lockstep report");
  }
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return InvalidArgumentError(origin + ": not valid JSON: " + e.what());
  }
  return RunResultFromJson(json, origin);
}

Result<RunResult> ReadRunResultFile(const std::string& path) {
  Result<std::string> text = ReadBoundedFile(path, kMaxReportBytes, "report");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return NotFoundError(path + ": cannot open the report");
    return text.status();
  }
  return ParseRunResult(*text, path);
}

}  // namespace lockstep
