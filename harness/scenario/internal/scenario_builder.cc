#include "harness/scenario/internal/scenario_builder.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <utility>

#include "harness/scenario/internal/edit_distance.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/scenario_limits.h"

namespace lockstep::internal {
namespace {

// The keys of each mapping, in the order docs/SCENARIOS.md lists them.
const std::vector<std::string_view> kTopKeys = {
    "name",   "description", "ranks",     "slices", "backend", "steps",  "seed",   "timeout_s", "hang_timeout_s",
    "startup_timeout_s", "device",
    "model",  "data",        "parallel",  "optimizer", "checks", "inject", "expect", "tolerances"};
const std::vector<std::string_view> kModelKeys = {"kind",      "layers",    "hidden",     "heads",
                                                  "seq_len",   "vocab",     "input_dim",  "output_dim",
                                                  "attention", "norm",      "dropout"};
const std::vector<std::string_view> kDataKeys = {"batch_per_rank"};
const std::vector<std::string_view> kParallelKeys = {"mode", "bucket_mb", "grad_accum"};
const std::vector<std::string_view> kOptimizerKeys = {"kind",         "lr",           "momentum",
                                                      "beta1",        "beta2",        "eps",
                                                      "weight_decay", "clip_grad_norm", "warmup_steps"};
const std::vector<std::string_view> kInjectKeys = {"kind", "rank", "ranks", "step", "tensor"};
const std::vector<std::string_view> kExpectKeys = {"fail", "discovery_calls"};
const std::vector<std::string_view> kExpectFailKeys = {"checker", "step", "ranks", "tensor"};
const std::vector<std::string_view> kToleranceKeys = {"reference_rtol", "reference_atol", "golden_rtol"};
// Keys that describe one scenario only; a defaults file may not set them.
const std::vector<std::string_view> kPerScenarioKeys = {"name", "inject", "expect"};

const NameTable<Backend>& kBackends = NamesOf<Backend>();
const NameTable<Device>& kDevices = NamesOf<Device>();
const NameTable<ModelKind>& kModelKinds = NamesOf<ModelKind>();
const NameTable<AttentionKind>& kAttentionKinds = NamesOf<AttentionKind>();
const NameTable<NormKind>& kNormKinds = NamesOf<NormKind>();
const NameTable<ParallelMode>& kParallelModes = NamesOf<ParallelMode>();
const NameTable<OptimizerKind>& kOptimizerKinds = NamesOf<OptimizerKind>();

// Values the trainer holds as float32: a positive one must be a normal float, any one finite.
constexpr RealRange kPositiveFloat{kMinPositiveFloat, true, kMaxFloat, true};
constexpr RealRange kNonNegativeFloat{0, true, kMaxFloat, true};
constexpr IntRange kNonNegativeInt{0, INT_MAX};

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
std::optional<std::string_view> InjectKeyTypo(const std::string& key) {
  for (std::string_view known : kInjectKeys) {
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

void ScenarioBuilder::Apply(const YAML::Node& root, LayerKind layer, YamlReader& reader) {
  YamlField doc;
  doc.value = root;
  Scenario& s = scenario_;
  reader.ForEachEntry(doc, kTopKeys, false, [&](const YamlField& f) {
    const std::string& k = f.name;
    if (layer == LayerKind::kDefaults &&
        std::find(kPerScenarioKeys.begin(), kPerScenarioKeys.end(), k) != kPerScenarioKeys.end()) {
      reader.FieldError(f, "belongs to one scenario and cannot be set in " + std::string(kDefaultsFileName));
      return;
    }
    if (k == "name") {
      Assign(f, reader, s.name, reader.ReadString(f));
    } else if (k == "description") {
      Assign(f, reader, s.description, reader.ReadString(f));
    } else if (k == "ranks") {
      Assign(f, reader, s.ranks, reader.ReadInt(f, IntRange{1, kMaxRanks}));
    } else if (k == "slices") {
      Assign(f, reader, s.slices, reader.ReadInt(f, IntRange{1, kMaxRanks}));
    } else if (k == "backend") {
      Assign(f, reader, s.backend, reader.ReadEnum(f, kBackends));
    } else if (k == "steps") {
      Assign(f, reader, s.steps, reader.ReadInt(f, IntRange{1, kMaxSteps}));
    } else if (k == "seed") {
      Assign(f, reader, s.seed, reader.ReadUnsigned(f));
    } else if (k == "timeout_s") {
      Assign(f, reader, s.timeout_s, reader.ReadReal(f, RealRange{0, false, kMaxTimeoutS, true}));
    } else if (k == "hang_timeout_s") {
      Assign(f, reader, s.hang_timeout_s, reader.ReadReal(f, RealRange{kMinHangTimeoutS, true, kMaxTimeoutS, true}));
    } else if (k == "startup_timeout_s") {
      Assign(f, reader, s.startup_timeout_s, reader.ReadReal(f, RealRange{kMinHangTimeoutS, true, kMaxTimeoutS, true}));
    } else if (k == "device") {
      Assign(f, reader, s.device, reader.ReadEnum(f, kDevices));
    } else if (k == "model") {
      ApplyModel(f, reader);
    } else if (k == "data") {
      ApplyData(f, reader);
    } else if (k == "parallel") {
      ApplyParallel(f, reader);
    } else if (k == "optimizer") {
      ApplyOptimizer(f, reader);
    } else if (k == "checks") {
      ApplyChecks(f, reader);
    } else if (k == "inject") {
      ApplyInject(f, reader);
    } else if (k == "expect") {
      ApplyExpect(f, reader);
    } else if (k == "tolerances") {
      ApplyTolerances(f, reader);
    }
  });
}

void ScenarioBuilder::ApplyModel(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  ModelSpec& m = scenario_.model;
  reader.ForEachEntry(field, kModelKeys, false, [&](const YamlField& f) {
    const std::string& k = f.name;
    if (k == "kind") Assign(f, reader, m.kind, reader.ReadEnum(f, kModelKinds));
    else if (k == "layers") Assign(f, reader, m.layers, reader.ReadInt(f, IntRange{1, kMaxLayers}));
    else if (k == "hidden") Assign(f, reader, m.hidden, reader.ReadInt(f, IntRange{1, kMaxHidden}));
    else if (k == "heads") Assign(f, reader, m.heads, reader.ReadInt(f, IntRange{1, kMaxCount}));
    else if (k == "seq_len") Assign(f, reader, m.seq_len, reader.ReadInt(f, IntRange{1, kMaxModelDim}));
    else if (k == "vocab") Assign(f, reader, m.vocab, reader.ReadInt(f, IntRange{2, kMaxModelDim}));
    else if (k == "input_dim") Assign(f, reader, m.input_dim, reader.ReadInt(f, IntRange{1, kMaxModelDim}));
    else if (k == "output_dim") Assign(f, reader, m.output_dim, reader.ReadInt(f, IntRange{1, kMaxModelDim}));
    else if (k == "attention") Assign(f, reader, m.attention, reader.ReadEnum(f, kAttentionKinds));
    else if (k == "norm") Assign(f, reader, m.norm, reader.ReadEnum(f, kNormKinds));
    else if (k == "dropout") Assign(f, reader, m.dropout, reader.ReadReal(f, RealRange::HalfOpen(0, 1)));
  });
}

void ScenarioBuilder::ApplyData(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  reader.ForEachEntry(field, kDataKeys, false, [&](const YamlField& f) {
    if (f.name == "batch_per_rank") Assign(f, reader, scenario_.data.batch_per_rank, reader.ReadInt(f, IntRange{1, kMaxCount}));
  });
}

void ScenarioBuilder::ApplyParallel(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  ParallelSpec& p = scenario_.parallel;
  reader.ForEachEntry(field, kParallelKeys, false, [&](const YamlField& f) {
    if (f.name == "mode") Assign(f, reader, p.mode, reader.ReadEnum(f, kParallelModes));
    else if (f.name == "bucket_mb") Assign(f, reader, p.bucket_mb, reader.ReadReal(f, RealRange{0, false, kMaxBucketMb, true}));
    else if (f.name == "grad_accum") Assign(f, reader, p.grad_accum, reader.ReadInt(f, IntRange{1, kMaxCount}));
  });
}

void ScenarioBuilder::ApplyOptimizer(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  OptimizerSpec& o = scenario_.optimizer;
  reader.ForEachEntry(field, kOptimizerKeys, false, [&](const YamlField& f) {
    const std::string& k = f.name;
    if (k == "kind") Assign(f, reader, o.kind, reader.ReadEnum(f, kOptimizerKinds));
    else if (k == "lr") Assign(f, reader, o.lr, reader.ReadReal(f, kPositiveFloat));
    else if (k == "momentum") Assign(f, reader, o.momentum, reader.ReadReal(f, RealRange::HalfOpen(0, 1)));
    else if (k == "beta1") Assign(f, reader, o.beta1, reader.ReadReal(f, RealRange::HalfOpen(0, 1)));
    else if (k == "beta2") Assign(f, reader, o.beta2, reader.ReadReal(f, RealRange::HalfOpen(0, 1)));
    else if (k == "eps") Assign(f, reader, o.eps, reader.ReadReal(f, kPositiveFloat));
    else if (k == "weight_decay") Assign(f, reader, o.weight_decay, reader.ReadReal(f, kNonNegativeFloat));
    else if (k == "clip_grad_norm") Assign(f, reader, o.clip_grad_norm, reader.ReadReal(f, kNonNegativeFloat));
    else if (k == "warmup_steps") Assign(f, reader, o.warmup_steps, reader.ReadInt(f, IntRange{0, kMaxSteps}));
  });
}

void ScenarioBuilder::ApplyTolerances(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  Tolerances& t = scenario_.tolerances;
  reader.ForEachEntry(field, kToleranceKeys, false, [&](const YamlField& f) {
    if (f.name == "reference_rtol") Assign(f, reader, t.reference_rtol, reader.ReadReal(f, kNonNegativeFloat));
    else if (f.name == "reference_atol") Assign(f, reader, t.reference_atol, reader.ReadReal(f, kNonNegativeFloat));
    else if (f.name == "golden_rtol") Assign(f, reader, t.golden_rtol, reader.ReadReal(f, kNonNegativeFloat));
  });
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

void ScenarioBuilder::ApplyInject(const YamlField& field, YamlReader& reader) {
  scenario_.inject.clear();
  inject_info_.clear();
  if (!reader.ExpectSequence(field)) {
    rejected_.insert(field.path);
    return;
  }
  const std::vector<std::string_view> kinds = InjectionKindNames();
  for (std::size_t i = 0; i < field.value.size(); ++i) {
    YamlField e = field.Element(i, field.value[i]);
    Injection injection;
    EntryInfo info;
    info.path = e.path;
    info.at = reader.LocationOf(e);
    injection.location = info.at;
    if (!reader.ExpectMapping(e)) {
      info.valid = false;
      scenario_.inject.push_back(std::move(injection));
      inject_info_.push_back(std::move(info));
      continue;
    }
    const int errors_before = reader.error_count();
    bool saw_kind = false, saw_rank = false, saw_ranks = false;
    reader.ForEachEntry(e, kInjectKeys, true, [&](const YamlField& f) {
      const std::string& k = f.name;
      if (k == "kind") {
        saw_kind = true;
        if (std::optional<std::size_t> index = reader.ReadChoice(f, kinds, "injection kind", false)) {
          injection.kind = std::string(kinds[*index]);
          info.kind_at = reader.LocationOf(f);
        }
      } else if (k == "rank" || k == "ranks") {
        const bool list = k == "ranks";
        if ((list && saw_rank) || (!list && saw_ranks)) {
          reader.Error(reader.Locate(f.key.Mark()), f.path + ": give either `rank` or `ranks`, not both");
          return;
        }
        (list ? saw_ranks : saw_rank) = true;
        ReadRanks(f, list, reader, info.ranks);
      } else if (k == "step") {
        if (std::optional<int64_t> step = reader.ReadInt(f, IntRange{0, kMaxSteps})) {
          injection.step = *step;
          info.step_at = reader.LocationOf(f);
        }
      } else if (k == "tensor") {
        if (std::optional<std::string> tensor = reader.ReadString(f)) {
          if (tensor->empty()) {
            reader.FieldError(f, "must not be empty; leave it out to mean the kind's default tensors");
          } else {
            injection.tensor = *tensor;
            info.tensor_at = reader.LocationOf(f);
          }
        }
      } else if (std::optional<std::string_view> typo = InjectKeyTypo(k)) {
        reader.Error(reader.Locate(f.key.Mark()), f.path + ": unknown key; did you mean \"" + std::string(*typo) + "\"?");
      } else if (std::optional<std::string> value = reader.ReadScalarText(f)) {
        injection.params[k] = *value;
        info.param_at[k] = reader.LocationOf(f);
      }
    });
    if (!saw_kind) reader.Error(info.at, e.path + ".kind: missing required key");
    if (!saw_rank && !saw_ranks) {
      reader.Error(info.at, e.path + ".rank: missing required key (or `ranks: [...]` for several ranks)");
    }
    info.valid = reader.error_count() == errors_before;
    for (const RankRef& r : info.ranks) injection.ranks.push_back(r.rank);
    scenario_.inject.push_back(std::move(injection));
    inject_info_.push_back(std::move(info));
  }
  set_at_[field.path] = reader.LocationOf(field);
}

void ScenarioBuilder::ApplyExpect(const YamlField& field, YamlReader& reader) {
  if (!reader.ExpectMapping(field)) {
    rejected_.insert(field.path);
    return;
  }
  reader.ForEachEntry(field, kExpectKeys, false, [&](const YamlField& f) {
    if (f.name == "fail") {
      ApplyExpectFail(f, reader);
    } else if (f.name == "discovery_calls") {
      Assign(f, reader, scenario_.expected_discovery_calls, reader.ReadInt(f, IntRange{1, kMaxCount}));
    }
  });
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
    ExpectedFinding expected;
    EntryInfo info;
    info.path = e.path;
    info.at = reader.LocationOf(e);
    expected.location = info.at;
    if (!reader.ExpectMapping(e)) {
      info.valid = false;
      scenario_.expect_fail.push_back(std::move(expected));
      expect_info_.push_back(std::move(info));
      continue;
    }
    const int errors_before = reader.error_count();
    bool saw_checker = false;
    reader.ForEachEntry(e, kExpectFailKeys, false, [&](const YamlField& f) {
      if (f.name == "checker") {
        saw_checker = true;
        if (std::optional<std::string> checker = ReadCheckerName(f, options_, reader)) {
          expected.checker = std::move(*checker);
          info.kind_at = reader.LocationOf(f);
        }
      } else if (f.name == "step") {
        if (std::optional<int64_t> step = reader.ReadInt(f, IntRange{0, kMaxSteps})) {
          expected.step = *step;
          info.step_at = reader.LocationOf(f);
        }
      } else if (f.name == "ranks") {
        ReadRanks(f, true, reader, info.ranks);
      } else if (f.name == "tensor") {
        if (std::optional<std::string> tensor = reader.ReadString(f)) expected.tensor = *tensor;
      }
    });
    if (!saw_checker) reader.Error(info.at, e.path + ".checker: missing required key");
    info.valid = reader.error_count() == errors_before;
    for (const RankRef& r : info.ranks) expected.ranks.push_back(r.rank);
    scenario_.expect_fail.push_back(std::move(expected));
    expect_info_.push_back(std::move(info));
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
    if (m.attention == AttentionKind::kSdpa && !options_.sdpa_available) {
      report({"model.attention", "model.kind"},
             "sdpa needs LibTorch >= 2.0 with at::scaled_dot_product_attention; this build has LibTorch " +
                 options_.torch_version);
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
    if (kind == "no_sync_off_by_one") {
      reader.Error(info.kind_at, info.path + ".kind: no_sync_off_by_one has no effect in parallel.mode zero1: zero1 "
                                             "reduce-scatters once after the last micro-step, there is no no_sync "
                                             "window to get wrong (use parallel.mode: ddp)");
    } else if (kind == "wrong_grad_scale" && s.optimizer.kind == OptimizerKind::kAdamW &&
               !Rejected("optimizer.kind")) {
      reader.Error(info.kind_at, info.path + ".kind: wrong_grad_scale has no observable effect in parallel.mode "
                                             "zero1 with optimizer adamw: Adam's update does not depend on the "
                                             "gradient's scale (up to eps), and the all-gather keeps the replicas "
                                             "identical (use optimizer sgd, or parallel.mode: ddp)");
    } else if (kind == "nondeterministic_reduce") {
      reader.Error(info.kind_at, info.path + ".kind: nondeterministic_reduce has no observable effect in "
                                             "parallel.mode zero1: the reordered sum changes only this rank's shard, "
                                             "by rounding, and the all-gather copies it to every replica, so no "
                                             "replica differs and the change lies inside the floating-point noise "
                                             "(use parallel.mode: ddp)");
    }
  }
  if (kind == "stale_grad" && injection.step < 2 && info.step_at) {
    reader.Error(*info.step_at, info.path + ".step: stale_grad needs step >= 2: at step " +
                                    std::to_string(injection.step) + " there is no previous gradient to re-apply");
  } else if (kind == "stale_grad" && injection.step < 2) {
    reader.Error(info.kind_at, info.path + ".kind: stale_grad needs step >= 2 (the default onset is 1): at step 1 "
                                           "there is no previous gradient to re-apply");
  }
  if (info.tensor_at && kind != "bitflip") {
    reader.Error(*info.tensor_at, info.path + ".tensor: " + kind +
                                      " does not act on chosen tensors; `tensor` applies to bitflip only");
  }
  // Kind-specific parameters: (name, smallest, largest) as integers, or a closed word list.
  for (const auto& [name, at] : info.param_at) {
    const std::string& value = injection.params.at(name);
    const std::string where = info.path + "." + name;
    if (kind == "bitflip" && (name == "bit" || name == "index")) {
      const int64_t max = name == "bit" ? 31 : INT64_MAX;
      std::optional<int64_t> v = ParseWholeInt(value);
      if (!v || *v < 0 || *v > max) {
        reader.Error(at, where + ": must be an integer in [0, " + (name == "bit" ? "31" : "2^63-1") +
                             "] (bitflip flips one bit of one float32 element), got " + Quote(value));
      }
    } else if (kind == "crash" && name == "exit_code") {
      std::optional<int64_t> v = ParseWholeInt(value);
      if (!v || *v < kMinCrashExitCode || *v > kMaxCrashExitCode || *v == 2 || *v == 3) {
        reader.Error(at, where + ": must be an integer in [1, 255] other than 2 and 3 (lockstep's own usage and "
                                 "harness-error codes, which would read as a harness error), got " + Quote(value));
      } else if (injection.params.count("signal")) {
        reader.Error(at, where + ": give either `signal` or `exit_code`: a rank that raises a signal exits with no code");
      }
    } else if (kind == "crash" && name == "signal") {
      if (value != "SIGSEGV" && value != "segv" && value != "SIGKILL" && value != "kill") {
        reader.Error(at, where + ": must be SIGSEGV or SIGKILL, got " + Quote(value));
      }
    } else {
      const std::string takes = kind == "bitflip" ? "takes only `bit` and `index`"
                                : kind == "crash" ? "takes only `signal` or `exit_code`"
                                                  : "takes no parameters";
      reader.Error(at, where + ": unknown parameter: " + kind + " " + takes);
    }
  }
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

std::vector<std::string> ScenarioKeyPaths() {
  using internal::kTopKeys;
  std::vector<std::string> paths;
  auto add = [&](const std::string& prefix, const std::vector<std::string_view>& keys) {
    for (std::string_view k : keys) paths.push_back(prefix + std::string(k));
  };
  for (std::string_view top : kTopKeys) {
    const std::string t(top);
    paths.push_back(t);
    if (t == "model") add("model.", internal::kModelKeys);
    if (t == "data") add("data.", internal::kDataKeys);
    if (t == "parallel") add("parallel.", internal::kParallelKeys);
    if (t == "optimizer") add("optimizer.", internal::kOptimizerKeys);
    if (t == "inject") add("inject[].", internal::kInjectKeys);
    if (t == "expect") {
      paths.push_back("expect.fail");
      add("expect.fail[].", internal::kExpectFailKeys);
      paths.push_back("expect.discovery_calls");
    }
    if (t == "tolerances") add("tolerances.", internal::kToleranceKeys);
  }
  return paths;
}

}  // namespace lockstep
