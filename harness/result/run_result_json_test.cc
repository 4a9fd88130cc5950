#include "harness/result/run_result_json.h"
#include "harness/core/testing/build_paths.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lockstep {
namespace {

using ::testing::HasSubstr;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FixturePath(const std::string& name) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/" + name;
}

// Every field set to something other than its default, non-finite values included.
RunResult FullResult() {
  RunResult r;
  r.context.versions = {{"libtorch", "1.13.0"}, {"mpi", "3.1"}};
  r.context.host = "node-01";
  r.context.git_sha = "abc123";
  r.context.backend = "mpi";
  r.context.launcher = "mpirun";
  r.context.command_line = "lockstep run scenarios --out out";
  r.context.started_at = "2024-01-01T00:00:00Z";
  r.context.duration_s = 12.0625;

  ScenarioResult s;
  s.id = "ddp_mlp";
  s.file = "scenarios/ddp_mlp.yaml";
  s.line = 7;
  s.description = "unicode: αβγ 🚀, control: \x01, quote: \"";
  s.mode = "ddp/slices=2";
  s.backend = "gloo";
  s.ranks = 4;
  s.steps = 20;
  s.outcome = Outcome::kXfail;
  s.duration_s = 0.1 + 0.2;  // not exactly representable in decimal: the round trip must be exact
  s.reason = "why";
  Finding f;
  f.checker = "replica_weights";
  f.outcome = FindingOutcome::kExpected;
  f.step = 3;
  f.tensor = "fc.weight";
  f.tensors = {"fc.weight", "fc.bias"};
  f.ranks = {1, 3};
  f.message = "diverged";
  f.details = {{"max_rel_diff", "1e-3"}, {"groups", "2"}};
  s.findings.push_back(f);
  Finding no_step;
  no_step.checker = "discovery_count";
  no_step.outcome = FindingOutcome::kError;
  s.findings.push_back(no_step);
  s.checkers.push_back({"replica_weights", Outcome::kXfail, 0.25, "", CheckerCoverage{"param", 3, 5, 2, 14}});
  s.checkers.push_back({"golden", Outcome::kSkipped, 0.0, "no golden file", std::nullopt});
  s.rank_logs = {{0, "hello\n"}, {3, "bye"}};
  s.run_dir = "ddp_mlp";
  s.series.steps = {0, 1, 2};
  s.series.loss_by_rank = {{0, {kNaN, 1.5, kInf}}, {1, {kNaN, 1.5, -kInf}}};
  s.series.tensors = {"fc.weight", "fc.weight (grad)"};
  s.series.divergent_cells.push_back({2, "fc.weight", {{{0}, "aa"}, {{1}, "bb"}}});
  s.series.divergent_cells_omitted = 5;
  s.series.last_collectives.push_back({1, "world", 17, "all_reduce", 2, 1.5, std::nullopt});
  s.series.last_collectives.push_back({0, "world", 17, "all_reduce", 2, 1.5, 1.75});
  r.scenarios.push_back(s);
  ScenarioResult empty;
  empty.id = "empty";
  r.scenarios.push_back(empty);
  return r;
}

TEST(RunResultJsonTest, RoundTripIsExact) {
  const RunResult original = FullResult();
  const std::string text = SerializeRunResult(original);
  Result<RunResult> back = ParseRunResult(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(SerializeRunResult(*back), text);

  const ScenarioResult& s = back->scenarios.at(0);
  EXPECT_EQ(s.duration_s, 0.1 + 0.2);
  EXPECT_EQ(s.outcome, Outcome::kXfail);
  EXPECT_EQ(s.line, 7);
  EXPECT_EQ(s.description, original.scenarios[0].description);
  ASSERT_EQ(s.findings.size(), 2u);
  EXPECT_EQ(s.findings[0].step, std::optional<int64_t>(3));
  EXPECT_EQ(s.findings[0].outcome, FindingOutcome::kExpected);
  EXPECT_EQ(s.findings[0].details.at("max_rel_diff"), "1e-3");
  EXPECT_FALSE(s.findings[1].step.has_value());
  EXPECT_EQ(s.findings[1].outcome, FindingOutcome::kError);
  EXPECT_EQ(s.checkers.at(1).skip_reason, "no golden file");
  ASSERT_TRUE(s.checkers.at(0).judged.has_value());
  EXPECT_EQ(s.checkers.at(0).judged->kind, "param");
  EXPECT_EQ(s.checkers.at(0).judged->tensors, 3);
  EXPECT_EQ(s.checkers.at(0).judged->steps, 5);
  EXPECT_EQ(s.checkers.at(0).judged->groups, 2);
  EXPECT_EQ(s.checkers.at(0).judged->comparisons, 14);
  EXPECT_FALSE(s.checkers.at(1).judged.has_value()) << "a verdict that does not count has no judged";
  EXPECT_EQ(s.rank_logs.at(3), "bye");
  const auto& losses = s.series.loss_by_rank.at(0);
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_TRUE(std::isnan(losses[0]));  // NaN loss at step 0 survives
  EXPECT_EQ(losses[1], 1.5);
  EXPECT_EQ(losses[2], kInf);
  EXPECT_EQ(s.series.loss_by_rank.at(1)[2], -kInf);
  EXPECT_EQ(s.series.divergent_cells_omitted, 5);
  ASSERT_EQ(s.series.divergent_cells.size(), 1u);
  EXPECT_EQ(s.series.divergent_cells[0].groups[1].first, std::vector<int>{1});
  EXPECT_EQ(s.series.divergent_cells[0].groups[1].second, "bb");
  EXPECT_FALSE(s.series.last_collectives[0].end_s.has_value());  // in flight, not NaN
  EXPECT_EQ(s.series.last_collectives[1].end_s, std::optional<double>(1.75));
  EXPECT_EQ(s.series.last_collectives[0].seq, 17u);
  EXPECT_EQ(back->context.versions.at("libtorch"), "1.13.0");
}

TEST(RunResultJsonTest, WritesDocumentedShape) {
  const nlohmann::ordered_json j = RunResultToJson(FullResult());
  EXPECT_EQ(j.at("schema"), "lockstep.report/1");
  EXPECT_EQ(j.begin().key(), "schema");  // first, so `head report.json` says what it is
  EXPECT_EQ(j.at("summary").at("total"), 2);
  EXPECT_EQ(j.at("summary").at("xfailed"), 1);
  EXPECT_EQ(j.at("summary").at("passed"), 1);
  const auto& s = j.at("scenarios").at(0);
  EXPECT_TRUE(s.at("series").at("loss_by_rank").at("0").at(0).is_null());
  EXPECT_EQ(s.at("series").at("loss_by_rank").at("0").at(2), "Infinity");
  EXPECT_TRUE(s.at("findings").at(1).at("step").is_null());
  EXPECT_EQ(s.at("findings").at(0).at("outcome"), "expected");
  EXPECT_EQ(s.at("outcome"), "xfail");
}

TEST(RunResultJsonTest, FixturesRoundTripByteForByte) {
  for (const char* name : {"clean.report.json", "mixed.report.json", "hostile.report.json"}) {
    const std::string text = ReadFile(FixturePath(name));
    ASSERT_FALSE(text.empty()) << name;
    Result<RunResult> r = ReadRunResultFile(FixturePath(name));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(SerializeRunResult(*r), text) << name;
  }
}

TEST(RunResultJsonTest, AcceptsNewerMinorVersionAndIgnoresUnknownFields) {
  nlohmann::ordered_json j = RunResultToJson(FullResult());
  j["schema"] = "lockstep.report/1.4";
  j["added_in_1_4"] = {{"x", 1}};
  j["scenarios"][0]["new_field"] = "ignored";
  Result<RunResult> r = RunResultFromJson(j);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->scenarios.size(), 2u);
}

TEST(RunResultJsonTest, RejectsOtherMajorVersion) {
  nlohmann::ordered_json j = RunResultToJson(FullResult());
  j["schema"] = "lockstep.report/2";
  Result<RunResult> r = RunResultFromJson(j, "out/report.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("out/report.json: schema: unsupported report schema \"lockstep.report/2\""));
  EXPECT_THAT(r.status().message(), HasSubstr("major version 1"));
}

TEST(RunResultJsonTest, RejectsMissingOrForeignSchema) {
  Result<RunResult> missing = ParseRunResult(R"({"scenarios": []})");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("missing \"schema\""));

  Result<RunResult> foreign = ParseRunResult(R"({"schema": "lockstep.trace/1", "scenarios": []})");
  ASSERT_FALSE(foreign.ok());
  EXPECT_THAT(foreign.status().message(), HasSubstr("is not a lockstep report schema"));

  Result<RunResult> not_object = ParseRunResult("[1, 2]");
  ASSERT_FALSE(not_object.ok());
  EXPECT_THAT(not_object.status().message(), HasSubstr("expected an object, got array"));
}

TEST(RunResultJsonTest, ErrorsNameTheJsonPath) {
  nlohmann::ordered_json j = RunResultToJson(FullResult());
  j["scenarios"][0]["findings"][0]["step"] = "three";
  Result<RunResult> r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("report.json: scenarios[0].findings[0].step: expected an integer, got string"));

  j = RunResultToJson(FullResult());
  j["scenarios"][1]["outcome"] = "passed";
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[1].outcome: unknown outcome \"passed\""));

  j = RunResultToJson(FullResult());
  j["scenarios"][0]["series"]["loss_by_rank"]["x"] = nlohmann::ordered_json::array();
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[0].series.loss_by_rank: key \"x\" is not a rank number"));

  j = RunResultToJson(FullResult());
  j["scenarios"][0]["series"]["loss_by_rank"]["0"][1] = "lots";
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[0].series.loss_by_rank.0[1]: expected a number"));

  j = RunResultToJson(FullResult());
  j["scenarios"][0].erase("id");
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[0]: missing \"id\""));

  j = RunResultToJson(FullResult());
  j["scenarios"][0]["ranks"] = 1.5;
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[0].ranks: expected an integer, got number"));

  // Arrays inside arrays: each level's index in the path.
  j = RunResultToJson(FullResult());
  j["scenarios"][0]["series"]["divergent_cells"][0]["groups"][1]["ranks"][0] = "one";
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("scenarios[0].series.divergent_cells[0].groups[1].ranks[0]: expected an integer, got string"));

  j = RunResultToJson(FullResult());
  j["scenarios"][0]["series"]["last_collectives"][1] = 7;
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("scenarios[0].series.last_collectives[1]: expected an object, got number"));

  j = RunResultToJson(FullResult());
  j["scenarios"][0]["checkers"] = "all";
  r = RunResultFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scenarios[0].checkers: expected an array, got string"));
}

TEST(RunResultJsonTest, InvalidJsonAndMissingFile) {
  Result<RunResult> r = ParseRunResult("{\"schema\": ", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("x.json: not valid JSON"));

  Result<RunResult> missing = ReadRunResultFile("/nonexistent/report.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Nested 100,000 deep, the report used to parse and then overflow the stack when copied.
TEST(RunResultJsonTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = R"({"schema": "lockstep.report/1", "scenarios": [], "x": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  Result<RunResult> r = ParseRunResult(deep, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("deep.json: line 1, column 118: nested deeper than 64 levels"));
}

TEST(RunResultJsonTest, AFolderNamedReportJsonIsAnError) {
  const std::string dir = ::testing::TempDir() + "/lockstep_report_dir_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/report.json");
  Result<RunResult> r = ReadRunResultFile(dir + "/report.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("is a directory, not a report file"));
  std::filesystem::remove_all(dir);
}

TEST(RunResultJsonTest, BytesThatAreNotUtf8DoNotBreakTheReport) {
  RunResult r = FullResult();
  r.scenarios[0].rank_logs[0] = std::string("binary \xff\xfe garbage \xed\xa0\x80 end");
  const std::string text = SerializeRunResult(r);
  Result<RunResult> back = ParseRunResult(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_THAT(back->scenarios[0].rank_logs.at(0), HasSubstr("binary \xEF\xBF\xBD"));
  EXPECT_THAT(back->scenarios[0].rank_logs.at(0), HasSubstr(" end"));
}

}  // namespace
}  // namespace lockstep
