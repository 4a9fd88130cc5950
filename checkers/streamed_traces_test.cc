// Streaming and in-memory judging must agree: the same findings, verdicts and series on the
// canned fixtures and on canned runs written to disk, with memory bounded by ranks, not steps.
#include "checkers/streamed_traces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "checkers/checker_registry.h"
#include "checkers/checker_run.h"
#include "checkers/golden_file.h"
#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"
#include "harness/result/run_result_json.h"
#include "harness/result/scenario_series.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::CannedRun;
using testing::FakeDigest;

const fs::path kFixtureTraces = fs::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces";

// Writes `run`'s traces as a rank would: discoveries, then per step its collectives and its
// record, then the footer (if the rank had one).
void WriteRun(const CannedRun& run, const fs::path& dir) {
  for (size_t r = 0; r < run.traces.size(); ++r) {
    const RankTrace& t = run.traces[r];
    auto writer = TraceWriter::Open(dir / TraceFileName(static_cast<int>(r)), t.header);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    TraceWriter& w = **writer;
    for (const DiscoveryRecord& d : t.discoveries) ASSERT_TRUE(w.WriteDiscovery(d).ok());
    size_t c = 0;
    for (const StepRecord& s : t.steps) {
      for (; c < t.collectives.size() && t.collectives[c].step <= s.step; ++c) {
        ASSERT_TRUE(w.WriteCollectiveBegin(t.collectives[c]).ok());
        if (t.collectives[c].end_s) {
          ASSERT_TRUE(w.WriteCollectiveEnd(t.collectives[c].group, t.collectives[c].seq, *t.collectives[c].end_s).ok());
        }
      }
      ASSERT_TRUE(w.WriteStep(s).ok());
    }
    if (t.footer) {
      ASSERT_TRUE(w.WriteFooter(*t.footer).ok());
    }
  }
}

// Everything a finding says, in one string to compare.
std::string Describe(const Finding& f) {
  std::string s = f.checker + "|" + std::to_string(static_cast<int>(f.outcome)) + "|" +
                  (f.step ? std::to_string(*f.step) : "-") + "|" + f.tensor + "|";
  for (const std::string& t : f.tensors) s += t + ",";
  s += "|";
  for (int r : f.ranks) s += std::to_string(r) + ",";
  s += "|" + f.message;
  for (const auto& [k, v] : f.details) s += "|" + k + "=" + v;
  return s;
}

std::vector<std::string> Describe(const CheckerRun& run) {
  std::vector<std::string> out;
  for (const Finding& f : run.findings) out.push_back(Describe(f));
  for (const CheckerVerdict& v : run.verdicts) {
    out.push_back("verdict " + v.checker + " " + std::to_string(static_cast<int>(v.outcome)) + " " + v.skip_reason);
  }
  return out;
}

std::string SeriesJson(const ScenarioSeries& series) {
  RunResult result;
  result.scenarios.emplace_back();
  result.scenarios.back().series = series;
  return SerializeRunResult(result);
}

// The checkers that judge from traces alone (what `lockstep check` runs).
std::vector<std::string> TraceCheckers() {
  std::vector<std::string> names;
  for (const std::string& name : CheckerNames()) {
    if (MakeChecker(name)->needs_scenario().empty()) names.push_back(name);
  }
  return names;
}

struct Judged {
  CheckerRun run;
  std::string series;
  StreamedTraces streamed;
};

// The in-memory path (ReadTraceDir, every checker's Check()) ...
Judged InMemory(const std::vector<std::string>& names, const fs::path& dir, int world, const Scenario& scenario,
                const LaunchReport& launch) {
  auto traces = ReadTraceDir(dir, world);
  EXPECT_TRUE(traces.ok()) << traces.status().ToString();
  Judged out;
  out.run = RunCheckers(names, CheckContext{scenario, *traces, launch}, {});
  out.series = SeriesJson(BuildSeries(*traces));
  return out;
}

// ... and the streaming one (ReadTracesFor, the judges' Finish).
Judged Streamed(const std::vector<std::string>& names, const fs::path& dir, int world, const Scenario& scenario,
                const LaunchReport& launch, const JudgeStart& start = {}) {
  auto streamed = ReadTracesFor(names, dir, world, start);
  EXPECT_TRUE(streamed.ok()) << streamed.status().ToString();
  Judged out;
  out.streamed = std::move(streamed).value();
  CheckContext context{scenario, out.streamed.traces, launch};
  context.steps_without_tensors = !out.streamed.whole;
  context.reference = start.reference;
  context.reference_split = start.reference_split;
  CheckerRunOptions options;
  options.judges = out.streamed.judges_by_name();
  out.run = RunCheckers(names, context, {}, options);
  out.series = SeriesJson(out.streamed.series);
  return out;
}

TEST(StreamedTracesTest, SameFindingsVerdictsAndSeriesAsInMemoryOnTheFixtures) {
  const std::vector<std::pair<std::string, int>> fixtures = {
      {"clean_4rank", 4},      {"rank2_diverges_at_step3", 4}, {"hang_rank1_step3", 4},
      {"truncated_rank1_step3", 2}, {"v2_ddp_mlp", 4}};
  for (const auto& [name, world] : fixtures) {
    SCOPED_TRACE(name);
    Scenario scenario;
    scenario.name = name;
    scenario.ranks = world;
    const LaunchReport launch;
    const Judged memory = InMemory(TraceCheckers(), kFixtureTraces / name, world, scenario, launch);
    const Judged streamed = Streamed(TraceCheckers(), kFixtureTraces / name, world, scenario, launch);
    EXPECT_FALSE(streamed.streamed.whole) << streamed.streamed.why_whole;
    EXPECT_EQ(Describe(streamed.run), Describe(memory.run));
    EXPECT_EQ(streamed.series, memory.series);
    if (name == "rank2_diverges_at_step3") {
      ASSERT_FALSE(streamed.run.findings.empty());
      EXPECT_EQ(streamed.run.findings.front().step, 3);
      EXPECT_EQ(streamed.run.findings.front().ranks, std::vector<int>{2});
    }
  }
}

// Each ported checker fires through the stream exactly as in memory, and stays quiet on a clean run.
TEST(StreamedTracesTest, EachStepJudgingCheckerFiresAndStaysQuietThroughTheStream) {
  struct Case {
    std::string checker;
    std::function<void(CannedRun&)> break_it;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"replica_weights", [](CannedRun& r) { r.Diverge(2, TensorKind::kParam, "w1", 3); }},
      {"synced_grads", [](CannedRun& r) { r.Diverge(2, TensorKind::kGrad, "w0", 3, 0.5); }},
      {"optimizer_state", [](CannedRun& r) { r.Diverge(2, TensorKind::kOptimizerState, "w2#momentum", 3); }},
      {"buffers", [](CannedRun& r) { r.Diverge(2, TensorKind::kBuffer, "bn.running_mean", 3); }},
      {"finite", [nan](CannedRun& r) { r.Tensor(2, 3, TensorKind::kGrad, "w1").norm = nan; }},
      {"stalled_params",
       [](CannedRun& r) {
         for (const char* name : {"w0", "w1", "w2"}) {
           const Digest128 before = r.Tensor(2, 2, TensorKind::kParam, name).digest;
           for (int64_t s = 3; s <= 6; ++s) r.Tensor(2, s, TensorKind::kParam, name).digest = before;
         }
       }},
      {"grad_presence",
       [](CannedRun& r) {
         for (RankTrace& t : r.traces) {
           for (StepRecord& s : t.steps) {
             for (TensorRecord& x : s.tensors) x.replicated = x.kind != TensorKind::kParam && x.kind != TensorKind::kGrad;
           }
         }
         for (StepRecord& s : r.traces[2].steps) {
           if (s.step < 3) continue;
           s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(),
                                          [](const TensorRecord& x) { return x.kind == TensorKind::kGrad && x.name == "w1"; }),
                           s.tensors.end());
         }
       }},
      // Settings, which the stream's folded steps drop as they drop tensors.
      {"optimizer_settings",
       [](CannedRun& r) {
         for (size_t rank = 0; rank < r.traces.size(); ++rank) {
           for (StepRecord& s : r.traces[rank].steps) {
             s.optimizer = {{"opt0.group0.lr", rank == 2 && s.step >= 3 ? 0.005 : 0.01}, {"opt0.group0.momentum", 0.9}};
           }
         }
       }},
      // A step's forward count, compared within the replica groups its parameters name.
      {"forward_passes",
       [](CannedRun& r) {
         for (size_t rank = 0; rank < r.traces.size(); ++rank) {
           for (StepRecord& s : r.traces[rank].steps) s.forwards = rank == 2 && s.step == 3 ? 2 : 1;
         }
       }},
      // Tensor-parallel inputs, which the stream's folded steps drop as they drop tensors.
      {"tp_inputs",
       [](CannedRun& r) {
         for (size_t rank = 0; rank < r.traces.size(); ++rank) {
           for (StepRecord& s : r.traces[rank].steps) {
             const bool own = rank == 2 && s.step >= 3;
             s.tp_inputs = {TpInputRecord{"up", "0", FakeDigest(own ? "own" : std::to_string(s.step)), 1,
                                          ReplicaGroup{{0, 1, 2, 3}, "mesh dim tp"}}};
           }
         }
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.checker);
    ASSERT_NE(MakeChecker(c.checker)->StartJudge({}), nullptr);
    for (bool broken : {false, true}) {
      CannedRun run(4, 6);
      if (broken) c.break_it(run);
      testing::TempDir dir;
      WriteRun(run, dir.path());
      const Judged streamed = Streamed({c.checker}, dir.path(), 4, run.scenario, run.launch);
      ASSERT_FALSE(streamed.streamed.whole);
      const CheckerRun memory = RunCheckers({c.checker}, run.Context(), {});
      EXPECT_EQ(Describe(streamed.run), Describe(memory));
      if (!broken) {
        EXPECT_TRUE(streamed.run.findings.empty());
        continue;
      }
      ASSERT_EQ(streamed.run.findings.size(), 1u);
      EXPECT_EQ(streamed.run.findings[0].step, 3);
      EXPECT_EQ(streamed.run.findings[0].ranks, std::vector<int>{2});
    }
  }
}

// reference judges the N-rank run step by step against its 1-rank references, which it is
// started with: the same findings as in memory, whether the loss, one rank's replica or a ZeRO-1
// shard (every replica wrong alike) leaves the envelope, a rank ends early, or no reference ran.
TEST(StreamedTracesTest, ReferenceJudgesTheStreamAgainstItsCompanionsAsInMemory) {
  struct Case {
    std::string what;
    std::function<void(CannedRun&)> break_it;
    bool with_reference = true;
  };
  auto zero1 = [](CannedRun& r) {
    for (int rank = 0; rank < 4; ++rank) {
      for (auto& s : r.traces[static_cast<size_t>(rank)].steps) {
        TensorRecord shard;
        shard.name = "zero1.grad_shard" + std::to_string(rank);
        shard.kind = TensorKind::kGrad;
        shard.numel = 24;
        shard.replicated = false;
        s.tensors.push_back(shard);
      }
    }
  };
  const std::vector<Case> cases = {
      {"clean", [](CannedRun&) {}},
      {"loss", [](CannedRun& r) {
         for (int rank = 0; rank < 4; ++rank) {
           for (int64_t s = 3; s <= 6; ++s) r.Step(rank, s).loss *= 1.001;
         }
       }},
      {"one replica", [](CannedRun& r) { r.Diverge(2, TensorKind::kParam, "w1", 3, 1e-3); }},
      {"zero1 shard", [zero1](CannedRun& r) {
         zero1(r);
         for (int rank = 0; rank < 4; ++rank) {
           r.Diverge(rank, TensorKind::kParam, "w0", 2, 1e-3);
           r.Diverge(rank, TensorKind::kParam, "w1", 2, 1e-3);
         }
       }},
      {"rank ends early", [](CannedRun& r) {
         r.Cut(3, 2);
         r.Diverge(1, TensorKind::kParam, "w0", 4, 1e-3);
       }},
      {"no reference", [](CannedRun&) {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    CannedRun run(4, 6);
    CannedRun ref(1, 6);
    CannedRun split(1, 6);
    for (int64_t s = 1; s <= 6; ++s) split.Step(0, s).loss *= 1.0 + 1e-7 * static_cast<double>(s);
    c.break_it(run);
    testing::TempDir dir;
    WriteRun(run, dir.path());
    JudgeStart start;
    start.tolerances = run.scenario.tolerances;
    if (c.with_reference) {
      start.reference = &ref.traces;
      start.reference_split = &split.traces;
    }
    const Judged streamed = Streamed({"reference"}, dir.path(), 4, run.scenario, run.launch, start);
    ASSERT_FALSE(streamed.streamed.whole) << streamed.streamed.why_whole;
    CheckContext context = run.Context();
    context.reference = start.reference;
    context.reference_split = start.reference_split;
    const CheckerRun memory = RunCheckers({"reference"}, context, {});
    EXPECT_EQ(Describe(streamed.run), Describe(memory));
    if (c.what == "clean") {
      EXPECT_TRUE(streamed.run.findings.empty());
    }
    if (c.what == "clean") continue;
    ASSERT_EQ(streamed.run.findings.size(), 1u);
    const Finding& f = streamed.run.findings[0];
    if (c.what == "no reference") {
      EXPECT_EQ(f.outcome, FindingOutcome::kError);
      continue;
    }
    EXPECT_EQ(f.outcome, FindingOutcome::kFail);
    if (c.what == "loss") {
      EXPECT_EQ(f.step, 3);
    }
    if (c.what == "one replica") {
      EXPECT_EQ(f.ranks, std::vector<int>{2});
    }
    if (c.what == "zero1 shard") {
      EXPECT_EQ(f.ranks, std::vector<int>{1});
    }
    if (c.what == "rank ends early") {
      EXPECT_EQ(f.step, 4);
    }
  }
}

// golden, started with its golden file, compares the final tensors as the final step streams past
// and the loss curve from the folded steps: the same findings as in memory, blessed or not.
TEST(StreamedTracesTest, GoldenJudgesTheStreamAsInMemory) {
  const std::string platform = "libtorch-test_gloo_cpu";
  for (const std::string what : {"blessed", "tensor differs", "loss differs", "no golden file"}) {
    SCOPED_TRACE(what);
    CannedRun run(4, 5);
    testing::TempDir fixtures;
    if (what != "no golden file") {
      ASSERT_TRUE(WriteGolden(fixtures.path(), run.scenario.name, platform, run.traces).ok());
    }
    if (what == "tensor differs") {
      for (int rank = 0; rank < 4; ++rank) run.Tensor(rank, 5, TensorKind::kParam, "w1").digest = Digest128{};
    }
    if (what == "loss differs") run.Step(1, 3).loss += 1.0;
    testing::TempDir dir;
    WriteRun(run, dir.path());
    JudgeStart start;
    start.tolerances = run.scenario.tolerances;
    start.scenario_name = run.scenario.name;
    start.fixtures_dir = fixtures.path();
    start.platform = platform;
    const Judged streamed = Streamed({"golden"}, dir.path(), 4, run.scenario, run.launch, start);
    ASSERT_FALSE(streamed.streamed.whole) << streamed.streamed.why_whole;
    CheckContext context = run.Context();
    context.fixtures_dir = fixtures.path();
    context.platform = platform;
    const CheckerRun memory = RunCheckers({"golden"}, context, {});
    EXPECT_EQ(Describe(streamed.run), Describe(memory));
    EXPECT_EQ(streamed.run.findings.empty(), what == "blessed");
  }
}

// A rank that died early simply ends: the others are still compared after its last step.
TEST(StreamedTracesTest, ARankEndingEarlyIsNotComparedAfterItsEnd) {
  CannedRun run(4, 8);
  run.Cut(3, 4);
  run.Diverge(1, TensorKind::kParam, "w0", 6);
  testing::TempDir dir;
  WriteRun(run, dir.path());
  const Judged streamed = Streamed(TraceCheckers(), dir.path(), 4, run.scenario, LaunchReport{});
  const Judged memory = InMemory(TraceCheckers(), dir.path(), 4, run.scenario, LaunchReport{});
  EXPECT_EQ(Describe(streamed.run), Describe(memory.run));
  EXPECT_EQ(streamed.series, memory.series);
  ASSERT_FALSE(streamed.run.findings.empty());
  const Finding& f = streamed.run.findings.front();
  EXPECT_EQ(f.checker, "replica_weights");
  EXPECT_EQ(f.step, 6);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(streamed.streamed.traces[3].steps.back().step, 4);
}

// A judge that remembers what it was handed: steps in order, one record per rank at most.
class RecordingJudge : public StepJudge {
 public:
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    steps.push_back(step);
    size_t present = 0;
    for (const StepRecord* r : records) {
      if (r == nullptr) continue;
      ++present;
      EXPECT_EQ(r->step, step);
      EXPECT_FALSE(r->tensors.empty());
    }
    most_present = std::max(most_present, present);
  }
  std::vector<Finding> Finish(const CheckContext&) override { return {}; }
  std::vector<int64_t> steps;
  size_t most_present = 0;
};

// What the driver holds does not grow with steps: at most a current and a next record per rank,
// for 10 steps as for 300; what stays after (the folded traces) holds no tensor.
TEST(StreamedTracesTest, MemoryDoesNotGrowWithSteps) {
  for (int64_t steps : {10, 300}) {
    SCOPED_TRACE(steps);
    CannedRun run(3, steps);
    testing::TempDir dir;
    WriteRun(run, dir.path());
    auto opened = OpenTraceDir(dir.path(), 3);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::vector<RankTraceStream*> streams;
    for (const auto& s : *opened) streams.push_back(s.get());
    RecordingJudge judge;
    auto stats = DriveSteps(streams, {&judge});
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_FALSE(stats->out_of_order);
    EXPECT_EQ(stats->steps, steps + 1);
    EXPECT_LE(stats->most_records_held, 2u * 3u);
    EXPECT_EQ(judge.most_present, 3u);
    ASSERT_EQ(judge.steps.size(), static_cast<size_t>(steps + 1));
    for (size_t i = 0; i < judge.steps.size(); ++i) EXPECT_EQ(judge.steps[i], static_cast<int64_t>(i));

    auto streamed = ReadTracesFor(CheckerNames(), dir.path(), 3);  // determinism needs whole traces ...
    ASSERT_TRUE(streamed.ok());
    EXPECT_TRUE(streamed->whole);
    EXPECT_NE(streamed->why_whole.find("reads tensors across steps"), std::string::npos);
    streamed = ReadTracesFor(TraceCheckers(), dir.path(), 3);  // ... the others stream
    ASSERT_TRUE(streamed.ok());
    ASSERT_FALSE(streamed->whole);
    EXPECT_LE(streamed->most_records_held, 2u * 3u);
    for (const RankTrace& t : streamed->traces) {
      ASSERT_EQ(t.steps.size(), static_cast<size_t>(steps + 1));
      for (const StepRecord& s : t.steps) ASSERT_TRUE(s.tensors.empty());
    }
  }
}

// A rank whose step numbers go backwards cannot be merged by step number: the traces are read
// whole instead, and the findings are today's.
TEST(StreamedTracesTest, StepsOutOfOrderAreReadWhole) {
  CannedRun run(2, 4);
  run.Diverge(1, TensorKind::kParam, "w2", 2);
  run.traces[0].steps.push_back(run.traces[0].steps[1]);  // rank 0 records step 1 again at the end
  testing::TempDir dir;
  WriteRun(run, dir.path());
  const Judged streamed = Streamed(TraceCheckers(), dir.path(), 2, run.scenario, LaunchReport{});
  EXPECT_TRUE(streamed.streamed.whole);
  EXPECT_NE(streamed.streamed.why_whole.find("rank-0.trace: step 1 after step 4"), std::string::npos)
      << streamed.streamed.why_whole;
  const Judged memory = InMemory(TraceCheckers(), dir.path(), 2, run.scenario, LaunchReport{});
  EXPECT_EQ(Describe(streamed.run), Describe(memory.run));
}

// A tensor-reading checker is never judged on steps without tensors: without its fed judge, the
// run says the harness broke.
TEST(StreamedTracesTest, ATensorReaderWithoutItsJudgeOnStreamedTracesIsAHarnessError) {
  CannedRun run(2, 3);
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) s.tensors.clear();
  }
  CheckContext context = run.Context();
  context.steps_without_tensors = true;
  for (const std::string name : {"replica_weights", "finite", "reference"}) {
    SCOPED_TRACE(name);
    const CheckerRun result = RunCheckers({name}, context, {});
    ASSERT_EQ(result.findings.size(), 1u);
    EXPECT_EQ(result.findings[0].outcome, FindingOutcome::kError);
    EXPECT_NE(result.findings[0].message.find("harness error"), std::string::npos);
    // Check() itself refuses too, for a caller that bypasses RunCheckers.
    if (name != "reference") {
      const auto direct = MakeChecker(name)->Check(context);
      ASSERT_EQ(direct.size(), 1u);
      EXPECT_EQ(direct[0].outcome, FindingOutcome::kError);
    }
  }
}

}  // namespace
}  // namespace lockstep
