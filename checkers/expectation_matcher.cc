#include "checkers/expectation_matcher.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

std::string Describe(const ExpectedFinding& e) {
  std::string s = e.checker;
  if (e.step) s += " at step " + std::to_string(*e.step);
  if (!e.ranks.empty()) s += " on " + internal::RankPhrase(e.ranks);
  if (!e.tensor.empty()) s += " for tensor " + e.tensor;
  if (e.location.line > 0) s += " (" + e.location.file + ":" + std::to_string(e.location.line) + ")";
  return s;
}

std::string Describe(const Finding& f) {
  std::string s = f.checker;
  if (f.step) s += " at step " + std::to_string(*f.step);
  if (!f.ranks.empty()) s += " on " + internal::RankPhrase(f.ranks);
  if (!f.tensor.empty()) s += " (tensor " + f.tensor + ")";
  return s;
}

bool GlobMatches(const std::string& pattern, const std::string& name) {
  return !name.empty() && ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

bool Matches(const ExpectedFinding& expected, const Finding& finding) {
  if (finding.outcome == FindingOutcome::kError) return false;
  if (expected.checker != finding.checker) return false;
  if (expected.step && (!finding.step || *expected.step != *finding.step)) return false;
  if (!expected.ranks.empty()) {
    const std::set<int> want(expected.ranks.begin(), expected.ranks.end());
    const std::set<int> have(finding.ranks.begin(), finding.ranks.end());
    // Without a majority a finding names every side (one of them is at fault, the records cannot
    // say which): the expected ranks match when they are among them.
    const auto majority = finding.details.find("majority");
    const bool every_side = majority != finding.details.end() && majority->second == "none" &&
                            finding.details.count("named") == 0;
    if (every_side ? !std::includes(have.begin(), have.end(), want.begin(), want.end()) : want != have) return false;
  }
  if (!expected.tensor.empty()) {
    bool any = GlobMatches(expected.tensor, finding.tensor);
    for (const std::string& t : finding.tensors) any = any || GlobMatches(expected.tensor, t);
    if (!any) return false;
  }
  return true;
}

ExpectationVerdict MatchExpectations(const std::vector<ExpectedFinding>& expected, std::vector<Finding>& findings) {
  std::vector<bool> matched(expected.size(), false);
  for (Finding& f : findings) {
    if (f.outcome == FindingOutcome::kError) continue;
    bool is_expected = false;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (Matches(expected[i], f)) {
        matched[i] = true;
        is_expected = true;
      }
    }
    f.outcome = is_expected ? FindingOutcome::kExpected : FindingOutcome::kFail;
  }

  std::vector<std::string> unexpected, errors, missing;
  for (const Finding& f : findings) {
    if (f.outcome == FindingOutcome::kFail) unexpected.push_back(Describe(f));
    if (f.outcome == FindingOutcome::kError) errors.push_back(f.checker + ": " + f.message);
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!matched[i]) missing.push_back(Describe(expected[i]));
  }
  const size_t matched_count = static_cast<size_t>(std::count(matched.begin(), matched.end(), true));

  ExpectationVerdict v;
  auto add = [&v](const std::string& label, const std::vector<std::string>& items) {
    if (items.empty()) return;
    if (!v.reason.empty()) v.reason += "; ";
    v.reason += label + ": " + internal::JoinCapped(items, 10);
  };
  if (expected.empty()) {
    if (!unexpected.empty()) v.outcome = Outcome::kFail;
    else if (!errors.empty()) v.outcome = Outcome::kError;
    add("findings", unexpected);
    add("could not check", errors);
    return v;
  }
  if (!unexpected.empty() || (matched_count > 0 && !missing.empty())) {
    v.outcome = Outcome::kFail;
    add("expected but missing", missing);
    add("not expected", unexpected);
    add("could not check", errors);
    return v;
  }
  if (matched_count == 0) {
    v.outcome = Outcome::kXpass;
    add("expected findings did not appear", missing);
    add("could not check", errors);
    return v;
  }
  if (!errors.empty()) {
    v.outcome = Outcome::kError;
    add("could not check", errors);
    return v;
  }
  v.outcome = Outcome::kXfail;
  v.reason = "all " + std::to_string(expected.size()) + " expected finding" + (expected.size() == 1 ? "" : "s") +
             " occurred";
  return v;
}

Outcome CheckerOutcome(const std::string& checker, const std::vector<Finding>& findings) {
  bool failed = false, expected = false, error = false;
  for (const Finding& f : findings) {
    if (f.checker != checker) continue;
    failed |= f.outcome == FindingOutcome::kFail;
    expected |= f.outcome == FindingOutcome::kExpected;
    error |= f.outcome == FindingOutcome::kError;
  }
  return error ? Outcome::kError : failed ? Outcome::kFail : expected ? Outcome::kXfail : Outcome::kPass;
}

}  // namespace lockstep
