#include "harness/scenario/scenario_writer.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "harness/scenario/scenario_loader.h"

namespace lockstep {
namespace {

template <typename T>
void Key(YAML::Emitter& out, const char* key, const T& value) {
  out << YAML::Key << key << YAML::Value << value;
}

void Enum(YAML::Emitter& out, const char* key, const char* name) { Key(out, key, std::string(name)); }

void Ranks(YAML::Emitter& out, const std::vector<int>& ranks) {
  out << YAML::Key << "ranks" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (int r : ranks) out << r;
  out << YAML::EndSeq;
}

void WriteModel(YAML::Emitter& out, const ModelSpec& m) {
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  Enum(out, "kind", ToString(m.kind));
  Key(out, "layers", m.layers);
  Key(out, "hidden", m.hidden);
  Key(out, "heads", m.heads);
  Key(out, "seq_len", m.seq_len);
  Key(out, "vocab", m.vocab);
  Key(out, "input_dim", m.input_dim);
  Key(out, "output_dim", m.output_dim);
  Enum(out, "attention", ToString(m.attention));
  Enum(out, "norm", ToString(m.norm));
  Key(out, "dropout", m.dropout);
  out << YAML::EndMap;
}

void WriteOptimizer(YAML::Emitter& out, const OptimizerSpec& o) {
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  Enum(out, "kind", ToString(o.kind));
  Key(out, "lr", o.lr);
  Key(out, "momentum", o.momentum);
  Key(out, "beta1", o.beta1);
  Key(out, "beta2", o.beta2);
  Key(out, "eps", o.eps);
  Key(out, "weight_decay", o.weight_decay);
  Key(out, "clip_grad_norm", o.clip_grad_norm);
  Key(out, "warmup_steps", o.warmup_steps);
  out << YAML::EndMap;
}

void WriteInjections(YAML::Emitter& out, const std::vector<Injection>& inject) {
  out << YAML::Key << "inject" << YAML::Value << YAML::BeginSeq;
  for (const Injection& i : inject) {
    out << YAML::BeginMap;
    Key(out, "kind", i.kind);
    if (!i.ranks.empty()) Ranks(out, i.ranks);
    Key(out, "step", i.step);
    if (!i.tensor.empty()) Key(out, "tensor", i.tensor);
    if (!i.location.file.empty()) {
      Key(out, std::string(kOriginKey).c_str(),
          i.location.file + ":" + std::to_string(i.location.line) + ":" + std::to_string(i.location.column));
    }
    for (const auto& [param, value] : i.params) Key(out, param.c_str(), value);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void WriteExpect(YAML::Emitter& out, const Scenario& s) {
  out << YAML::Key << "expect" << YAML::Value << YAML::BeginMap;
  if (!s.expect_fail.empty()) out << YAML::Key << "fail" << YAML::Value << YAML::BeginSeq;
  for (const ExpectedFinding& e : s.expect_fail) {
    out << YAML::BeginMap;
    Key(out, "checker", e.checker);
    if (e.step) Key(out, "step", *e.step);
    if (!e.ranks.empty()) Ranks(out, e.ranks);
    if (!e.tensor.empty()) Key(out, "tensor", e.tensor);
    out << YAML::EndMap;
  }
  if (!s.expect_fail.empty()) out << YAML::EndSeq;
  if (!s.discovery_allowed.empty()) {
    out << YAML::Key << "discovery" << YAML::Value << YAML::BeginMap;
    for (const auto& [call, times] : s.discovery_allowed) Key(out, call.c_str(), times);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string ScenarioYaml(const Scenario& s, const std::string& comment) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);  // every double reads back bit for bit
  out << YAML::BeginMap;
  // The user's file, however many times the scenario was resolved again from resolved files.
  Key(out, std::string(kResolvedFromKey).c_str(), s.resolved_from.empty() ? s.location.file : s.resolved_from);
  Key(out, "name", s.name);
  Key(out, "description", s.description);
  Key(out, "ranks", s.ranks);
  Key(out, "slices", s.slices);
  Enum(out, "backend", ToString(s.backend));
  Enum(out, "device", ToString(s.device));
  Key(out, "steps", s.steps);
  Key(out, "seed", s.seed);
  Key(out, "timeout_s", s.timeout_s);
  Key(out, "hang_timeout_s", s.hang_timeout_s);
  Key(out, "quiet_timeout_s", s.quiet_timeout_s);
  Key(out, "startup_timeout_s", s.startup_timeout_s);
  WriteModel(out, s.model);
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  Key(out, "batch_per_rank", s.data.batch_per_rank);
  out << YAML::EndMap;
  out << YAML::Key << "parallel" << YAML::Value << YAML::BeginMap;
  Enum(out, "mode", ToString(s.parallel.mode));
  Key(out, "bucket_mb", s.parallel.bucket_mb);
  Key(out, "grad_accum", s.parallel.grad_accum);
  out << YAML::EndMap;
  WriteOptimizer(out, s.optimizer);
  // A scenario loaded without a checker vocabulary (LoadOptions) has none: `checks: []` is refused.
  if (!s.checks.empty()) out << YAML::Key << "checks" << YAML::Value << YAML::Flow << s.checks;
  if (!s.inject.empty()) WriteInjections(out, s.inject);
  if (!s.expect_fail.empty() || !s.discovery_allowed.empty()) WriteExpect(out, s);
  out << YAML::Key << "tolerances" << YAML::Value << YAML::BeginMap;
  Key(out, "reference_rtol", s.tolerances.reference_rtol);
  Key(out, "reference_atol", s.tolerances.reference_atol);
  Key(out, "golden_rtol", s.tolerances.golden_rtol);
  out << YAML::EndMap;
  out << YAML::EndMap;

  std::string text;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) text += "# " + line + "\n";
  return text + out.c_str() + "\n";
}

Status WriteScenarioFile(const Scenario& scenario, const std::filesystem::path& file, const std::string& comment) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << ScenarioYaml(scenario, comment);
  out.close();
  if (!out) return IoError(file.string() + ": cannot write the resolved scenario");
  return Status::Ok();
}

}  // namespace lockstep
