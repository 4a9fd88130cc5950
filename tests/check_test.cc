// `lockstep check` end to end: the checkers on traces already written give the findings the
// run gave (a `lockstep run` of a clean and an injected scenario on real ranks, and a `lockstep
// exec` of a fake program), with the same reports and exit codes; bad directories are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "harness/cli/testing/run_program.h"
#include "harness/core/testing/build_paths.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::LockstepBinary;
using testing::ProgramResult;
using testing::RunProgram;

fs::path RunDir(const std::string& name) { return testing::FreshOutDir("check_test", name); }

ProgramResult Lockstep(const std::vector<std::string>& args) {
  return RunProgram(LockstepBinary(), args, LOCKSTEP_SOURCE_DIR);
}

nlohmann::json Report(const fs::path& dir) {
  std::ifstream in(dir / "report.json");
  EXPECT_TRUE(in.good()) << "no report.json in " << dir;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// A finding as both commands must agree on it; the outcome differs by design (the run knows what
// its scenario expected, check does not).
std::string Key(const nlohmann::json& f) {
  return f["checker"].dump() + " step " + f.value("step", nlohmann::json()).dump() + " ranks " + f["ranks"].dump() +
         " tensor " + f.value("tensor", nlohmann::json()).dump() + ": " + f["message"].dump();
}

// Scenario id -> its findings' keys, and which checkers judged each scenario.
struct Judged {
  std::map<std::string, std::multiset<std::string>> findings;
  std::map<std::string, std::set<std::string>> ran;  // checkers that were not skipped
};

Judged FindingsOf(const nlohmann::json& report) {
  Judged j;
  for (const auto& s : report["scenarios"]) {
    const std::string id = s["id"];
    j.findings[id];
    for (const auto& f : s["findings"]) j.findings[id].insert(Key(f));
    for (const auto& c : s["checkers"]) {
      if (c["outcome"] != "skipped") j.ran[id].insert(c["checker"].get<std::string>());
    }
  }
  return j;
}

void ExpectSameFindings(const nlohmann::json& run_report, const nlohmann::json& check_report) {
  const Judged run = FindingsOf(run_report), check = FindingsOf(check_report);
  ASSERT_EQ(run.findings.size(), check.findings.size());
  for (const auto& [id, keys] : run.findings) {
    ASSERT_TRUE(check.findings.count(id)) << id;
    // Every finding of the run comes from a checker that check runs too, so nothing is lost.
    for (const auto& s : run_report["scenarios"]) {
      if (s["id"] != id) continue;
      for (const auto& f : s["findings"]) {
        EXPECT_TRUE(check.ran.at(id).count(f["checker"].get<std::string>())) << id << ": " << Key(f);
      }
    }
    EXPECT_EQ(keys, check.findings.at(id)) << id;
  }
}

TEST(CheckTest, CheckOnARunDirectoryGivesTheRunsFindings) {
  const fs::path dir = RunDir("run"), checked = RunDir("run_checked");
  const ProgramResult run =
      Lockstep({"run", "scenarios/clean/ddp_mlp.yaml", "scenarios/inject/ddp/bitflip.yaml", "--out", dir.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;  // the injection is expected: xfail
  const nlohmann::json run_report = Report(dir);
  ASSERT_EQ(run_report["scenarios"].size(), 2u);
  EXPECT_FALSE(run_report["scenarios"][1]["findings"].empty()) << "the injected scenario has findings";

  const fs::path junit = checked.parent_path() / "run_checked.xml";
  const ProgramResult check =
      Lockstep({"check", dir.string(), "--out", checked.string(), "--junit", junit.string()});
  EXPECT_EQ(check.exit_code, 1) << "no scenario says the finding is expected: a failure\n" << check.out << check.err;
  const nlohmann::json check_report = Report(checked);
  ExpectSameFindings(run_report, check_report);
  for (const auto& s : check_report["scenarios"]) {
    EXPECT_EQ(s["ranks"], 4);
    for (const auto& c : s["checkers"]) {
      if (c["checker"] == "reference" || c["checker"] == "golden" || c["checker"] == "crash") {
        EXPECT_EQ(c["outcome"], "skipped") << c.dump();
        EXPECT_FALSE(c.value("skip_reason", std::string()).empty()) << c.dump();
      }
    }
  }
  EXPECT_EQ(check_report["scenarios"][0]["outcome"], "pass");
  EXPECT_EQ(check_report["scenarios"][1]["outcome"], "fail");
  EXPECT_TRUE(fs::exists(junit));

  // One scenario's folder, or its traces/ folder, is checked alone.
  const ProgramResult one = Lockstep({"check", (dir / "clean" / "ddp_mlp" / "traces").string()});
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("[ PASS ] clean/ddp_mlp"), std::string::npos) << "the id rank 0's header names\n" << one.out;
  EXPECT_EQ(Report(dir), run_report) << "check never rewrites the run's own report.json";
}

TEST(CheckTest, CheckOnAnExecDirectoryGivesExecsFindings) {
  const fs::path dir = RunDir("exec"), checked = RunDir("exec_checked");
  const std::string program = (fs::path(LOCKSTEP_BINARY_DIR) / "bin" / "fake_training_program").string();
  const ProgramResult exec = Lockstep({"exec", "--ranks", "3", "--out", dir.string(), "--name", "drift", "--", program,
                                       "--diverge-rank", "1", "--diverge-step", "2"});
  ASSERT_EQ(exec.exit_code, 1) << exec.out << exec.err;
  // A folder of rank-<r>.trace files, as a probe under the user's own launcher writes them.
  const ProgramResult check = Lockstep({"check", (dir / "drift" / "traces").string(), "--out", checked.string()});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  const nlohmann::json exec_report = Report(dir), check_report = Report(checked);
  EXPECT_EQ(FindingsOf(exec_report).findings.at("drift"), FindingsOf(check_report).findings.begin()->second);
}

TEST(CheckTest, BadDirectoriesAreRefused) {
  const fs::path empty = RunDir("empty");
  fs::create_directories(empty);
  ProgramResult r = Lockstep({"check", empty.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no rank-0.trace"), std::string::npos) << r.err;

  r = Lockstep({"check", (empty / "missing").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
}

TEST(CheckTest, AMissingRankOrNoStepIsAnErrorNeverAPass) {
  const fs::path dir = RunDir("missing_rank"), checked = RunDir("missing_rank_checked");
  const std::string program = (fs::path(LOCKSTEP_BINARY_DIR) / "bin" / "fake_training_program").string();
  ASSERT_EQ(Lockstep({"exec", "--ranks", "2", "--out", dir.string(), "--name", "two", "--", program}).exit_code, 0);
  const fs::path traces = dir / "two" / "traces";
  ProgramResult r = Lockstep({"check", traces.string(), "--ranks", "3", "--out", checked.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  nlohmann::json s = Report(checked)["scenarios"][0];
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["reason"].get<std::string>().find("no trace for 1 of 3 ranks"), std::string::npos) << s.dump(2);

  // Rank 0's header says 2 ranks: without rank 1's file the world is still 2.
  fs::remove(traces / "rank-1.trace");
  r = Lockstep({"check", traces.string(), "--out", checked.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;

  r = Lockstep({"check", traces.string(), "--out", traces.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

// Two ranks' clean traces from a fake program, in their own folder.
fs::path CleanTraces(const std::string& name) {
  const fs::path dir = RunDir(name);
  const std::string program = (fs::path(LOCKSTEP_BINARY_DIR) / "bin" / "fake_training_program").string();
  const ProgramResult exec = Lockstep({"exec", "--ranks", "2", "--out", dir.string(), "--name", "two", "--", program});
  EXPECT_EQ(exec.exit_code, 0) << exec.out << exec.err;
  return dir / "two" / "traces";
}

// A rank's trace that is empty, garbage or cut inside its header cannot be read: an error (exit
// 3) naming the file and the position, never a pass of what the other ranks recorded.
TEST(CheckTest, AnUnreadableTraceIsAnErrorWithItsFileNeverAPass) {
  const fs::path traces = CleanTraces("unreadable");
  const std::string header = ReadAll(traces / "rank-1.trace");
  ASSERT_GT(header.size(), 40u);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"garbage", "\x7f""ELF garbage without a newline"},
      {"garbage_lines", "not a trace\nat all\n"},
      {"cut_in_header", header.substr(0, 30)},
  };
  for (const auto& [name, text] : cases) {
    WriteAll(traces / "rank-1.trace", text);
    const fs::path checked = RunDir("unreadable_" + name);
    const ProgramResult r = Lockstep({"check", traces.string(), "--out", checked.string()});
    EXPECT_EQ(r.exit_code, 3) << name << "\n" << r.out << r.err;
    const std::string said = r.out + r.err + ReadAll(checked / "report.json");
    EXPECT_NE(said.find((traces / "rank-1.trace").string() + ":1"), std::string::npos) << name << "\n" << said;
  }
}

// A header is input: a world_size of two billion took gigabytes, then "internal error:
// std::bad_alloc". What is sized is bounded by the files there; the field is named.
TEST(CheckTest, AHeadersWorldSizeIsBoundedAndNamed) {
  const fs::path traces = CleanTraces("world_size");
  const std::string rank0 = ReadAll(traces / "rank-0.trace");
  const auto at = rank0.find("\"world_size\":");
  ASSERT_NE(at, std::string::npos) << rank0.substr(0, 300);
  const auto digits = at + std::string("\"world_size\":").size();
  const auto end = rank0.find_first_not_of("0123456789 ", digits);
  for (const std::string& claim : {std::string("2000000000"), std::string("60000")}) {
    WriteAll(traces / "rank-0.trace", rank0.substr(0, digits) + claim + rank0.substr(end));
    const fs::path checked = RunDir("world_size_" + claim);
    const ProgramResult r = Lockstep({"check", traces.string(), "--out", checked.string()});
    const std::string said = r.out + r.err + ReadAll(checked / "report.json");
    EXPECT_EQ(said.find("bad_alloc"), std::string::npos) << said;
    EXPECT_NE(said.find("world_size"), std::string::npos) << claim << "\n" << said;
    EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 3) << claim << "\n" << said;
    if (claim == "60000") {
      EXPECT_NE(said.find("no trace for 59998 of 60000 ranks"), std::string::npos) << said.substr(0, 2000);
      EXPECT_LT(said.size(), 20000u) << "the missing ranks are counted, not all listed";
    }
  }
}

// report.json's `ranks` is input too (diff sizes its per-rank tables by it).
TEST(CheckTest, AReportsRanksIsBoundedAndNamed) {
  const fs::path traces = CleanTraces("report_ranks");
  const fs::path run = traces.parent_path().parent_path();
  std::string report = ReadAll(run / "report.json");
  const auto at = report.find("\"ranks\": 2");
  ASSERT_NE(at, std::string::npos) << report.substr(0, 2000);
  report.replace(at, std::string("\"ranks\": 2").size(), "\"ranks\": 2000000000");
  WriteAll(run / "report.json", report);
  const ProgramResult r = Lockstep({"diff", run.string(), run.string()});
  const std::string said = r.out + r.err;
  EXPECT_EQ(said.find("bad_alloc"), std::string::npos) << said;
  EXPECT_NE(said.find("ranks: 2000000000 is out of range"), std::string::npos) << said;
  EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 3) << said;
}

}  // namespace
}  // namespace lockstep
