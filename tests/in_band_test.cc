// `lockstep run --compare in-band` end to end on injected bugs of the catalog (scenarios/inject/):
// the ranks' own finding, made at the step they stop, equals the post-run analysis of their
// traces (checker, step, tensors, odd ranks, message), at 2 and 4 ranks; and the flag's misuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::ProgramResult;

ProgramResult Lockstep(const std::vector<std::string>& args) {
  return testing::RunProgram(testing::LockstepBinary(), args, LOCKSTEP_SOURCE_DIR);
}

// The in-band findings in a trace: its `log` records "in-band finding: {json}".
std::vector<nlohmann::json> InBandFindings(const fs::path& trace) {
  std::vector<nlohmann::json> out;
  std::ifstream in(trace);
  std::string line;
  const std::string prefix = "in-band finding: ";
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("type", "") != "log") continue;
    const std::string text = j.value("line", "");
    if (text.rfind(prefix, 0) == 0) out.push_back(nlohmann::json::parse(text.substr(prefix.size())));
  }
  return out;
}

int64_t LastStep(const fs::path& trace) {
  std::ifstream in(trace);
  std::string line;
  int64_t last = -1;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("type", "") == "step") last = j["step"].get<int64_t>();
  }
  return last;
}

struct Case {
  std::string file;                    // under scenarios/inject/
  std::vector<std::string> checkers;   // post-run replica findings the bug gives, all found in-band
};

class InBandTest : public ::testing::TestWithParam<int> {};

TEST_P(InBandTest, TheRanksFindWhatThePostRunAnalysisFinds) {
  const int ranks = GetParam();
  const std::vector<Case> cases = {
      {"ddp/bitflip", {"replica_weights"}},
      {"ddp/skip_grad_allreduce", {"synced_grads", "replica_weights", "optimizer_state"}},
      {"zero1/bitflip", {"replica_weights"}},
  };
  const fs::path dir = testing::FreshOutDir("in_band", "np" + std::to_string(ranks));
  std::vector<std::string> args = {"run"};
  for (const Case& c : cases) args.push_back("scenarios/inject/" + c.file + ".yaml");
  for (const char* a : {"--compare", "in-band", "--ranks"}) args.emplace_back(a);
  args.push_back(std::to_string(ranks));
  args.push_back("--out");
  args.push_back(dir.string());
  ProgramResult r = Lockstep(args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json report = nlohmann::json::parse(std::ifstream(dir / "report.json"));
  ASSERT_EQ(report["scenarios"].size(), cases.size());

  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& s = report["scenarios"][i];
    SCOPED_TRACE(cases[i].file + " at np=" + std::to_string(ranks));
    EXPECT_EQ(s["outcome"], "xfail") << s.dump(2);
    const fs::path traces = dir / s["run_dir"].get<std::string>() / "traces";
    const std::vector<nlohmann::json> in_band = InBandFindings(traces / "rank-0.trace");
    ASSERT_FALSE(in_band.empty());
    const int64_t stop = in_band.front()["step"].get<int64_t>();
    for (int rank = 0; rank < ranks; ++rank) {
      const fs::path t = traces / ("rank-" + std::to_string(rank) + ".trace");
      EXPECT_EQ(LastStep(t), stop) << "rank " << rank << ": every rank stops at the divergent step";
      if (rank > 0) {
        EXPECT_TRUE(InBandFindings(t).empty()) << "only rank 0 says it, once";
      }
    }

    std::set<std::string> in_band_checkers;
    for (const nlohmann::json& live : in_band) {
      in_band_checkers.insert(live["checker"].get<std::string>());
      const nlohmann::json* judged = nullptr;
      for (const auto& f : s["findings"]) {
        if (f["checker"] == live["checker"]) judged = &f;
      }
      ASSERT_NE(judged, nullptr) << live.dump() << " has no post-run twin in " << s["findings"].dump(2);
      EXPECT_EQ((*judged)["step"], live["step"]);
      EXPECT_EQ((*judged)["tensor"], live["tensor"]);
      EXPECT_EQ((*judged)["tensors"], live["tensors"]);
      EXPECT_EQ((*judged)["ranks"], live["ranks"]);
      EXPECT_EQ((*judged)["message"], live["message"]);
      // The injected rank; with two ranks there is no majority, and both sides are named.
      EXPECT_EQ((*judged)["ranks"], ranks == 2 ? nlohmann::json::array({0, 1}) : nlohmann::json::array({1}))
          << "the injected rank";
    }
    for (const std::string& c : cases[i].checkers) EXPECT_TRUE(in_band_checkers.count(c)) << c;
    // The report shows each finding once: the post-run one.
    std::multiset<std::string> reported;
    for (const auto& f : s["findings"]) reported.insert(f["checker"].get<std::string>());
    for (const std::string& c : in_band_checkers) EXPECT_EQ(reported.count(c), 1u) << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, InBandTest, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& p) { return "np" + std::to_string(p.param); });

TEST(InBandFlagsTest, ABadCompareValueIsAUsageErrorNamingTheFlag) {
  const fs::path dir = testing::FreshOutDir("in_band", "bad_flag");
  ProgramResult r = Lockstep({"run", "scenarios/inject/ddp/bitflip.yaml", "--compare", "live", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--compare"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "report.json"));
}

TEST(InBandFlagsTest, FailFastWithComparePostRunIsAUsageErrorNamingBoth) {
  const fs::path dir = testing::FreshOutDir("in_band", "contradiction");
  ProgramResult r = Lockstep(
      {"run", "scenarios/inject/ddp/bitflip.yaml", "--fail-fast", "--compare", "post-run", "--out", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--fail-fast"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--compare post-run"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lockstep
