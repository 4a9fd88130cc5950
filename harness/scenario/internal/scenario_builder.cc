#include "harness/scenario/internal/scenario_builder.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <utility>

#include "harness/core/exit_code.h"
#include "harness/discovery/discovery_calls.h"
#include "harness/scenario/internal/edit_distance.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/scenario_limits.h"
#include "harness/trace/trace_record.h"

namespace lockstep::internal {
namespace {

// "file:line:col" (kOriginKey) as a location; a file name may hold ':' itself.
SourceLocation ParseOrigin(const std::string& text) {
  SourceLocation at;
  const size_t col = text.rfind(':');
  const size_t line = col == std::string::npos || col == 0 ? std::string::npos : text.rfind(':', col - 1);
  if (line == std::string::npos) {
    at.file = text;
    return at;
  }
  at.file = text.substr(0, line);
  at.line = std::atoi(text.substr(line + 1, col - line - 1).c_str());
  at.column = std::atoi(text.substr(col + 1).c_str());
  return at;
}

// Values the trainer holds as float32: a positive one must be a normal float, any one finite.
constexpr RealRange kPositiveFloat{kMinPositiveFloat, true, kMaxFloat, true};
constexpr RealRange kNonNegativeFloat{0, true, kMaxFloat, true};
constexpr IntRange kNonNegativeInt{0, INT_MAX};
// The ranges of the keys read into one member each (the rows below name them).
constexpr IntRange kRankCount{1, kMaxRanks};
constexpr IntRange kStepCount{1, kMaxSteps};
constexpr IntRange kStepNumber{0, kMaxSteps};
constexpr IntRange kLayerCount{1, kMaxLayers};
constexpr IntRange kHiddenSize{1, kMaxHidden};
constexpr IntRange kPositiveCount{1, kMaxCount};
constexpr IntRange kModelDim{1, kMaxModelDim};
constexpr IntRange kVocabSize{2, kMaxModelDim};
constexpr RealRange kTimeout{0, false, kMaxTimeoutS, true};
constexpr RealRange kWatchdogTimeout{kMinHangTimeoutS, true, kMaxTimeoutS, true};  // hang, start-up
constexpr RealRange kUnitHalfOpen{0, true, 1, false};
constexpr RealRange kBucketMb{0, false, kMaxBucketMb, true};

// A checker name: one of the caller's vocabulary, or any text when it passed none.
std::optional<std::string> ReadCheckerName(const YamlField& field, const LoadOptions& options, YamlReader& reader) {
  if (!options.checker_names) return reader.ReadString(field);
  const std::vector<std::string_view> names(options.checker_names->begin(), options.checker_names->end());
  std::optional<std::size_t> index = reader.ReadChoice(field, names, "checker", false);
  if (!index) return std::nullopt;
  return std::string(names[*index]);
}

std::vector<std::string_view> InjectionKindNames() {
  std::vector<std::string_view> names;
  for (const InjectionKindInfo& info : kInjectionKinds) names.push_back(info.name);
  return names;
}

// Injection parameters are free-form, so an unknown key there is only a typo when it is very
// close to a fixed key: one edit, or the same letters swapped ("stpe").
std::optional<std::string_view> InjectKeyTypo(const std::string& key, const std::vector<std::string_view>& keys) {
  for (std::string_view known : keys) {
    std::string a(key), b(known);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (EditDistance(key, known) <= 1 || a == b) return known;
  }
  return std::nullopt;
}

// Ids become folder names under the run directory and appear in reports and command lines.
bool IsValidId(const std::string& id) {
  if (id.empty() || id.front() == '/' || id.back() == '/') return false;
  std::size_t start = 0;
  while (start <= id.size()) {
    std::size_t end = id.find('/', start);
    if (end == std::string::npos) end = id.size();
    std::string part = id.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.front() == '.') return false;
    for (char c : part) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.';
      if (!ok) return false;
    }
    start = end + 1;
  }
  return true;
}

// An id is a folder of the run directory: too long a part or a whole is a "File name too long" at
// run time, and the run directory's own files are not scenario folders.
std::optional<std::string> IdLayoutProblem(const std::string& id) {
  if (id.size() > kMaxIdLength) {
    return "is " + std::to_string(id.size()) + " characters long; an id may have at most " + std::to_string(kMaxIdLength);
  }
  std::size_t start = 0;
  while (start <= id.size()) {
    std::size_t end = id.find('/', start);
    if (end == std::string::npos) end = id.size();
    if (end - start > kMaxIdPartLength) {
      return "has a part of " + std::to_string(end - start) + " characters; each part between '/' may have at most " +
             std::to_string(kMaxIdPartLength);
    }
    start = end + 1;
  }
  const std::string first = id.substr(0, id.find('/'));
  for (std::string_view reserved : kReservedIds) {
    if (first == reserved) return "\"" + std::string(reserved) + "\" is a file of the run directory; choose another id";
  }
  return std::nullopt;
}

// The parameters FaultInjector reads, held to what it can do: `crash` raises one of the signals
// the docs name or exits with a code a process can return; `bitflip` flips a bit of an element.
std::string FormatNumber(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

ScenarioBuilder::ScenarioBuilder(LoadOptions options) : options_(std::move(options)) {}

bool ScenarioBuilder::Rejected(const std::string& path) const {
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    if (rejected_.count(path.substr(0, dot))) return true;
  }
  return rejected_.count(path) > 0;
}

std::optional<SourceLocation> ScenarioBuilder::NameLocation() const {
  auto it = set_at_.find("name");
  if (it == set_at_.end()) return std::nullopt;
  return it->second;
}

// ---- the keys of each mapping, in the order docs/SCENARIOS.md lists them ----------------------
// Each row reads its key; ReadKeys (scenario_builder.h) walks the rows, so a key is written once.

using Self = ScenarioBuilder;

const Self::Keys<Scenario>& ScenarioBuilder::TopKeys() {
  static const Keys<Scenario> kKeys = {
      // Its presence made the loader read the file as resolved (scenario_loader.h).
      {kResolvedFromKey, &StringField<&Scenario::resolved_from>, nullptr, /*scenario_only=*/true},
      {"name", &StringField<&Scenario::name>, nullptr, /*scenario_only=*/true},
      {"description", &StringField<&Scenario::description>},
      {"ranks", &IntField<&Scenario::ranks, kRankCount>},
      {"slices", &IntField<&Scenario::slices, kRankCount>},
      {"backend", &EnumField<&Scenario::backend>},
      {"steps", &IntField<&Scenario::steps, kStepCount>},
      {"seed", &UnsignedField<&Scenario::seed>},
      {"timeout_s", &RealField<&Scenario::timeout_s, kTimeout>},
      {"hang_timeout_s", &RealField<&Scenario::hang_timeout_s, kWatchdogTimeout>},
      {"quiet_timeout_s", &RealField<&Scenario::quiet_timeout_s, kWatchdogTimeout>},
      {"startup_timeout_s", &RealField<&Scenario::startup_timeout_s, kWatchdogTimeout>},
      {"device", &EnumField<&Scenario::device>},
      {"model", [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, ModelKeys(), s.model, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(ModelKeys(), p + ".", out); }},
      {"data", [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, DataKeys(), s.data, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(DataKeys(), p + ".", out); }},
      {"parallel",
       [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, ParallelKeys(), s.parallel, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(ParallelKeys(), p + ".", out); }},
      {"optimizer",
       [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, OptimizerKeys(), s.optimizer, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(OptimizerKeys(), p + ".", out); }},
      {"checks", [](Self& b, Scenario&, const YamlField& f, YamlReader& r) { b.ApplyChecks(f, r); }},
      {"inject", [](Self& b, Scenario&, const YamlField& f, YamlReader& r) { b.ApplyInject(f, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(InjectKeys(), p + "[].", out); },
       /*scenario_only=*/true},
      {"expect", [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, ExpectKeys(), s, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(ExpectKeys(), p + ".", out); },
       /*scenario_only=*/true},
      {"tolerances",
       [](Self& b, Scenario& s, const YamlField& f, YamlReader& r) { b.ReadSection(f, ToleranceKeys(), s.tolerances, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(ToleranceKeys(), p + ".", out); }},
  };
  return kKeys;
}

const Self::Keys<ModelSpec>& ScenarioBuilder::ModelKeys() {
  static const Keys<ModelSpec> kKeys = {
      {"kind", &EnumField<&ModelSpec::kind>},
      {"layers", &IntField<&ModelSpec::layers, kLayerCount>},
      {"hidden", &IntField<&ModelSpec::hidden, kHiddenSize>},
      {"heads", &IntField<&ModelSpec::heads, kPositiveCount>},
      {"seq_len", &IntField<&ModelSpec::seq_len, kModelDim>},
      {"vocab", &IntField<&ModelSpec::vocab, kVocabSize>},
      {"input_dim", &IntField<&ModelSpec::input_dim, kModelDim>},
      {"output_dim", &IntField<&ModelSpec::output_dim, kModelDim>},
      {"attention", &EnumField<&ModelSpec::attention>},
      {"norm", &EnumField<&ModelSpec::norm>},
      {"dropout", &RealField<&ModelSpec::dropout, kUnitHalfOpen>},
  };
  return kKeys;
}

const Self::Keys<DataSpec>& ScenarioBuilder::DataKeys() {
  static const Keys<DataSpec> kKeys = {
      {"batch_per_rank", &IntField<&DataSpec::batch_per_rank, kPositiveCount>},
  };
  return kKeys;
}

const Self::Keys<ParallelSpec>& ScenarioBuilder::ParallelKeys() {
  static const Keys<ParallelSpec> kKeys = {
      {"mode", &EnumField<&ParallelSpec::mode>},
      {"bucket_mb", &RealField<&ParallelSpec::bucket_mb, kBucketMb>},
      {"grad_accum", &IntField<&ParallelSpec::grad_accum, kPositiveCount>},
  };
  return kKeys;
}

const Self::Keys<OptimizerSpec>& ScenarioBuilder::OptimizerKeys() {
  static const Keys<OptimizerSpec> kKeys = {
      {"kind", &EnumField<&OptimizerSpec::kind>},
      {"lr", &RealField<&OptimizerSpec::lr, kPositiveFloat>},
      {"momentum", &RealField<&OptimizerSpec::momentum, kUnitHalfOpen>},
      {"beta1", &RealField<&OptimizerSpec::beta1, kUnitHalfOpen>},
      {"beta2", &RealField<&OptimizerSpec::beta2, kUnitHalfOpen>},
      {"eps", &RealField<&OptimizerSpec::eps, kPositiveFloat>},
      {"weight_decay", &RealField<&OptimizerSpec::weight_decay, kNonNegativeFloat>},
      {"clip_grad_norm", &RealField<&OptimizerSpec::clip_grad_norm, kNonNegativeFloat>},
      {"warmup_steps", &IntField<&OptimizerSpec::warmup_steps, kStepNumber>},
  };
  return kKeys;
}

const Self::Keys<Tolerances>& ScenarioBuilder::ToleranceKeys() {
  static const Keys<Tolerances> kKeys = {
      {"reference_rtol", &RealField<&Tolerances::reference_rtol, kNonNegativeFloat>},
      {"reference_atol", &RealField<&Tolerances::reference_atol, kNonNegativeFloat>},
      {"golden_rtol", &RealField<&Tolerances::golden_rtol, kNonNegativeFloat>},
  };
  return kKeys;
}

// The fixed keys of an `inject` entry; any other key is a kind-specific parameter (ApplyInject).
const Self::Keys<Self::InjectEntry>& ScenarioBuilder::InjectKeys() {
  static const Keys<InjectEntry> kKeys = {
      {"kind",
       [](Self&, InjectEntry& e, const YamlField& f, YamlReader& r) {
         e.saw_kind = true;
         const std::vector<std::string_view> kinds = InjectionKindNames();
         if (std::optional<std::size_t> index = r.ReadChoice(f, kinds, "injection kind", false)) {
           e.injection.kind = std::string(kinds[*index]);
           e.info.kind_at = r.LocationOf(f);
         }
       }},
      {"rank", [](Self& b, InjectEntry& e, const YamlField& f, YamlReader& r) { b.ReadInjectRanks(e, f, false, r); }},
      {"ranks", [](Self& b, InjectEntry& e, const YamlField& f, YamlReader& r) { b.ReadInjectRanks(e, f, true, r); }},
      {"step",
       [](Self&, InjectEntry& e, const YamlField& f, YamlReader& r) {
         if (std::optional<int64_t> step = r.ReadInt(f, kStepNumber)) {
           e.injection.step = *step;
           e.info.step_at = r.LocationOf(f);
         }
       }},
      {"tensor",
       [](Self&, InjectEntry& e, const YamlField& f, YamlReader& r) {
         std::optional<std::string> tensor = r.ReadString(f);
         if (!tensor) return;
         if (tensor->empty()) {
           r.FieldError(f, "must not be empty; leave it out to mean the kind's default tensors");
         } else {
           e.injection.tensor = *tensor;
           e.info.tensor_at = r.LocationOf(f);
         }
       }},
  };
  return kKeys;
}

const Self::Keys<Scenario>& ScenarioBuilder::ExpectKeys() {
  static const Keys<Scenario> kKeys = {
      {"fail", [](Self& b, Scenario&, const YamlField& f, YamlReader& r) { b.ApplyExpectFail(f, r); },
       [](const std::string& p, std::vector<std::string>& out) { AddPaths(ExpectFailKeys(), p + "[].", out); }},
      {"discovery",
       [](Self&, Scenario& s, const YamlField& f, YamlReader& r) {
         if (!r.ExpectMapping(f)) return;
         r.ForEachEntry(f, {}, /*pass_unknown=*/true, [&](const YamlField& call) {
           if (FindDiscoveryCall(call.name) == nullptr) {
             r.Error(r.Locate(call.key.Mark()), call.path + ": " + UnknownDiscoveryCallMessage(call.name));
           } else if (std::optional<int64_t> times = r.ReadInt(call, kPositiveCount)) {
             s.discovery_allowed[call.name] = static_cast<int>(*times);
           }
         });
       }},
      // Before calls had names: how many times lockstep-rank's topology discovery may run.
      {"discovery_calls",
       [](Self&, Scenario& s, const YamlField& f, YamlReader& r) {
         if (std::optional<int64_t> n = r.ReadInt(f, kPositiveCount)) {
           s.discovery_allowed[kTopologyDiscovery] = static_cast<int>(*n);
         }
       }},
  };
  return kKeys;
}

const Self::Keys<Self::ExpectEntry>& ScenarioBuilder::ExpectFailKeys() {
  static const Keys<ExpectEntry> kKeys = {
      {"checker",
       [](Self& b, ExpectEntry& e, const YamlField& f, YamlReader& r) {
         e.saw_checker = true;
         if (std::optional<std::string> checker = ReadCheckerName(f, b.options_, r)) {
           e.expected.checker = std::move(*checker);
           e.info.kind_at = r.LocationOf(f);
         }
       }},
      {"step",
       [](Self&, ExpectEntry& e, const YamlField& f, YamlReader& r) {
         if (std::optional<int64_t> step = r.ReadInt(f, kStepNumber)) {
           e.expected.step = *step;
           e.info.step_at = r.LocationOf(f);
         }
       }},
      {"ranks",
       [](Self& b, ExpectEntry& e, const YamlField& f, YamlReader& r) {
         b.ReadRanks(f, true, r, e.info.ranks);
       }},
      {"tensor",
       [](Self&, ExpectEntry& e, const YamlField& f, YamlReader& r) {
         if (std::optional<std::string> tensor = r.ReadString(f)) e.expected.tensor = *tensor;
       }},
  };
  return kKeys;
}

std::vector<std::string> ScenarioBuilder::KeyPaths() {
  std::vector<std::string> paths;
  AddPaths(TopKeys(), "", paths);
  return paths;
}

// ---- reading -----------------------------------------------------------------------------------

void ScenarioBuilder::Apply(const YAML::Node& root, LayerKind layer, YamlReader& reader) {
  YamlField doc;
  doc.value = root;
  layer_ = layer;
  ReadKeys(doc, TopKeys(), scenario_, reader);
}

void ScenarioBuilder::ApplyChecks(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectSequence(field)) {
    rejected_.insert(field.path);
    return;
  }
  if (field.value.size() == 0) {
    reader.FieldError(field, "must name at least one checker; leave `checks` out for the default set");
    rejected_.insert(field.path);
    return;
  }
  std::vector<std::string> checks;
  std::vector<SourceLocation> where;
  bool ok = true;
  for (std::size_t i = 0; i < field.value.size(); ++i) {
    YamlField e = field.Element(i, field.value[i]);
    std::optional<std::string> read = ReadCheckerName(e, options_, reader);
    if (!read) {
      ok = false;
      continue;
    }
    std::string name = std::move(*read);
    if (std::find(checks.begin(), checks.end(), name) != checks.end()) {
      reader.FieldError(e, "checker \"" + name + "\" is listed twice");
      ok = false;
      continue;
    }
    checks.push_back(name);
    where.push_back(reader.LocationOf(e));
  }
  if (!ok) {
    rejected_.insert(field.path);
    return;
  }
  scenario_.checks = std::move(checks);
  check_at_ = std::move(where);
  checks_set_ = true;
  rejected_.erase(field.path);
  set_at_[field.path] = reader.LocationOf(field);
}

bool ScenarioBuilder::ReadRanks(const YamlField& field, bool as_list, YamlReader& reader, std::vector<RankRef>& out) {
  if (!as_list) {
    std::optional<int64_t> rank = reader.ReadInt(field, kNonNegativeInt);
    if (!rank) return false;
    out.push_back(RankRef{static_cast<int>(*rank), field.path, reader.LocationOf(field)});
    return true;
  }
  if (!reader.ExpectSequence(field)) return false;
  if (field.value.size() == 0) {
    reader.FieldError(field, "must name at least one rank");
    return false;
  }
  bool ok = true;
  for (std::size_t i = 0; i < field.value.size(); ++i) {
    YamlField e = field.Element(i, field.value[i]);
    std::optional<int64_t> rank = reader.ReadInt(e, kNonNegativeInt);
    if (!rank) {
      ok = false;
      continue;
    }
    const int r = static_cast<int>(*rank);
    if (std::any_of(out.begin(), out.end(), [r](const RankRef& x) { return x.rank == r; })) {
      reader.FieldError(e, "rank " + std::to_string(r) + " is listed twice");
      ok = false;
      continue;
    }
    out.push_back(RankRef{r, e.path, reader.LocationOf(e)});
  }
  return ok;
}

void ScenarioBuilder::ReadInjectRanks(InjectEntry& entry, const YamlField& field, bool as_list, YamlReader& reader) {
  if ((as_list && entry.saw_rank) || (!as_list && entry.saw_ranks)) {
    reader.Error(reader.Locate(field.key.Mark()), field.path + ": give either `rank` or `ranks`, not both");
    return;
  }
  (as_list ? entry.saw_ranks : entry.saw_rank) = true;
  ReadRanks(field, as_list, reader, entry.info.ranks);
}

void ScenarioBuilder::ApplyInject(const YamlField& field, YamlReader& reader) {
  scenario_.inject.clear();
  inject_info_.clear();
  if (!reader.ExpectSequence(field)) {
    rejected_.insert(field.path);
    return;
  }
  const std::vector<std::string_view> fixed_keys = KeyNames(InjectKeys());
  for (std::size_t i = 0; i < field.value.size(); ++i) {
    YamlField e = field.Element(i, field.value[i]);
    InjectEntry entry;
    entry.info.path = e.path;
    entry.info.at = reader.LocationOf(e);
    entry.injection.location = entry.info.at;
    if (!reader.ExpectMapping(e)) {
      entry.info.valid = false;
      scenario_.inject.push_back(std::move(entry.injection));
      inject_info_.push_back(std::move(entry.info));
      continue;
    }
    const int errors_before = reader.error_count();
    ReadKeys(e, InjectKeys(), entry, reader, [&](const YamlField& f) {
      if (options_.resolved && f.name == kOriginKey) {
        if (std::optional<std::string> origin = reader.ReadString(f)) entry.injection.location = ParseOrigin(*origin);
      } else if (std::optional<std::string_view> typo = InjectKeyTypo(f.name, fixed_keys)) {
        reader.Error(reader.Locate(f.key.Mark()), f.path + ": unknown key; did you mean \"" + std::string(*typo) + "\"?");
      } else if (std::optional<std::string> value = reader.ReadScalarText(f)) {
        entry.injection.params[f.name] = *value;
        entry.info.param_at[f.name] = reader.LocationOf(f);
      }
    });
    if (!entry.saw_kind) reader.Error(entry.info.at, e.path + ".kind: missing required key");
    if (!entry.saw_rank && !entry.saw_ranks) {
      reader.Error(entry.info.at, e.path + ".rank: missing required key (or `ranks: [...]` for several ranks)");
    }
    entry.info.valid = reader.error_count() == errors_before;
    for (const RankRef& r : entry.info.ranks) entry.injection.ranks.push_back(r.rank);
    scenario_.inject.push_back(std::move(entry.injection));
    inject_info_.push_back(std::move(entry.info));
  }
  set_at_[field.path] = reader.LocationOf(field);
}

void ScenarioBuilder::ApplyExpectFail(const YamlField& field, YamlReader& reader) {
  scenario_.expect_fail.clear();
  expect_info_.clear();
  if (!reader.ExpectSequence(field)) {
    rejected_.insert(field.path);
    return;
  }
  for (std::size_t i = 0; i < field.value.size(); ++i) {
    YamlField e = field.Element(i, field.value[i]);
    ExpectEntry entry;
    entry.info.path = e.path;
    entry.info.at = reader.LocationOf(e);
    entry.expected.location = entry.info.at;
    if (!reader.ExpectMapping(e)) {
      entry.info.valid = false;
      scenario_.expect_fail.push_back(std::move(entry.expected));
      expect_info_.push_back(std::move(entry.info));
      continue;
    }
    const int errors_before = reader.error_count();
    ReadKeys(e, ExpectFailKeys(), entry, reader);
    if (!entry.saw_checker) reader.Error(entry.info.at, e.path + ".checker: missing required key");
    entry.info.valid = reader.error_count() == errors_before;
    for (const RankRef& r : entry.info.ranks) entry.expected.ranks.push_back(r.rank);
    scenario_.expect_fail.push_back(std::move(entry.expected));
    expect_info_.push_back(std::move(entry.info));
  }
}

void ScenarioBuilder::CheckName(Scenario& s, const std::string& default_name, const SourceLocation& file_start,
                                YamlReader& reader) {
  const std::string kIdRule = "use letters, digits, '_', '-' and '.', with '/' between parts";
  if (Rejected("name")) return;
  if (auto it = set_at_.find("name"); it != set_at_.end()) {
    if (!IsValidId(s.name)) {
      reader.Error(it->second, "name: " + Quote(s.name) + " is not a valid id; " + kIdRule);
    } else if (std::optional<std::string> problem = IdLayoutProblem(s.name)) {
      reader.Error(it->second, "name: " + Quote(s.name) + ": " + *problem);
    }
    return;
  }
  s.name = default_name;
  if (!IsValidId(s.name)) {
    reader.Error(file_start, "name: the id " + Quote(s.name) + " taken from the file path is not valid (" + kIdRule +
                                 "); set `name`");
  } else if (std::optional<std::string> problem = IdLayoutProblem(s.name)) {
    reader.Error(file_start, "name: the id " + Quote(s.name) + " taken from the file path: " + *problem + "; set `name`");
  }
}

void ScenarioBuilder::CheckModel(const Scenario& s, const SourceLocation& file_start, YamlReader& reader) {
  // A rule that involves several keys is reported at the first of them a file set.
  auto report = [&](std::initializer_list<const char*> paths, const std::string& message) {
    for (const char* p : paths) {
      if (Rejected(p)) return;
    }
    for (const char* p : paths) {
      if (auto it = set_at_.find(p); it != set_at_.end()) {
        reader.Error(it->second, std::string(p) + ": " + message);
        return;
      }
    }
    reader.Error(file_start, std::string(*paths.begin()) + ": " + message);
  };
  const ModelSpec& m = s.model;
  if (s.ranks % s.slices != 0) {
    report({"slices", "ranks"}, "ranks (" + std::to_string(s.ranks) + ") must be a multiple of slices (" +
                                    std::to_string(s.slices) + ")");
  }
  if (m.kind == ModelKind::kTransformer) {
    if (m.hidden % m.heads != 0) {
      report({"model.heads", "model.hidden", "model.kind"}, "model.hidden (" + std::to_string(m.hidden) +
                                                                ") must be a multiple of model.heads (" +
                                                                std::to_string(m.heads) + ")");
    }
    if (m.norm == NormKind::kBatchNorm) {
      report({"model.norm", "model.kind"}, "batchnorm is for mlp models; the transformer's blocks use layernorm");
    }
  }
  if (m.norm == NormKind::kBatchNorm && s.data.batch_per_rank < 2) {
    // BatchNorm cannot compute batch statistics in training from a single sample.
    report({"data.batch_per_rank", "model.norm"},
           "batchnorm needs at least 2 samples per rank, got " + std::to_string(s.data.batch_per_rank));
  }
}

namespace {

std::optional<int64_t> ParseWholeInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

}  // namespace

// An injection that validates must act: refuse the kinds, modes and parameters that would run
// as a silent no-op (docs/SCENARIOS.md#inject says which act where).
void ScenarioBuilder::CheckInjectionEffect(const Scenario& s, const Injection& injection, const EntryInfo& info,
                                           YamlReader& reader) {
  const std::string& kind = injection.kind;
  if (s.parallel.mode == ParallelMode::kZero1 && !Rejected("parallel.mode")) {
    if (kind == injection_kind::kNoSyncOffByOne) {
      reader.Error(info.kind_at, info.path + ".kind: no_sync_off_by_one has no effect in parallel.mode zero1: zero1 "
                                             "reduce-scatters once after the last micro-step, there is no no_sync "
                                             "window to get wrong (use parallel.mode: ddp)");
    } else if (kind == injection_kind::kWrongGradScale && s.optimizer.kind == OptimizerKind::kAdamW &&
               !Rejected("optimizer.kind")) {
      reader.Error(info.kind_at, info.path + ".kind: wrong_grad_scale has no observable effect in parallel.mode "
                                             "zero1 with optimizer adamw: Adam's update does not depend on the "
                                             "gradient's scale (up to eps), and the all-gather keeps the replicas "
                                             "identical (use optimizer sgd, or parallel.mode: ddp)");
    } else if (kind == injection_kind::kNondeterministicReduce) {
      reader.Error(info.kind_at, info.path + ".kind: nondeterministic_reduce has no observable effect in "
                                             "parallel.mode zero1: the reordered sum changes only this rank's shard, "
                                             "by rounding, and the all-gather copies it to every replica, so no "
                                             "replica differs and the change lies inside the floating-point noise "
                                             "(use parallel.mode: ddp)");
    }
  }
  if (kind == injection_kind::kStaleGrad && injection.step < 2 && info.step_at) {
    reader.Error(*info.step_at, info.path + ".step: stale_grad needs step >= 2: at step " +
                                    std::to_string(injection.step) + " there is no previous gradient to re-apply");
  } else if (kind == injection_kind::kStaleGrad && injection.step < 2) {
    reader.Error(info.kind_at, info.path + ".kind: stale_grad needs step >= 2 (the default onset is 1): at step 1 "
                                           "there is no previous gradient to re-apply");
  }
  if (info.tensor_at && kind != injection_kind::kBitflip) {
    reader.Error(*info.tensor_at, info.path + ".tensor: " + kind +
                                      " does not act on chosen tensors; `tensor` applies to bitflip only");
  }
  // Kind-specific parameters (kInjectionParams says which kind takes which): integers in a range,
  // or a closed word list.
  for (const auto& [name, at] : info.param_at) {
    const std::string& value = injection.params.at(name);
    const std::string where = info.path + "." + name;
    // A structured binding cannot be captured by a lambda in C++17 (clang refuses it); a reference can.
    const std::string& param = name;
    const bool takes = std::any_of(kInjectionParams.begin(), kInjectionParams.end(), [&kind, &param](const InjectionParamRule& r) {
      return r.kind == kind && r.param == param;
    });
    if (!takes) {
      std::string taken;
      for (const InjectionParamRule& r : kInjectionParams) {
        if (r.kind != kind) continue;
        taken += std::string(taken.empty() ? "" : r.one_of ? " or " : " and ") + "`" + std::string(r.param) + "`";
      }
      reader.Error(at, where + ": unknown parameter: " + kind + " " +
                           (taken.empty() ? "takes no parameters" : "takes only " + taken));
    } else if (name == injection_param::kBit || name == injection_param::kIndex) {
      const int64_t max = name == injection_param::kBit ? 31 : INT64_MAX;
      std::optional<int64_t> v = ParseWholeInt(value);
      if (!v || *v < 0 || *v > max) {
        reader.Error(at, where + ": must be an integer in [0, " + (name == injection_param::kBit ? "31" : "2^63-1") +
                             "] (bitflip flips one bit of one float32 element), got " + Quote(value));
      }
    } else if (name == injection_param::kExitCode) {
      std::optional<int64_t> v = ParseWholeInt(value);
      const int usage = ToInt(ExitCode::kUsageError), harness = ToInt(ExitCode::kHarnessError);
      if (!v || *v < kMinCrashExitCode || *v > kMaxCrashExitCode || *v == usage || *v == harness) {
        reader.Error(at, where + ": must be an integer in [1, 255] other than " + std::to_string(usage) + " and " +
                             std::to_string(harness) + " (lockstep's own usage and harness-error codes, which would "
                             "read as a harness error), got " + Quote(value));
      } else if (injection.params.count(std::string(injection_param::kSignal))) {
        reader.Error(at, where + ": give either `signal` or `exit_code`: a rank that raises a signal exits with no code");
      }
    } else if (name == injection_param::kSignal) {
      if (!CrashSignal(value)) reader.Error(at, where + ": must be SIGSEGV or SIGKILL, got " + Quote(value));
    }
  }
}

// An injection must be visible to a check the scenario runs, or the scenario passes with the bug
// in it: in zero1 a corrupted shard update is copied to every replica, and only `reference`
// (opt-in there) sees it (docs/SCENARIOS.md#inject).
void ScenarioBuilder::CheckInjectionSeen(const Scenario& s, const Injection& injection, const InjectionKindInfo& kind,
                                         const EntryInfo& info, YamlReader& reader) {
  const bool checks_known = checks_set_ || static_cast<bool>(options_.default_checks);
  if (!checks_known || Rejected("checks") || Rejected("parallel.mode") || !options_.symptoms_seen_by ||
      !options_.checkers_seeing) {
    return;
  }
  const Symptoms symptoms = SymptomsIn(kind, s.parallel.mode);
  if ((options_.symptoms_seen_by(s.checks) & symptoms) != 0) return;
  std::string would;
  for (const std::string& name : options_.checkers_seeing(symptoms)) would += (would.empty() ? "" : ", ") + name;
  const std::string whose = checks_set_ ? "this scenario's checks" : "the default checks (the scenario sets no `checks:`)";
  reader.Error(info.kind_at, info.path + ".kind: none of " + whose + " can see " + injection.kind +
                                 " in parallel.mode " + ToString(s.parallel.mode) + ", so the scenario would pass " +
                                 "with the bug in it; only " + (would.empty() ? "no checker" : would) +
                                 " can: add it to `checks:`");
}

void ScenarioBuilder::CheckEntries(const Scenario& s, YamlReader& reader) {
  if (Rejected("ranks") || Rejected("steps")) return;
  auto check_common = [&](const EntryInfo& info, std::optional<int64_t> step) {
    for (const RankRef& r : info.ranks) {
      if (r.rank >= s.ranks) {
        reader.Error(r.at, r.path + ": must be < ranks (" + std::to_string(s.ranks) + "), got " +
                               std::to_string(r.rank));
      }
    }
    if (step && *step > s.steps && info.step_at) {
      reader.Error(*info.step_at, info.path + ".step: must be <= steps (" + std::to_string(s.steps) + "), got " +
                                      std::to_string(*step));
    }
  };
  for (std::size_t i = 0; i < s.inject.size(); ++i) {
    const EntryInfo& info = inject_info_[i];
    const Injection& injection = s.inject[i];
    if (!info.valid) continue;
    check_common(info, injection.step);
    const InjectionKindInfo* kind = FindInjectionKind(injection.kind);
    if (kind == nullptr) continue;
    bool met = true;
    std::string detail;
    switch (kind->requirement) {
      case InjectionRequirement::kNone: break;
      case InjectionRequirement::kGradAccum:
        met = s.parallel.grad_accum > 1;
        detail = "parallel.grad_accum is " + std::to_string(s.parallel.grad_accum);
        break;
      case InjectionRequirement::kZero1:
        met = s.parallel.mode == ParallelMode::kZero1;
        detail = std::string("parallel.mode is ") + ToString(s.parallel.mode);
        break;
      case InjectionRequirement::kBatchNorm:
        met = s.model.norm == NormKind::kBatchNorm;
        detail = std::string("model.norm is ") + ToString(s.model.norm);
        break;
      case InjectionRequirement::kGradClip:
        met = s.optimizer.clip_grad_norm > 0;
        detail = "optimizer.clip_grad_norm is " + FormatNumber(s.optimizer.clip_grad_norm);
        break;
      case InjectionRequirement::kTransformer:
        met = s.model.kind == ModelKind::kTransformer;
        detail = std::string("model.kind is ") + ToString(s.model.kind);
        break;
      case InjectionRequirement::kOnsetStepZero:
        met = injection.step == 0;
        detail = "step is " + std::to_string(injection.step);
        break;
    }
    if (!met) {
      reader.Error(info.kind_at, info.path + ".kind: " + injection.kind + " needs " +
                                     std::string(RequirementText(kind->requirement)) + ", but " + detail);
    }
    CheckInjectionEffect(s, injection, info, reader);
    CheckInjectionSeen(s, injection, *kind, info, reader);
  }
  for (std::size_t i = 0; i < s.expect_fail.size(); ++i) {
    const EntryInfo& info = expect_info_[i];
    const ExpectedFinding& expected = s.expect_fail[i];
    if (!info.valid) continue;
    check_common(info, expected.step);
    // Without `checks:` and without the caller's default set (lockstep-rank) the checks are unknown.
    const bool checks_known = checks_set_ || static_cast<bool>(options_.default_checks);
    if (!Rejected("checks") && checks_known &&
        std::find(s.checks.begin(), s.checks.end(), expected.checker) == s.checks.end()) {
      reader.Error(info.kind_at, info.path + ".checker: " + Quote(expected.checker) +
                                     " is not among the checks this scenario runs");
    }
  }
}

Scenario ScenarioBuilder::Finish(const std::string& file, const std::string& default_name, YamlReader& reader) {
  Scenario s = scenario_;
  s.location = SourceLocation{file, 1, 1};
  const SourceLocation file_start = s.location;
  CheckName(s, default_name, file_start, reader);
  CheckModel(s, file_start, reader);
  s.checks_defaulted = !checks_set_;
  if (!checks_set_ && options_.default_checks) s.checks = options_.default_checks(s);
  CheckEntries(s, reader);
  return s;
}

}  // namespace lockstep::internal

namespace lockstep {

std::vector<std::string> ScenarioKeyPaths() { return internal::ScenarioBuilder::KeyPaths(); }

}  // namespace lockstep
