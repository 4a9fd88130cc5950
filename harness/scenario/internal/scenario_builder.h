// Builds a Scenario from YAML layers (defaults files, outermost first, then the scenario file)
// and applies the rules that involve several keys once all layers are in. It remembers where each
// value was written, so a rule that fails points at the key that set the offending value, in
// whichever file that was.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/scenario/internal/yaml_reader.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/scenario_loader.h"

namespace lockstep::internal {

enum class LayerKind { kDefaults, kScenario };

class ScenarioBuilder {
 public:
  explicit ScenarioBuilder(LoadOptions options);

  // Applies the keys of one document (a mapping) over what earlier layers set. Problems go to
  // `reader`, which also knows the document's file.
  void Apply(const YAML::Node& root, LayerKind layer, YamlReader& reader);

  // The scenario with every layer applied and the cross-key rules checked (problems go to
  // `reader`, the scenario file's). `default_name` is used when no layer set `name`.
  Scenario Finish(const std::string& file, const std::string& default_name, YamlReader& reader);

  // Where `name` was set, if a layer set it.
  std::optional<SourceLocation> NameLocation() const;

 private:
  struct RankRef {
    int rank = 0;
    std::string path;  // "inject[0].ranks[1]"
    SourceLocation at;
  };
  // What Finish needs to check an `inject` or `expect.fail` entry against the whole scenario.
  struct EntryInfo {
    bool valid = true;  // no error inside the entry itself
    std::string path;   // "inject[0]"
    SourceLocation at;  // the entry
    SourceLocation kind_at;
    std::vector<RankRef> ranks;
    std::optional<SourceLocation> step_at;
    std::optional<SourceLocation> tensor_at;           // inject: the `tensor` key
    std::map<std::string, SourceLocation> param_at;    // inject: kind-specific parameters
  };

  template <typename T, typename V>
  void Assign(const YamlField& field, YamlReader& reader, T& target, const std::optional<V>& value) {
    if (!value) {
      rejected_.insert(field.path);
      return;
    }
    target = static_cast<T>(*value);
    rejected_.erase(field.path);
    set_at_[field.path] = reader.LocationOf(field);
  }

  void ApplyModel(const YamlField& field, YamlReader& reader);
  void ApplyData(const YamlField& field, YamlReader& reader);
  void ApplyParallel(const YamlField& field, YamlReader& reader);
  void ApplyOptimizer(const YamlField& field, YamlReader& reader);
  void ApplyTolerances(const YamlField& field, YamlReader& reader);
  void ApplyChecks(const YamlField& field, YamlReader& reader);
  void ApplyInject(const YamlField& field, YamlReader& reader);
  void ApplyExpect(const YamlField& field, YamlReader& reader);
  void ApplyExpectFail(const YamlField& field, YamlReader& reader);
  // `rank: 1` (as_list false) or `ranks: [1, 2]`, appended to `out`; false after an error.
  bool ReadRanks(const YamlField& field, bool as_list, YamlReader& reader, std::vector<RankRef>& out);

  // True when `path` or a mapping above it held a value that was rejected, so rules involving it
  // would only repeat that error.
  bool Rejected(const std::string& path) const;
  bool Set(const std::string& path) const { return set_at_.count(path) > 0; }

  void CheckName(Scenario& s, const std::string& default_name, const SourceLocation& file_start, YamlReader& reader);
  void CheckModel(const Scenario& s, const SourceLocation& file_start, YamlReader& reader);
  void CheckEntries(const Scenario& s, YamlReader& reader);
  void CheckInjectionEffect(const Scenario& s, const Injection& injection, const EntryInfo& info,
                            YamlReader& reader);

  LoadOptions options_;
  Scenario scenario_;
  bool checks_set_ = false;
  std::map<std::string, SourceLocation> set_at_;
  std::set<std::string> rejected_;
  std::vector<EntryInfo> inject_info_;  // parallel to scenario_.inject
  std::vector<EntryInfo> expect_info_;  // parallel to scenario_.expect_fail
  std::vector<SourceLocation> check_at_;  // parallel to scenario_.checks when set
};

}  // namespace lockstep::internal
