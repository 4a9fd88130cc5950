#include "probe/catalog_expectation.h"

#include <algorithm>
#include <map>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

namespace lockstep::probe {
namespace {

using nlohmann::json;

std::string RanksText(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "]";
}

std::string Describe(const Finding& f) {
  return f.checker + " at step " + (f.step ? std::to_string(*f.step) : std::string("-")) + " on ranks " +
         RanksText(f.ranks) + (f.tensor.empty() ? "" : " (" + f.tensor + ")") + ": " + f.message;
}

std::string Describe(const ExpectedFinding& e) {
  std::string s = e.checker;
  if (e.step) s += " at step " + std::to_string(*e.step);
  if (e.ranks) s += " on ranks " + RanksText(*e.ranks);
  if (!e.tensor.empty()) s += " (" + e.tensor + ")";
  return s;
}

// Why `f` is not `e`, or "" when it is.
std::string Mismatch(const ExpectedFinding& e, const Finding& f) {
  if (e.step && f.step != e.step) return "step " + (f.step ? std::to_string(*f.step) : std::string("none"));
  if (e.ranks && f.ranks != *e.ranks) return "ranks " + RanksText(f.ranks);
  if (!e.tensor.empty() && f.tensor != e.tensor &&
      std::find(f.tensors.begin(), f.tensors.end(), e.tensor) == f.tensors.end()) {
    return "tensor " + (f.tensor.empty() ? std::string("none") : f.tensor);
  }
  for (const std::string& text : e.message_contains) {
    if (f.message.find(text) == std::string::npos) return "message without \"" + text + "\"";
  }
  if (e.no_cause && !f.cause.empty()) return "a cause (" + f.cause + ")";
  for (const std::string& text : e.cause_contains) {
    if (f.cause.find(text) == std::string::npos) {
      return "cause without \"" + text + "\"" + (f.cause.empty() ? std::string(" (no cause)") : " (" + f.cause + ")");
    }
  }
  return "";
}

template <size_t N>
bool OneOf(const std::string& value, const char* const (&vocabulary)[N]) {
  return std::any_of(std::begin(vocabulary), std::end(vocabulary), [&](const char* v) { return value == v; });
}

template <size_t N>
std::string Listed(const char* const (&vocabulary)[N]) {
  std::string s;
  for (const char* v : vocabulary) s += (s.empty() ? "" : ", ") + std::string(v);
  return s;
}

// The corpus fields: a bug of examples/real_bugs/ names its public source, and what lockstep gives
// today agrees with the findings pinned beside it (a "missed" bug with a finding pinned, or a
// "caught" one with none, would make the scoreboard of docs/DETECTION.md lie).
Status CheckCorpusFields(const CatalogExpectation& c, const std::string& where) {
  const std::string stem = c.program.stem().string();
  const bool control = stem.size() > 6 && stem.compare(stem.size() - 6, 6, "_fixed") == 0;
  if (c.program.parent_path().filename() == "real_bugs" && !control && c.source.empty()) {
    return InvalidArgumentError(where + ": source: a bug of real_bugs/ names its public tracker thread");
  }
  if (!c.source.empty() && c.source.rfind("https://", 0) != 0) {
    return InvalidArgumentError(where + ": source \"" + c.source + "\": expected an https:// address");
  }
  if (!c.bug_class.empty() && !OneOf(c.bug_class, kBugClasses)) {
    return InvalidArgumentError(where + ": class \"" + c.bug_class + "\": expected one of " + Listed(kBugClasses));
  }
  if (c.onset && *c.onset < 0) return InvalidArgumentError(where + ": onset must be a step, at least 0");
  if (!c.today.empty()) {
    if (!OneOf(c.today, kDetectionToday)) {
      return InvalidArgumentError(where + ": today \"" + c.today + "\": expected one of " + Listed(kDetectionToday));
    }
    const bool silent = c.today == "missed" || c.today == "error";
    if (silent != c.findings.empty()) {
      return InvalidArgumentError(where + ": today \"" + c.today + "\" but findings " +
                                  (c.findings.empty() ? "are empty" : "are not empty"));
    }
  }
  return Status();
}

}  // namespace

Result<CatalogExpectation> ReadCatalogExpectation(const std::filesystem::path& sidecar) {
  const std::string where = sidecar.string();
  std::ifstream in(sidecar);
  if (!in) return IoError("cannot read " + where);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    return InvalidArgumentError(where + ": " + e.what());
  }
  CatalogExpectation c;
  std::string name = sidecar.filename().string();
  const std::string suffix = ".expect.json";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return InvalidArgumentError(where + ": a sidecar is named <example>.expect.json");
  }
  c.program = sidecar.parent_path() / (name.substr(0, name.size() - suffix.size()) + ".py");
  try {
    c.ranks = j.at("ranks").get<int>();
    c.repeats = j.value("repeats", 1);
    c.why = j.value("why", "");
    c.launcher = j.value("launcher", "local");
    if (j.contains("hang_timeout")) c.hang_timeout_s = j["hang_timeout"].get<double>();
    if (j.contains("startup_timeout")) c.startup_timeout_s = j["startup_timeout"].get<double>();
    for (const json& f : j.at("findings")) {
      ExpectedFinding e;
      e.checker = f.at("checker").get<std::string>();
      if (f.contains("step")) e.step = f["step"].get<int64_t>();
      if (f.contains("ranks")) e.ranks = f["ranks"].get<std::vector<int>>();
      e.tensor = f.value("tensor", "");
      e.message_contains = f.value("message_contains", std::vector<std::string>{});
      e.cause_contains = f.value("cause_contains", std::vector<std::string>{});
      e.no_cause = f.value("no_cause", false);
      c.findings.push_back(std::move(e));
    }
    c.also = j.value("also", std::vector<std::string>{});
    if (j.contains("compared")) c.compared_tensors = j["compared"].get<std::map<std::string, int64_t>>();
    c.source = j.value("source", "");
    c.project = j.value("project", "");
    c.bug_class = j.value("class", "");
    if (j.contains("onset")) c.onset = j["onset"].get<int64_t>();
    c.best = j.value("best", "");
    c.today = j.value("today", "");
  } catch (const json::exception& e) {
    return InvalidArgumentError(where + ": " + e.what());
  }
  if (c.ranks < 1 || c.repeats < 1) return InvalidArgumentError(where + ": ranks and repeats must be at least 1");
  if (c.launcher != "local" && c.launcher != "mpirun" && c.launcher != "torchrun" && c.launcher != "accelerate") {
    return InvalidArgumentError(where + ": launcher \"" + c.launcher + "\": expected local, mpirun, torchrun or accelerate");
  }
  if (c.hang_timeout_s && !(*c.hang_timeout_s >= 1.0)) {
    return InvalidArgumentError(where + ": hang_timeout must be at least 1 (seconds)");
  }
  if (c.startup_timeout_s && !(*c.startup_timeout_s >= 1.0)) {
    return InvalidArgumentError(where + ": startup_timeout must be at least 1 (seconds)");
  }
  if (Status corpus = CheckCorpusFields(c, where); !corpus.ok()) return corpus;
  if (!std::filesystem::exists(c.program)) return InvalidArgumentError(where + ": no program " + c.program.string());
  return c;
}

Result<std::vector<CatalogExpectation>> ReadCatalog(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> sidecars;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".expect.json") == 0) sidecars.push_back(entry.path());
  }
  if (ec) return IoError("cannot list " + dir.string() + ": " + ec.message());
  std::sort(sidecars.begin(), sidecars.end());
  std::vector<CatalogExpectation> out;
  for (const auto& s : sidecars) {
    Result<CatalogExpectation> c = ReadCatalogExpectation(s);
    if (!c.ok()) return c.status();
    out.push_back(std::move(c).value());
  }
  return out;
}

std::vector<std::string> MatchCatalogExpectation(const CatalogExpectation& expected,
                                                 const std::vector<Finding>& findings) {
  std::vector<std::string> problems;
  std::vector<bool> used(findings.size(), false);
  for (const ExpectedFinding& e : expected.findings) {
    std::vector<std::string> near;
    bool found = false;
    for (size_t i = 0; i < findings.size() && !found; ++i) {
      if (used[i] || findings[i].checker != e.checker) continue;
      const std::string why = Mismatch(e, findings[i]);
      if (why.empty()) {
        used[i] = found = true;
      } else {
        near.push_back(why + " in \"" + Describe(findings[i]) + "\"");
      }
    }
    if (!found) {
      std::string p = "expected " + Describe(e) + ", not reported";
      for (const std::string& n : near) p += "; got " + n;
      problems.push_back(p);
    }
  }
  for (size_t i = 0; i < findings.size(); ++i) {
    if (used[i]) continue;
    const bool allowed = std::find(expected.also.begin(), expected.also.end(), findings[i].checker) != expected.also.end();
    if (!allowed) problems.push_back("unexpected finding: " + Describe(findings[i]));
  }
  return problems;
}

}  // namespace lockstep::probe
