#include "harness/selftest/detection_table.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace lockstep {

bool DetectionRow::ok() const {
  return caught && at_onset && right_rank && right_tensor.value_or(true) && outcome == "xfail";
}

std::optional<int64_t> DetectionRow::latency() const {
  if (!detected_step) return std::nullopt;
  return *detected_step - onset;
}

namespace {

bool SameRanks(std::vector<int> a, std::vector<int> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

bool NamesTensor(const Finding& f, const std::string& glob) {
  if (!f.tensor.empty() && fnmatch(glob.c_str(), f.tensor.c_str(), 0) == 0) return true;
  return std::any_of(f.tensors.begin(), f.tensors.end(),
                     [&](const std::string& t) { return fnmatch(glob.c_str(), t.c_str(), 0) == 0; });
}

}  // namespace

DetectionRow EvaluateDetection(const Scenario& scenario, const ScenarioResult& result) {
  DetectionRow row;
  row.scenario = scenario.name;
  row.mode = result.mode;
  row.outcome = ToString(result.outcome);
  if (scenario.inject.empty()) {
    row.note = "no injection";
    return row;
  }
  const Injection& inj = scenario.inject.front();
  row.kind = inj.kind;
  row.onset = inj.step;

  std::set<std::string> expected_checkers;
  for (const auto& e : scenario.expect_fail) expected_checkers.insert(e.checker);

  // The earliest finding of an expected checker that names (at least) an injected rank.
  const Finding* first = nullptr;
  for (const auto& f : result.findings) {
    if (!expected_checkers.count(f.checker)) continue;
    const bool on_rank = f.ranks.empty() ||
                         std::any_of(f.ranks.begin(), f.ranks.end(), [&](int r) {
                           return std::find(inj.ranks.begin(), inj.ranks.end(), r) != inj.ranks.end();
                         });
    if (!on_rank) continue;
    if (!first || (f.step && (!first->step || *f.step < *first->step))) first = &f;
  }
  if (!first) {
    row.note = result.reason.empty() ? "no finding of an expected checker on the injected rank" : result.reason;
    return row;
  }
  row.caught = true;
  row.detected_step = first->step;
  // Checkers that report no step (hang) count as at onset: the job stopped there.
  row.at_onset = !first->step || *first->step == inj.step;
  row.right_rank = first->ranks.empty() || SameRanks(first->ranks, inj.ranks);
  if (!inj.tensor.empty()) row.right_tensor = NamesTensor(*first, inj.tensor);
  if (!row.ok()) {
    std::ostringstream note;
    if (!row.at_onset) note << "first caught at step " << *first->step << ", onset " << inj.step << "; ";
    if (!row.right_rank) note << "finding names other ranks; ";
    if (row.right_tensor && !*row.right_tensor) note << "finding names another tensor; ";
    if (row.outcome != "xfail") note << "outcome " << row.outcome << (result.reason.empty() ? "" : ": " + result.reason);
    row.note = note.str();
  }
  return row;
}

std::string RenderDetectionTable(const std::vector<DetectionRow>& rows, const FalsePositiveCount& clean, int repeats) {
  std::ostringstream out;
  out << "| kind | mode | caught | onset | detected | at onset | right rank | right tensor | latency | outcome |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int good = 0;
  for (const auto& r : rows) {
    good += r.ok();
    out << "| " << r.kind << " | " << r.mode << " | " << (r.caught ? "yes" : "**no**") << " | " << r.onset << " | "
        << (r.detected_step ? std::to_string(*r.detected_step) : std::string("-")) << " | "
        << (r.at_onset ? "yes" : "**no**") << " | " << (r.right_rank ? "yes" : "**no**") << " | "
        << (r.right_tensor ? (*r.right_tensor ? "yes" : "**no**") : "n/a") << " | "
        << (r.latency() ? std::to_string(*r.latency()) : std::string("-")) << " | " << r.outcome
        << (r.note.empty() ? "" : " (" + r.note + ")") << " |\n";
  }
  out << "\n" << good << " of " << rows.size() << " injections caught at onset on the right rank.\n";
  out << "False positives: " << clean.false_positives << " in " << clean.runs << " clean runs (" << repeats
      << " repeats of each clean scenario).\n";
  for (const auto& o : clean.offenders) out << "- " << o << "\n";
  return out.str();
}

}  // namespace lockstep
