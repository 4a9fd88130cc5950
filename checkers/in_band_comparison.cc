#include "checkers/in_band_comparison.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "checkers/checker_registry.h"
#include "harness/result/launch_report.h"

namespace lockstep {
namespace {

constexpr char kLinePrefix[] = "in-band finding: ";

bool SameFinding(const Finding& a, const Finding& b) {
  return a.checker == b.checker && a.step == b.step && a.tensor == b.tensor && a.tensors == b.tensors &&
         a.ranks == b.ranks && a.message == b.message;
}

std::string Describe(const Finding& f) {
  return f.checker + " at step " + (f.step ? std::to_string(*f.step) : std::string("-")) + ": " + f.message;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::string>& InBandCheckers() {
  static const std::vector<std::string> names = InBandCheckerNames();
  return names;
}

std::vector<Finding> JudgeStepInBand(const Scenario& scenario, const std::vector<StepRecord>& by_rank) {
  std::vector<RankTrace> traces(by_rank.size());
  for (size_t r = 0; r < by_rank.size(); ++r) {
    traces[r].header.schema = std::string(kTraceSchemaName) + "/" + std::to_string(kTraceSchemaMajor);
    traces[r].header.rank = static_cast<int>(r);
    traces[r].header.world_size = static_cast<int>(by_rank.size());
    traces[r].steps.push_back(by_rank[r]);
  }
  const LaunchReport launch;
  const CheckContext context{scenario, traces, launch};
  std::vector<Finding> out;
  for (const std::string& name : InBandCheckers()) {
    std::unique_ptr<Checker> checker = MakeChecker(name);
    if (checker == nullptr) continue;  // the registry test keeps the list and the registry together
    for (Finding& f : checker->Check(context)) out.push_back(std::move(f));
  }
  return out;
}

std::string InBandFindingLine(const Finding& f) {
  nlohmann::ordered_json j;
  j["checker"] = f.checker;
  if (f.step) j["step"] = *f.step;
  j["tensor"] = f.tensor;
  j["tensors"] = f.tensors;
  j["ranks"] = f.ranks;
  j["message"] = f.message;
  j["details"] = f.details;
  return kLinePrefix + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<Finding> ParseInBandFindingLine(const std::string& line) {
  if (line.rfind(kLinePrefix, 0) != 0) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(line.substr(sizeof(kLinePrefix) - 1), nullptr, false);
  if (!j.is_object() || !j.contains("checker") || !j["checker"].is_string()) return std::nullopt;
  Finding f;
  try {
    f.checker = j["checker"].get<std::string>();
    if (j.contains("step")) f.step = j["step"].get<int64_t>();
    f.tensor = j.value("tensor", "");
    f.tensors = j.value("tensors", std::vector<std::string>{});
    f.ranks = j.value("ranks", std::vector<int>{});
    f.message = j.value("message", "");
    f.details = j.value("details", std::map<std::string, std::string>{});
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a line of the right prefix but the wrong shape is no finding
  }
  return f;
}

std::vector<Finding> InBandFindings(const RankTrace& trace) {
  std::vector<Finding> out;
  for (const std::string& line : trace.log_tail) {
    if (std::optional<Finding> f = ParseInBandFindingLine(line)) out.push_back(std::move(*f));
  }
  return out;
}

std::string InBandDisagreement(const std::vector<Finding>& in_band, const std::vector<Finding>& post_run,
                               const std::vector<std::string>& ran) {
  if (in_band.empty()) return "";
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  for (const Finding& live : in_band) {
    if (!Contains(ran, live.checker)) continue;
    const Finding* judged = nullptr;
    for (const Finding& f : post_run) {
      if (f.checker == live.checker) judged = &f;
    }
    if (judged == nullptr) {
      add("in-band found " + Describe(live) + ", post-run found nothing");
    } else if (!SameFinding(live, *judged)) {
      add("in-band found " + Describe(live) + ", post-run found " + Describe(*judged));
    }
  }
  // The other way: a replica finding post-run at the step the ranks stopped that in-band missed.
  const std::optional<int64_t> stop = in_band.front().step;
  for (const Finding& f : post_run) {
    if (!Contains(InBandCheckers(), f.checker) || !Contains(ran, f.checker) || f.step != stop) continue;
    const bool found = std::any_of(in_band.begin(), in_band.end(), [&](const Finding& x) { return x.checker == f.checker; });
    if (!found) add("post-run found " + Describe(f) + ", in-band found nothing for " + f.checker);
  }
  return out.empty() ? "" : "in-band and post-run comparisons disagree (a harness bug): " + out;
}

}  // namespace lockstep
