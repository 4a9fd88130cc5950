// Builds a Scenario from YAML layers (defaults files, outermost first, then the scenario file)
// and applies the rules that involve several keys once all layers are in. It remembers where each
// value was written, so a rule that fails points at the key that set the offending value, in
// whichever file that was.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/scenario/injection_kinds.h"
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

  // Every key path a scenario file may set, in the order docs/SCENARIOS.md lists them
  // ("model.kind", "inject[].step", ...), read from the same tables the builder reads with.
  static std::vector<std::string> KeyPaths();

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

  // What one `inject` / `expect.fail` entry collects while its keys are read.
  struct InjectEntry {
    Injection injection;
    EntryInfo info;
    bool saw_kind = false, saw_rank = false, saw_ranks = false;
  };
  struct ExpectEntry {
    ExpectedFinding expected;
    EntryInfo info;
    bool saw_checker = false;
  };

  // One row per key of a mapping: its name and how to read it into `Target`. A mapping's rows are
  // the only place its keys are written: the unknown-key check, the reading and KeyPaths all walk
  // them.
  template <typename Target>
  struct Key {
    std::string_view name;
    void (*read)(ScenarioBuilder& builder, Target& target, const YamlField& field, YamlReader& reader);
    // Appends the paths below this key ("model" -> "model.kind", ...); null for a leaf.
    void (*nested)(const std::string& path, std::vector<std::string>& out) = nullptr;
    bool scenario_only = false;  // describes one scenario; a defaults file may not set it
  };
  template <typename Target>
  using Keys = std::vector<Key<Target>>;

  static const Keys<Scenario>& TopKeys();
  static const Keys<ModelSpec>& ModelKeys();
  static const Keys<DataSpec>& DataKeys();
  static const Keys<ParallelSpec>& ParallelKeys();
  static const Keys<OptimizerSpec>& OptimizerKeys();
  static const Keys<Tolerances>& ToleranceKeys();
  static const Keys<InjectEntry>& InjectKeys();
  static const Keys<Scenario>& ExpectKeys();
  static const Keys<ExpectEntry>& ExpectFailKeys();

  template <typename Target>
  static std::vector<std::string_view> KeyNames(const Keys<Target>& keys) {
    std::vector<std::string_view> names;
    for (const Key<Target>& key : keys) names.push_back(key.name);
    return names;
  }

  template <typename Target>
  static void AddPaths(const Keys<Target>& keys, const std::string& prefix, std::vector<std::string>& out) {
    for (const Key<Target>& key : keys) {
      out.push_back(prefix + std::string(key.name));
      if (key.nested) key.nested(out.back(), out);
    }
  }

  // Reads each entry of `mapping` with its row. An unknown key is an error, or, when
  // `on_unknown` is given, handed to it.
  template <typename Target>
  void ReadKeys(const YamlField& mapping, const Keys<Target>& keys, Target& target, YamlReader& reader,
                const std::function<void(const YamlField&)>& on_unknown = nullptr) {
    reader.ForEachEntry(mapping, KeyNames(keys), static_cast<bool>(on_unknown), [&](const YamlField& f) {
      for (const Key<Target>& key : keys) {
        if (key.name != f.name) continue;
        if (key.scenario_only && layer_ == LayerKind::kDefaults) {
          reader.FieldError(f, "belongs to one scenario and cannot be set in " + std::string(kDefaultsFileName));
        } else {
          key.read(*this, target, f, reader);
        }
        return;
      }
      on_unknown(f);
    });
  }

  // A nested mapping ("model:"): its keys into `target`.
  template <typename Target>
  void ReadSection(const YamlField& field, const Keys<Target>& keys, Target& target, YamlReader& reader) {
    if (!reader.ExpectMapping(field)) {
      rejected_.insert(field.path);
      return;
    }
    ReadKeys(field, keys, target, reader);
  }

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

  // The row of a key read into one member of its mapping (most keys): the member and, for a
  // number, its range make the row (`{"ranks", &IntField<&Scenario::ranks, kRankCount>}`); an
  // enum's names are its NamesOf table.
  template <typename M>
  struct MemberOf;
  template <typename C, typename T>
  struct MemberOf<T C::*> {
    using Class = C;
    using Type = T;
  };
  template <auto Member>
  using ClassOf = typename MemberOf<decltype(Member)>::Class;

  template <auto Member, const IntRange& Range>
  static void IntField(ScenarioBuilder& b, ClassOf<Member>& t, const YamlField& f, YamlReader& r) {
    b.Assign(f, r, t.*Member, r.ReadInt(f, Range));
  }
  template <auto Member, const RealRange& Range>
  static void RealField(ScenarioBuilder& b, ClassOf<Member>& t, const YamlField& f, YamlReader& r) {
    b.Assign(f, r, t.*Member, r.ReadReal(f, Range));
  }
  template <auto Member>
  static void EnumField(ScenarioBuilder& b, ClassOf<Member>& t, const YamlField& f, YamlReader& r) {
    b.Assign(f, r, t.*Member, r.ReadEnum(f, NamesOf<typename MemberOf<decltype(Member)>::Type>()));
  }
  template <auto Member>
  static void StringField(ScenarioBuilder& b, ClassOf<Member>& t, const YamlField& f, YamlReader& r) {
    b.Assign(f, r, t.*Member, r.ReadString(f));
  }
  template <auto Member>
  static void UnsignedField(ScenarioBuilder& b, ClassOf<Member>& t, const YamlField& f, YamlReader& r) {
    b.Assign(f, r, t.*Member, r.ReadUnsigned(f));
  }

  void ApplyChecks(const YamlField& field, YamlReader& reader);
  void ApplyInject(const YamlField& field, YamlReader& reader);
  void ApplyExpectFail(const YamlField& field, YamlReader& reader);
  // `rank: 1` (as_list false) or `ranks: [1, 2]`, appended to `out`; false after an error.
  bool ReadRanks(const YamlField& field, bool as_list, YamlReader& reader, std::vector<RankRef>& out);
  // An inject entry's `rank` or `ranks`, refusing both in one entry.
  void ReadInjectRanks(InjectEntry& entry, const YamlField& field, bool as_list, YamlReader& reader);

  // True when `path` or a mapping above it held a value that was rejected, so rules involving it
  // would only repeat that error.
  bool Rejected(const std::string& path) const;
  bool Set(const std::string& path) const { return set_at_.count(path) > 0; }

  void CheckName(Scenario& s, const std::string& default_name, const SourceLocation& file_start, YamlReader& reader);
  void CheckModel(const Scenario& s, const SourceLocation& file_start, YamlReader& reader);
  void CheckEntries(const Scenario& s, YamlReader& reader);
  void CheckInjectionEffect(const Scenario& s, const Injection& injection, const EntryInfo& info,
                            YamlReader& reader);
  void CheckInjectionSeen(const Scenario& s, const Injection& injection, const InjectionKindInfo& kind,
                          const EntryInfo& info, YamlReader& reader);

  LoadOptions options_;
  LayerKind layer_ = LayerKind::kScenario;  // of the document Apply reads
  Scenario scenario_;
  bool checks_set_ = false;
  std::map<std::string, SourceLocation> set_at_;
  std::set<std::string> rejected_;
  std::vector<EntryInfo> inject_info_;  // parallel to scenario_.inject
  std::vector<EntryInfo> expect_info_;  // parallel to scenario_.expect_fail
  std::vector<SourceLocation> check_at_;  // parallel to scenario_.checks when set
};

}  // namespace lockstep::internal
