#include "harness/result/run_result_json.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/core/untrusted_input.h"
#include "harness/result/json_number.h"

namespace lockstep {
namespace {

using Json = nlohmann::ordered_json;

// Every field name of report.json, written once: the writer and the reader below both use these
// (docs/REPORTS.md documents them).
namespace key {
// the document
constexpr char kSchema[] = "schema";
constexpr char kContext[] = "context";
constexpr char kSummary[] = "summary";
constexpr char kScenarios[] = "scenarios";
// context
constexpr char kVersions[] = "versions";
constexpr char kHost[] = "host";
constexpr char kGitSha[] = "git_sha";
constexpr char kBackend[] = "backend";
constexpr char kLauncher[] = "launcher";
constexpr char kCommandLine[] = "command_line";
constexpr char kStartedAt[] = "started_at";
constexpr char kDurationS[] = "duration_s";
// summary (written only: a reader derives it from the scenarios)
constexpr char kTotal[] = "total";
constexpr char kPassed[] = "passed";
constexpr char kFailed[] = "failed";
constexpr char kXfailed[] = "xfailed";
constexpr char kXpassed[] = "xpassed";
constexpr char kErrors[] = "errors";
constexpr char kTimeouts[] = "timeouts";
constexpr char kSkipped[] = "skipped";
// a scenario (also backend, duration_s above)
constexpr char kId[] = "id";
constexpr char kFile[] = "file";
constexpr char kLine[] = "line";
constexpr char kDescription[] = "description";
constexpr char kMode[] = "mode";
constexpr char kRanks[] = "ranks";
constexpr char kSteps[] = "steps";
constexpr char kOutcome[] = "outcome";
constexpr char kReason[] = "reason";
constexpr char kFindings[] = "findings";
constexpr char kCheckers[] = "checkers";
constexpr char kRankLogs[] = "rank_logs";
constexpr char kRankHosts[] = "rank_hosts";
constexpr char kRunDir[] = "run_dir";
constexpr char kSeries[] = "series";
// a finding and a checker verdict (also outcome, ranks above)
constexpr char kChecker[] = "checker";
constexpr char kStep[] = "step";
constexpr char kTensor[] = "tensor";
constexpr char kTensors[] = "tensors";
constexpr char kMessage[] = "message";
constexpr char kCause[] = "cause";
constexpr char kDetails[] = "details";
constexpr char kSkipReason[] = "skip_reason";
// a verdict's judged (CheckerCoverage; also tensors, steps, groups)
constexpr char kJudged[] = "judged";
constexpr char kKind[] = "kind";
constexpr char kComparisons[] = "comparisons";
// series (also steps, tensors, step, tensor, ranks above)
constexpr char kLossByRank[] = "loss_by_rank";
constexpr char kDivergentCells[] = "divergent_cells";
constexpr char kGroups[] = "groups";
constexpr char kDigest[] = "digest";
constexpr char kDivergentCellsOmitted[] = "divergent_cells_omitted";
constexpr char kLastCollectives[] = "last_collectives";
constexpr char kRank[] = "rank";
constexpr char kGroup[] = "group";
constexpr char kSeq[] = "seq";
constexpr char kOp[] = "op";
constexpr char kStartS[] = "start_s";
constexpr char kEndS[] = "end_s";
}  // namespace key

constexpr const char* kSchemaPrefix = "lockstep.report/";

Json DoubleToJson(double value) { return JsonNumber<Json>(value); }

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
  out[key::kChecker] = finding.checker;
  out[key::kOutcome] = ToString(finding.outcome);
  out[key::kStep] = finding.step ? Json(*finding.step) : Json(nullptr);
  out[key::kTensor] = finding.tensor;
  out[key::kTensors] = finding.tensors;
  out[key::kRanks] = finding.ranks;
  out[key::kMessage] = finding.message;
  out[key::kCause] = finding.cause;
  Json details = Json::object();
  for (const auto& [key, value] : finding.details) details[key] = value;
  out[key::kDetails] = std::move(details);
  return out;
}

Json VerdictToJson(const CheckerVerdict& verdict) {
  Json out;
  out[key::kChecker] = verdict.checker;
  out[key::kOutcome] = ToString(verdict.outcome);
  out[key::kDurationS] = DoubleToJson(verdict.duration_s);
  out[key::kSkipReason] = verdict.skip_reason;
  if (verdict.judged) {
    const CheckerCoverage& c = *verdict.judged;
    Json judged;
    judged[key::kKind] = c.kind;
    judged[key::kTensors] = c.tensors;
    judged[key::kSteps] = c.steps;
    judged[key::kGroups] = c.groups;
    judged[key::kComparisons] = c.comparisons;
    out[key::kJudged] = std::move(judged);
  }
  return out;
}

Json SeriesToJson(const ScenarioSeries& series) {
  Json out;
  out[key::kSteps] = series.steps;
  Json losses = Json::object();
  for (const auto& [rank, values] : series.loss_by_rank) {
    Json list = Json::array();
    for (double v : values) list.push_back(DoubleToJson(v));
    losses[std::to_string(rank)] = std::move(list);
  }
  out[key::kLossByRank] = std::move(losses);
  out[key::kTensors] = series.tensors;
  Json cells = Json::array();
  for (const DivergenceCell& cell : series.divergent_cells) {
    Json groups = Json::array();
    for (const auto& [ranks, digest] : cell.groups) {
      Json group;
      group[key::kRanks] = ranks;
      group[key::kDigest] = digest;
      groups.push_back(std::move(group));
    }
    Json c;
    c[key::kStep] = cell.step;
    c[key::kTensor] = cell.tensor;
    c[key::kGroups] = std::move(groups);
    cells.push_back(std::move(c));
  }
  out[key::kDivergentCells] = std::move(cells);
  out[key::kDivergentCellsOmitted] = series.divergent_cells_omitted;
  Json collectives = Json::array();
  for (const CollectiveSummary& c : series.last_collectives) {
    Json j;
    j[key::kRank] = c.rank;
    j[key::kGroup] = c.group;
    j[key::kSeq] = c.seq;
    j[key::kOp] = c.op;
    j[key::kStep] = c.step;
    j[key::kStartS] = DoubleToJson(c.start_s);
    j[key::kEndS] = OptionalDoubleToJson(c.end_s);
    collectives.push_back(std::move(j));
  }
  out[key::kLastCollectives] = std::move(collectives);
  return out;
}

Json ScenarioToJson(const ScenarioResult& s) {
  Json out;
  out[key::kId] = s.id;
  out[key::kFile] = s.file;
  out[key::kLine] = s.line;
  out[key::kDescription] = s.description;
  out[key::kMode] = s.mode;
  out[key::kBackend] = s.backend;
  out[key::kRanks] = s.ranks;
  out[key::kSteps] = s.steps;
  out[key::kOutcome] = ToString(s.outcome);
  out[key::kDurationS] = DoubleToJson(s.duration_s);
  out[key::kReason] = s.reason;
  Json findings = Json::array();
  for (const Finding& f : s.findings) findings.push_back(FindingToJson(f));
  out[key::kFindings] = std::move(findings);
  Json checkers = Json::array();
  for (const CheckerVerdict& v : s.checkers) checkers.push_back(VerdictToJson(v));
  out[key::kCheckers] = std::move(checkers);
  out[key::kRankLogs] = IntMapToJson(s.rank_logs);
  // Written where known (a run's traces name their hosts); reports of canned results leave it out.
  if (!s.rank_hosts.empty()) out[key::kRankHosts] = IntMapToJson(s.rank_hosts);
  out[key::kRunDir] = s.run_dir;
  out[key::kSeries] = SeriesToJson(s.series);
  return out;
}

// "pass, fail, ...": the choices an error message lists.
template <typename Enum>
std::string NameListText() {
  std::string text;
  for (const std::string& name : NameList<Enum>()) text += (text.empty() ? "" : ", ") + name;
  return text;
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

  // Each element of the array `j` at `path`, in order, given to read_one(element, its path
  // "path[i]"), a Status; the first error ends the walk. Not an array is an error naming `path`.
  template <typename ReadOne>
  Status EachElement(const Json& j, const std::string& path, ReadOne read_one) const {
    LOCKSTEP_RETURN_IF_ERROR(ExpectArray(j, path));
    for (size_t i = 0; i < j.size(); ++i) LOCKSTEP_RETURN_IF_ERROR(read_one(j[i], Index(path, i)));
    return Status::Ok();
  }

  // The same for the array under `key` of `obj`; absent or null, no element.
  template <typename ReadOne>
  Status EachElement(const Json& obj, const char* key, const std::string& path, ReadOne read_one) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    return EachElement(*j, Join(path, key), read_one);
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
    std::optional<T> v = JsonInteger<T>(j);
    if (!v) return Error(path, "integer out of range");
    *out = *v;
    return Status::Ok();
  }

  template <typename T>
  Status Integer(const Json& obj, const char* key, const std::string& path, T* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    return Integer(*j, Join(path, key), out);
  }

  // null is NaN; "Infinity" / "-Infinity" / "NaN" are the non-finite values JSON cannot spell
  // (harness/result/json_number.h).
  Status Double(const Json& j, const std::string& path, double* out) const {
    if (std::optional<double> number = NumberFromJson(j)) {
      *out = *number;
      return Status::Ok();
    }
    if (j.is_string()) {
      return Error(path, "expected a number, null, \"Infinity\" or \"-Infinity\", got \"" +
                             j.template get<std::string>() + "\"");
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
    out->clear();
    return EachElement(*j, Join(path, key), [&](const Json& e, const std::string& p) -> Status {
      int v = 0;
      LOCKSTEP_RETURN_IF_ERROR(Integer(e, p, &v));
      out->push_back(v);
      return Status::Ok();
    });
  }

  Status StringList(const Json& obj, const char* key, const std::string& path,
                    std::vector<std::string>* out) const {
    const Json* j = Find(obj, key);
    if (j == nullptr || j->is_null()) return Status::Ok();
    out->clear();
    return EachElement(*j, Join(path, key), [&](const Json& e, const std::string& p) -> Status {
      if (!e.is_string()) return Error(p, std::string("expected a string, got ") + TypeName(e));
      out->push_back(e.get<std::string>());
      return Status::Ok();
    });
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
  LOCKSTEP_RETURN_IF_ERROR(r.String(obj, key::kOutcome, path, &name));
  if (name.empty()) return Status::Ok();
  std::optional<Outcome> outcome = FromString<Outcome>(name);
  if (!outcome) {
    return r.Error(Reader::Join(path, key::kOutcome),
                   "unknown outcome \"" + name + "\" (" + NameListText<Outcome>() + ")");
  }
  *out = *outcome;
  return Status::Ok();
}

Status ReadFinding(const Reader& r, const Json& j, const std::string& path, Finding* f) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kChecker, path, &f->checker));
  std::string outcome;
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kOutcome, path, &outcome));
  if (outcome.empty()) {
    f->outcome = FindingOutcome::kFail;
  } else if (std::optional<FindingOutcome> parsed = FromString<FindingOutcome>(outcome)) {
    f->outcome = *parsed;
  } else {
    return r.Error(Reader::Join(path, key::kOutcome),
                   "unknown finding outcome \"" + outcome + "\" (" + NameListText<FindingOutcome>() + ")");
  }
  if (const Json* step = Reader::Find(j, key::kStep); step != nullptr && !step->is_null()) {
    int64_t value = 0;
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*step, Reader::Join(path, key::kStep), &value));
    f->step = value;
  }
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kTensor, path, &f->tensor));
  LOCKSTEP_RETURN_IF_ERROR(r.StringList(j, key::kTensors, path, &f->tensors));
  LOCKSTEP_RETURN_IF_ERROR(r.IntList(j, key::kRanks, path, &f->ranks));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kMessage, path, &f->message));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kCause, path, &f->cause));
  LOCKSTEP_RETURN_IF_ERROR(r.StringMap(j, key::kDetails, path, &f->details));
  return Status::Ok();
}

Status ReadVerdict(const Reader& r, const Json& j, const std::string& path, CheckerVerdict* v) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kChecker, path, &v->checker));
  LOCKSTEP_RETURN_IF_ERROR(ReadOutcome(r, j, path, &v->outcome));
  LOCKSTEP_RETURN_IF_ERROR(r.Double(j, key::kDurationS, path, &v->duration_s));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kSkipReason, path, &v->skip_reason));
  if (const Json* judged = Reader::Find(j, key::kJudged); judged != nullptr && !judged->is_null()) {
    const std::string p = Reader::Join(path, key::kJudged);
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(*judged, p));
    CheckerCoverage c;
    LOCKSTEP_RETURN_IF_ERROR(r.String(*judged, key::kKind, p, &c.kind));
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*judged, key::kTensors, p, &c.tensors));
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*judged, key::kSteps, p, &c.steps));
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*judged, key::kGroups, p, &c.groups));
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(*judged, key::kComparisons, p, &c.comparisons));
    v->judged = c;
  }
  return Status::Ok();
}

Status ReadDivergenceCell(const Reader& r, const Json& j, const std::string& path, DivergenceCell* cell) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kStep, path, &cell->step));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kTensor, path, &cell->tensor));
  return r.EachElement(j, key::kGroups, path, [&](const Json& group, const std::string& p) -> Status {
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(group, p));
    std::pair<std::vector<int>, std::string>& entry = cell->groups.emplace_back();
    LOCKSTEP_RETURN_IF_ERROR(r.IntList(group, key::kRanks, p, &entry.first));
    return r.String(group, key::kDigest, p, &entry.second);
  });
}

Status ReadCollectiveSummary(const Reader& r, const Json& j, const std::string& path, CollectiveSummary* c) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kRank, path, &c->rank));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kGroup, path, &c->group));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kSeq, path, &c->seq));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kOp, path, &c->op));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kStep, path, &c->step));
  LOCKSTEP_RETURN_IF_ERROR(r.Double(j, key::kStartS, path, &c->start_s));
  // end_s: null means still in flight (it hung), not NaN.
  if (const Json* end = Reader::Find(j, key::kEndS); end != nullptr && !end->is_null()) {
    double v = 0;
    LOCKSTEP_RETURN_IF_ERROR(r.Double(*end, Reader::Join(path, key::kEndS), &v));
    c->end_s = v;
  }
  return Status::Ok();
}

Status ReadSeries(const Reader& r, const Json& j, const std::string& path, ScenarioSeries* s) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  LOCKSTEP_RETURN_IF_ERROR(r.EachElement(j, key::kSteps, path, [&](const Json& e, const std::string& p) -> Status {
    int64_t v = 0;
    LOCKSTEP_RETURN_IF_ERROR(r.Integer(e, p, &v));
    s->steps.push_back(v);
    return Status::Ok();
  }));
  if (const Json* losses = Reader::Find(j, key::kLossByRank); losses != nullptr && !losses->is_null()) {
    const std::string p = Reader::Join(path, key::kLossByRank);
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(*losses, p));
    for (auto it = losses->begin(); it != losses->end(); ++it) {
      int rank = 0;
      LOCKSTEP_RETURN_IF_ERROR(r.RankKey(it.key(), p, &rank));
      std::vector<double>& values = s->loss_by_rank[rank];
      LOCKSTEP_RETURN_IF_ERROR(r.EachElement(it.value(), Reader::Join(p, it.key().c_str()),
                                             [&](const Json& e, const std::string& ep) -> Status {
                                               double v = 0;
                                               LOCKSTEP_RETURN_IF_ERROR(r.Double(e, ep, &v));
                                               values.push_back(v);
                                               return Status::Ok();
                                             }));
    }
  }
  LOCKSTEP_RETURN_IF_ERROR(r.StringList(j, key::kTensors, path, &s->tensors));
  LOCKSTEP_RETURN_IF_ERROR(r.EachElement(j, key::kDivergentCells, path, [&](const Json& e, const std::string& p) {
    return ReadDivergenceCell(r, e, p, &s->divergent_cells.emplace_back());
  }));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kDivergentCellsOmitted, path, &s->divergent_cells_omitted));
  return r.EachElement(j, key::kLastCollectives, path, [&](const Json& e, const std::string& p) {
    return ReadCollectiveSummary(r, e, p, &s->last_collectives.emplace_back());
  });
}

Status ReadScenario(const Reader& r, const Json& j, const std::string& path, ScenarioResult* s) {
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(j, path));
  if (Reader::Find(j, key::kId) == nullptr) return r.Error(path, std::string("missing \"") + key::kId + "\"");
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kId, path, &s->id));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kFile, path, &s->file));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kLine, path, &s->line));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kDescription, path, &s->description));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kMode, path, &s->mode));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kBackend, path, &s->backend));
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kRanks, path, &s->ranks));
  // Readers (diff, check) size per-rank tables by it: bounded here, once.
  if (s->ranks < 0 || s->ranks > kMaxWorldSize) {
    return r.Error(Reader::Join(path, key::kRanks), std::to_string(s->ranks) + " is out of range (0 to " +
                                                        std::to_string(kMaxWorldSize) + " ranks)");
  }
  LOCKSTEP_RETURN_IF_ERROR(r.Integer(j, key::kSteps, path, &s->steps));
  LOCKSTEP_RETURN_IF_ERROR(ReadOutcome(r, j, path, &s->outcome));
  LOCKSTEP_RETURN_IF_ERROR(r.Double(j, key::kDurationS, path, &s->duration_s));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kReason, path, &s->reason));
  LOCKSTEP_RETURN_IF_ERROR(r.EachElement(j, key::kFindings, path, [&](const Json& e, const std::string& p) {
    return ReadFinding(r, e, p, &s->findings.emplace_back());
  }));
  LOCKSTEP_RETURN_IF_ERROR(r.EachElement(j, key::kCheckers, path, [&](const Json& e, const std::string& p) {
    return ReadVerdict(r, e, p, &s->checkers.emplace_back());
  }));
  LOCKSTEP_RETURN_IF_ERROR(r.RankStringMap(j, key::kRankLogs, path, &s->rank_logs));
  LOCKSTEP_RETURN_IF_ERROR(r.RankStringMap(j, key::kRankHosts, path, &s->rank_hosts));
  LOCKSTEP_RETURN_IF_ERROR(r.String(j, key::kRunDir, path, &s->run_dir));
  if (const Json* series = Reader::Find(j, key::kSeries); series != nullptr && !series->is_null()) {
    LOCKSTEP_RETURN_IF_ERROR(ReadSeries(r, *series, Reader::Join(path, key::kSeries), &s->series));
  }
  return Status::Ok();
}

Status CheckSchema(const Reader& r, const Json& root) {
  const Json* schema = Reader::Find(root, key::kSchema);
  if (schema == nullptr) {
    return r.Error("", std::string("missing \"") + key::kSchema + "\"; expected \"" + kReportSchema + "\"");
  }
  if (!schema->is_string()) return r.Error(key::kSchema, std::string("expected a string, got ") + TypeName(*schema));
  const std::string& name = schema->get_ref<const std::string&>();
  const std::string prefix = kSchemaPrefix;
  if (name.compare(0, prefix.size(), prefix) != 0) {
    return r.Error(key::kSchema,
                   "\"" + name + "\" is not a lockstep report schema (expected \"" + kReportSchema + "\")");
  }
  // "1" or "1.<minor>": only the major version decides whether we can read it.
  const std::string version = name.substr(prefix.size());
  const std::string major = version.substr(0, version.find('.'));
  if (major != std::to_string(kReportSchemaMajor)) {
    return r.Error(key::kSchema, "unsupported report schema \"" + name + "\": this lockstep reads major version " +
                                 std::to_string(kReportSchemaMajor) + " (\"" + kReportSchema + "\")");
  }
  return Status::Ok();
}

}  // namespace

nlohmann::ordered_json RunResultToJson(const RunResult& result) {
  Json root;
  root[key::kSchema] = kReportSchema;

  const RunContext& c = result.context;
  Json context;
  Json versions = Json::object();
  for (const auto& [key, value] : c.versions) versions[key] = value;
  context[key::kVersions] = std::move(versions);
  context[key::kHost] = c.host;
  context[key::kGitSha] = c.git_sha;
  context[key::kBackend] = c.backend;
  context[key::kLauncher] = c.launcher;
  context[key::kCommandLine] = c.command_line;
  context[key::kStartedAt] = c.started_at;
  context[key::kDurationS] = DoubleToJson(c.duration_s);
  root[key::kContext] = std::move(context);

  const OutcomeCounts counts = CountOutcomes(result);
  Json summary;
  summary[key::kTotal] = counts.total;
  summary[key::kPassed] = counts.passed;
  summary[key::kFailed] = counts.failed;
  summary[key::kXfailed] = counts.xfailed;
  summary[key::kXpassed] = counts.xpassed;
  summary[key::kErrors] = counts.errors;
  summary[key::kTimeouts] = counts.timeouts;
  summary[key::kSkipped] = counts.skipped;
  root[key::kSummary] = std::move(summary);

  Json scenarios = Json::array();
  for (const ScenarioResult& s : result.scenarios) scenarios.push_back(ScenarioToJson(s));
  root[key::kScenarios] = std::move(scenarios);
  return root;
}

Result<RunResult> RunResultFromJson(const nlohmann::ordered_json& json, const std::string& origin) {
  const Reader r(origin);
  LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(json, ""));
  LOCKSTEP_RETURN_IF_ERROR(CheckSchema(r, json));
  RunResult result;
  // key::kSummary is derived from the scenarios (CountOutcomes) and not read back.
  if (const Json* context = Reader::Find(json, key::kContext); context != nullptr && !context->is_null()) {
    LOCKSTEP_RETURN_IF_ERROR(r.ExpectObject(*context, key::kContext));
    RunContext& c = result.context;
    LOCKSTEP_RETURN_IF_ERROR(r.StringMap(*context, key::kVersions, key::kContext, &c.versions));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kHost, key::kContext, &c.host));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kGitSha, key::kContext, &c.git_sha));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kBackend, key::kContext, &c.backend));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kLauncher, key::kContext, &c.launcher));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kCommandLine, key::kContext, &c.command_line));
    LOCKSTEP_RETURN_IF_ERROR(r.String(*context, key::kStartedAt, key::kContext, &c.started_at));
    LOCKSTEP_RETURN_IF_ERROR(r.Double(*context, key::kDurationS, key::kContext, &c.duration_s));
  }
  const Json* scenarios = Reader::Find(json, key::kScenarios);
  if (scenarios == nullptr) return r.Error("", std::string("missing \"") + key::kScenarios + "\"");
  LOCKSTEP_RETURN_IF_ERROR(r.EachElement(*scenarios, key::kScenarios, [&](const Json& e, const std::string& p) {
    return ReadScenario(r, e, p, &result.scenarios.emplace_back());
  }));
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
