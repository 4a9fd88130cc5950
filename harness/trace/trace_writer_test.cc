#include "harness/trace/trace_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <random>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/trace/mapped_append_file.h"
#include "harness/trace/tensor_table.h"
#include "harness/trace/trace_parser.h"
#include "harness/trace/trace_reader.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

// The trace's lines as a reader sees them, also while its writer is open: up to the first zero
// byte (the tail the writer reserved ahead, TraceDataLength).
std::string FileBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> Lines(const std::filesystem::path& p) {
  const std::string all = FileBytes(p);
  std::istringstream data(all.substr(0, TraceDataLength(all)));
  std::vector<std::string> lines;
  for (std::string l; std::getline(data, l);) lines.push_back(l);
  return lines;
}

TraceHeader Header(int rank) {
  TraceHeader h;
  h.rank = rank;
  h.world_size = 4;
  h.local_rank = rank;
  h.slice = rank / 2;
  h.host = "node-a";
  h.pid = 4242;
  h.device = "cpu";
  h.backend = "mpi";
  h.scenario_id = "ddp_mlp_basic";
  h.scenario_digest = "abc123";
  h.versions = {{"libtorch", "1.13.1"}, {"mpi", "Open MPI 4.1.4"}};
  return h;
}

StepRecord Step(int64_t step, int tensors) {
  StepRecord s;
  s.step = step;
  s.loss = step == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 / (step + 1);
  s.grad_norm = step == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.1 * step;
  s.lr = 0.01;
  s.wall_s = 0.5 * step;
  for (int i = 0; i < tensors; ++i) {
    TensorRecord t;
    t.name = "blocks." + std::to_string(i / 4) + ".w" + std::to_string(i % 4);
    t.kind = static_cast<TensorKind>(i % 4);
    t.digest = Digest128{static_cast<uint64_t>(step * 1000 + i), ~static_cast<uint64_t>(i)};
    t.numel = 64 * (i + 1);
    t.dtype = "float32";
    t.norm = 3.14159 * (i + 1) / 7.0;
    t.replicated = (i % 5) != 4;
    s.tensors.push_back(t);
  }
  return s;
}

// A test that begins with rank 0's trace open in a temporary folder of its own (OpenRank for
// another rank's): path_ and writer_.
class TraceWriterFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenRank(0)); }

  // Opens rank `rank`'s trace (its header's rank too) in place of the one open.
  void OpenRank(int rank) {
    path_ = temp_.path() / TraceFileName(rank);
    Result<std::unique_ptr<TraceWriter>> w = TraceWriter::Open(path_, Header(rank));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    writer_ = std::move(*w);
  }

  testing::TempDir temp_{"lockstep_trace_writer_"};
  std::filesystem::path path_;
  std::unique_ptr<TraceWriter> writer_;
};

TEST(TraceWriterTest, HeaderIsTheFirstLineWithTheCurrentSchema) {
  testing::TempDir temp("lockstep_trace_writer_header_");
  const std::filesystem::path& dir = temp.path();
  auto w = TraceWriter::Open(dir / "sub" / TraceFileName(2), Header(2));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto lines = Lines(dir / "sub" / "rank-2.trace");
  ASSERT_EQ(lines.size(), 1u);
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["type"], "header");
  EXPECT_EQ(j["schema"], "lockstep.trace/2.6");
  EXPECT_EQ(j["rank"], 2);
  EXPECT_EQ(j["versions"]["libtorch"], "1.13.1");
}

// Processes that hard-code world_size=1 all open rank-0.trace: interleaved, the file read as
// "not a JSON trace record". Opened as new, the second is refused by name, the first untouched.
TEST(TraceWriterTest, ANewTraceRefusesAFileAnotherProcessWrites) {
  testing::TempDir temp("lockstep_trace_writer_new_");
  const std::filesystem::path path = temp.path() / TraceFileName(0);
  auto first = TraceWriter::Open(path, Header(0), TraceOpen::kNew);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = TraceWriter::Open(path, Header(0), TraceOpen::kNew);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(path.string() + ": another process of this run already writes rank 0's"),
            std::string::npos)
      << second.status().message();
  EXPECT_EQ(Lines(path).size(), 1u);
  // Replacing stays the default (a rerun of lockstep-rank into its own folder).
  EXPECT_TRUE(TraceWriter::Open(path, Header(0)).ok());
}

TEST(TraceWriterTest, EveryRecordIsOneJsonLineAndRoundTrips) {
  testing::TempDir temp("lockstep_trace_writer_roundtrip_");
  const std::filesystem::path& dir = temp.path();
  auto path = dir / TraceFileName(1);
  {
    auto w = TraceWriter::Open(path, Header(1));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    TraceWriter& tw = **w;
    ASSERT_TRUE(tw.WriteDiscovery({1, "startup", 0, "", "", ""}).ok());  // unnamed: lockstep's topology
    ASSERT_TRUE(tw.WriteStep(Step(0, 6)).ok());
    CollectiveRecord c;
    c.group = "world";
    c.seq = 0;
    c.op = "all_reduce";
    c.dtype = "float32";
    c.count = 1024;
    c.reduce = "avg";
    c.step = 1;
    c.start_s = 0.25;
    ASSERT_TRUE(tw.WriteCollectiveBegin(c).ok());
    ASSERT_TRUE(tw.WriteCollectiveEnd("world", 0, 0.5).ok());
    c.seq = 1;
    c.op = "broadcast";
    c.root = 0;
    c.reduce = "";
    ASSERT_TRUE(tw.WriteCollectiveBegin(c).ok());  // never ends: a hang
    ASSERT_TRUE(tw.WriteStep(Step(1, 6)).ok());
    ASSERT_TRUE(tw.WriteHeartbeat(1, 0.75).ok());
    ASSERT_TRUE(tw.WriteDiscovery({2, "attention_forward", 1, "mpi.comm_split", "model.py:3 in f", "mpi:3/1"}).ok());
    ASSERT_TRUE(tw.WriteLog("loss \"1.5\"\tdone\n\xff\xfe").ok());
    ASSERT_TRUE(tw.WriteFooter({1, "ok"}).ok());
  }
  auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 12u);  // one `tensors` record: step 1 has step 0's tensors
  // accept, not parse under EXPECT_NO_THROW: parse's result is warn_unused_result, which GCC 14
  // reports for the value the macro drops, even cast to void.
  for (const auto& l : lines) EXPECT_TRUE(nlohmann::json::accept(l)) << l;

  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->truncated);
  EXPECT_EQ(t->header.rank, 1);
  EXPECT_EQ(t->header.host, "node-a");
  EXPECT_EQ(t->header.pid, 4242);
  EXPECT_EQ(t->header.slice, 0);
  EXPECT_EQ(t->header.versions.at("mpi"), "Open MPI 4.1.4");
  ASSERT_EQ(t->steps.size(), 2u);
  EXPECT_TRUE(std::isnan(t->steps[0].loss));
  EXPECT_TRUE(std::isnan(t->steps[0].grad_norm));
  EXPECT_DOUBLE_EQ(t->steps[1].loss, 0.5);
  const StepRecord expected = Step(1, 6);
  ASSERT_EQ(t->steps[1].tensors.size(), expected.tensors.size());
  for (size_t i = 0; i < expected.tensors.size(); ++i) {
    const auto& a = t->steps[1].tensors[i];
    const auto& b = expected.tensors[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.digest, b.digest);
    EXPECT_EQ(a.numel, b.numel);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.norm, b.norm);  // exact: doubles are written in round-trip form
    EXPECT_EQ(a.replicated, b.replicated);
  }
  ASSERT_EQ(t->collectives.size(), 2u);
  EXPECT_EQ(t->collectives[0].op, "all_reduce");
  EXPECT_EQ(t->collectives[0].reduce, "avg");
  EXPECT_EQ(t->collectives[0].count, 1024);
  ASSERT_TRUE(t->collectives[0].end_s.has_value());
  EXPECT_EQ(*t->collectives[0].end_s, 0.5);
  EXPECT_EQ(t->collectives[1].root, 0);
  EXPECT_FALSE(t->collectives[1].end_s.has_value());
  ASSERT_EQ(t->discoveries.size(), 2u);
  EXPECT_EQ(t->discoveries[0].phase, "startup");
  EXPECT_EQ(t->discoveries[0].name, "lockstep.topology");
  EXPECT_EQ(t->discoveries[0].where, "");
  EXPECT_EQ(t->discoveries[1].call, 2);
  EXPECT_EQ(t->discoveries[1].name, "mpi.comm_split");
  EXPECT_EQ(t->discoveries[1].phase, "attention_forward");
  EXPECT_EQ(t->discoveries[1].step, 1);
  EXPECT_EQ(t->discoveries[1].where, "model.py:3 in f");
  EXPECT_EQ(t->discoveries[1].comm, "mpi:3/1");
  EXPECT_EQ(t->last_heartbeat_s, 0.75);
  ASSERT_EQ(t->log_tail.size(), 1u);
  EXPECT_EQ(t->log_tail[0], "loss \"1.5\"\tdone\n\xef\xbf\xbd\xef\xbf\xbd");  // invalid UTF-8 -> U+FFFD
  ASSERT_TRUE(t->footer.has_value());
  EXPECT_EQ(t->footer->steps_completed, 1);
  EXPECT_EQ(t->footer->status, "ok");
}

TEST(TraceWriterTest, NonFiniteValuesKeepTheirKind) {
  testing::TempDir temp("lockstep_trace_writer_nonfinite_");
  const std::filesystem::path& dir = temp.path();
  auto path = dir / TraceFileName(0);
  {
    auto w = TraceWriter::Open(path, Header(0));
    ASSERT_TRUE(w.ok());
    StepRecord s = Step(3, 2);
    s.loss = std::numeric_limits<double>::infinity();
    s.grad_norm = -std::numeric_limits<double>::infinity();
    s.tensors[1].norm = std::numeric_limits<double>::quiet_NaN();
    ASSERT_TRUE((*w)->WriteStep(s).ok());
  }
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 1u);
  EXPECT_TRUE(std::isinf(t->steps[0].loss) && t->steps[0].loss > 0);
  EXPECT_TRUE(std::isinf(t->steps[0].grad_norm) && t->steps[0].grad_norm < 0);
  EXPECT_TRUE(std::isnan(t->steps[0].tensors[1].norm));
}

TEST(TraceWriterTest, RecordsFromManyThreadsStayWhole) {
  testing::TempDir temp("lockstep_trace_writer_threads_");
  const std::filesystem::path& dir = temp.path();
  auto path = dir / TraceFileName(0);
  {
    auto w = TraceWriter::Open(path, Header(0));
    ASSERT_TRUE(w.ok());
    TraceWriter* tw = w->get();
    std::vector<std::thread> threads;
    for (int g = 0; g < 4; ++g) {
      threads.emplace_back([tw, g] {
        for (uint64_t seq = 0; seq < 200; ++seq) {
          CollectiveRecord c;
          c.group = "g" + std::to_string(g);
          c.seq = seq;
          c.op = "all_reduce";
          ASSERT_TRUE(tw->WriteCollectiveBegin(c).ok());
          ASSERT_TRUE(tw->WriteCollectiveEnd(c.group, seq, 1.0).ok());
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->collectives.size(), 800u);
  for (const auto& c : t->collectives) EXPECT_TRUE(c.end_s.has_value()) << c.group << " " << c.seq;
}

// A rank killed with SIGKILL right after WriteStep returned must leave that step in the file.
TEST(TraceWriterTest, StepsSurviveSigkill) {
  testing::TempDir temp("lockstep_trace_writer_sigkill_");
  const std::filesystem::path& dir = temp.path();
  auto path = dir / TraceFileName(3);
  std::filesystem::create_directories(dir);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto w = TraceWriter::Open(path, Header(3));
    if (!w.ok()) ::_exit(2);
    for (int64_t s = 0; s <= 3; ++s) {
      if (!(*w)->WriteStep(Step(s, 50)).ok()) ::_exit(2);
    }
    CollectiveRecord c;
    c.group = "world";
    c.seq = 7;
    c.op = "all_reduce";
    c.step = 4;
    if (!(*w)->WriteCollectiveBegin(c).ok()) ::_exit(2);
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->truncated);
  ASSERT_EQ(t->steps.size(), 4u);
  EXPECT_EQ(t->steps.back().step, 3);
  ASSERT_EQ(t->collectives.size(), 1u);
  EXPECT_EQ(t->collectives[0].seq, 7u);
  EXPECT_FALSE(t->collectives[0].end_s.has_value());
  EXPECT_FALSE(t->footer.has_value());
}

TEST(TraceWriterTest, OpenFailsWithAStatusOnAnUnwritablePath) {
  auto w = TraceWriter::Open("/proc/self/no/such/dir/rank-0.trace", Header(0));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kIoError);
}

// Issue 15's budget: at most 40 bytes per tensor per step. Names, kinds and shapes are written
// once, in the `tensors` record before the first step that has them.
TEST_F(TraceWriterFileTest, AStepRecordCostsAtMostFortyBytesPerTensor) {
  for (int step = 1; step <= 3; ++step) ASSERT_TRUE(writer_->WriteStep(Step(step, 300)).ok());
  auto lines = Lines(path_);
  ASSERT_EQ(lines.size(), 5u);  // header, tensors, 3 steps
  EXPECT_EQ(nlohmann::json::parse(lines[1])["type"], "tensors");
  for (size_t i = 2; i < lines.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(lines[i])["type"], "step");
    EXPECT_LE(lines[i].size() + 1, 40u * 300) << lines[i].size() << " bytes for 300 tensors";
  }
}

// A step whose tensors differ from the last `tensors` record's (optimizer state appears after the
// first step, a tensor changes shape) gets a new one, and each step reads back its own tensors.
TEST_F(TraceWriterFileTest, ANewTensorsRecordWhenTheTensorsChange) {
  StepRecord a = Step(0, 3);
  StepRecord b = Step(1, 5);
  StepRecord c = Step(2, 5);
  c.tensors[2].numel += 1;
  StepRecord d = Step(3, 5);
  d.tensors[2].numel += 1;
  d.tensors[4].norm = -0.0;
  for (const StepRecord* s : {&a, &b, &c, &d}) ASSERT_TRUE(writer_->WriteStep(*s).ok());
  std::vector<std::string> types;
  for (const auto& l : Lines(path_)) types.push_back(nlohmann::json::parse(l)["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"header", "tensors", "step", "tensors", "step", "tensors", "step", "step"}));
  auto t = ReadTrace(path_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 4u);
  const StepRecord* want[] = {&a, &b, &c, &d};
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_EQ(t->steps[k].tensors.size(), want[k]->tensors.size());
    for (size_t i = 0; i < want[k]->tensors.size(); ++i) {
      const TensorRecord& got = t->steps[k].tensors[i];
      const TensorRecord& exp = want[k]->tensors[i];
      EXPECT_EQ(got.name, exp.name);
      EXPECT_EQ(got.numel, exp.numel);
      EXPECT_EQ(got.digest, exp.digest);
      EXPECT_EQ(std::signbit(got.norm), std::signbit(exp.norm));
      EXPECT_EQ(got.norm, exp.norm);
    }
  }
}

// Each field a `tensors` record says of a tensor, changed alone from one step to the next, makes a
// new `tensors` record; the same fields in other objects (another string, an equal group) do not.
TEST_F(TraceWriterFileTest, EveryFieldOfTheLayoutIsCompared) {
  const auto dp = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 1}, "mesh dim dp"});
  std::vector<std::pair<std::string, std::function<void(TensorRecord&)>>> changes = {
      {"nothing", [](TensorRecord&) {}},
      {"a name one character longer", [](TensorRecord& t) { t.name += "x"; }},
      {"a name of the same length", [](TensorRecord& t) { t.name.back() = t.name.back() == 'q' ? 'r' : 'q'; }},
      {"the kind", [](TensorRecord& t) { t.kind = t.kind == TensorKind::kGrad ? TensorKind::kParam : TensorKind::kGrad; }},
      {"the element count", [](TensorRecord& t) { t.numel += 1; }},
      {"the dtype", [](TensorRecord& t) { t.dtype = t.dtype == "float64" ? "float32" : "float64"; }},
      {"the dtype, one character longer", [](TensorRecord& t) { t.dtype += "x"; }},
      {"replicated", [](TensorRecord& t) { t.replicated = !t.replicated; }},
      {"a group", [&](TensorRecord& t) { t.group = dp; }},
  };
  int64_t step = 0;
  for (const auto& [what, change] : changes) {
    StepRecord before = Step(step++, 4);
    StepRecord after = before;
    after.step = step++;
    change(after.tensors[2]);
    ASSERT_TRUE(writer_->WriteStep(before).ok());
    const size_t lines_before = Lines(path_).size();
    ASSERT_TRUE(writer_->WriteStep(after).ok());
    std::vector<std::string> written = Lines(path_);
    written.erase(written.begin(), written.begin() + static_cast<std::ptrdiff_t>(lines_before));
    std::vector<std::string> types;
    for (const auto& l : written) types.push_back(nlohmann::json::parse(l)["type"]);
    std::vector<std::string> want = {"step"};
    if (what == "a group") want = {"replica_group", "tensors", "step"};
    else if (what != "nothing") want = {"tensors", "step"};
    EXPECT_EQ(types, want) << what;
  }
  // A step of the same tensors in other objects: equal names in new strings, an equal group in
  // another object.
  StepRecord a = Step(step++, 4);
  a.tensors[1].group = dp;
  StepRecord b = a;
  b.step = step++;
  b.tensors[1].group = std::make_shared<const ReplicaGroup>(*dp);
  for (TensorRecord& t : b.tensors) t.name = std::string(t.name.data(), t.name.size());
  ASSERT_TRUE(writer_->WriteStep(a).ok());
  const size_t lines_before = Lines(path_).size();
  ASSERT_TRUE(writer_->WriteStep(b).ok());
  EXPECT_EQ(Lines(path_).size(), lines_before + 1) << "only the step record";
  // Fewer tensors, and more.
  StepRecord fewer = Step(step++, 3);
  StepRecord more = Step(step++, 5);
  for (const StepRecord* s : {&fewer, &more}) {
    const size_t n = Lines(path_).size();
    ASSERT_TRUE(writer_->WriteStep(*s).ok());
    EXPECT_EQ(Lines(path_).size(), n + 2) << s->tensors.size() << " tensors: a tensors record and the step";
  }
  auto t = ReadTrace(path_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->steps.size(), static_cast<size_t>(step));
}


// A step record carrying the layout_id of the last one is written without comparing its layout
// (the capture vouches for it: TensorCapture); any other id, or none, is compared as before.
TEST_F(TraceWriterFileTest, TheLastRecordsLayoutIdSparesTheComparison) {
  auto types_of = [&](StepRecord s) {
    const size_t before = Lines(path_).size();
    EXPECT_TRUE(writer_->WriteStep(s).ok());
    std::vector<std::string> written = Lines(path_), types;
    for (size_t i = before; i < written.size(); ++i) types.push_back(nlohmann::json::parse(written[i])["type"]);
    return types;
  };
  const std::vector<std::string> step_only = {"step"}, with_tensors = {"tensors", "step"};
  auto with_id = [](StepRecord s, uint64_t id) {
    s.layout_id = id;
    return s;
  };
  EXPECT_EQ(types_of(with_id(Step(0, 4), 7)), with_tensors);
  EXPECT_EQ(types_of(with_id(Step(1, 4), 7)), step_only);
  EXPECT_EQ(types_of(with_id(Step(2, 4), 8)), step_only) << "another id: compared, and the same";
  EXPECT_EQ(types_of(with_id(Step(3, 5), 9)), with_tensors) << "another id: compared, and not the same";
  EXPECT_EQ(types_of(with_id(Step(4, 5), 0)), step_only) << "no id: compared";
  EXPECT_EQ(types_of(with_id(Step(5, 4), 0)), with_tensors) << "no id: compared";
  EXPECT_EQ(types_of(with_id(Step(6, 5), 9)), with_tensors)
      << "the id of a record before the last one: compared with the last one's layout";
  // The same id again is taken at its word: not compared (a capture that broke its promise would
  // show here as a step without the `tensors` record it needed).
  StepRecord broken = with_id(Step(7, 5), 9);
  broken.tensors[1].name += "x";
  EXPECT_EQ(types_of(broken), step_only);
}


TEST_F(TraceWriterFileTest, ReplicaGroupsAreDefinedOnceAndNamedByIdPerTensor) {
  ASSERT_NO_FATAL_FAILURE(OpenRank(1));
  auto dp = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, "mesh dim dp"});
  auto tp = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 1}, "mesh dim tp"});
  StepRecord a = Step(1, 4);
  a.tensors[0].group = dp;
  a.tensors[1].group = tp;
  a.tensors[2].group = std::make_shared<const ReplicaGroup>(*dp);  // equal, another object: same id
  StepRecord b = Step(2, 4);
  b.tensors[0].group = dp;
  b.tensors[1].group = tp;
  b.tensors[2].group = dp;
  StepRecord c = Step(3, 4);  // the groups change: tensor 3 joins tp, and a new tensors record
  c.tensors[0].group = dp;
  c.tensors[1].group = tp;
  c.tensors[2].group = dp;
  c.tensors[3].group = tp;
  for (const StepRecord* s : {&a, &b, &c}) ASSERT_TRUE(writer_->WriteStep(*s).ok());
  const std::vector<std::string> lines = Lines(path_);
  std::vector<std::string> types;
  for (const auto& l : lines) types.push_back(nlohmann::json::parse(l)["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"header", "replica_group", "replica_group", "tensors", "step", "step",
                                             "tensors", "step"}));
  EXPECT_EQ(lines[1], R"({"type":"replica_group","id":1,"ranks":[1,3],"label":"mesh dim dp"})");
  const nlohmann::json layout = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(layout["tensors"][0]["group"], 1);
  EXPECT_EQ(layout["tensors"][1]["group"], 2);
  EXPECT_EQ(layout["tensors"][2]["group"], 1);
  EXPECT_FALSE(layout["tensors"][3].contains("group")) << "no group: the whole world, written as before 2.2";
  // The step records themselves carry no group: the ids cost nothing per step.
  EXPECT_EQ(lines[4].find("group"), std::string::npos);

  auto t = ReadTrace(path_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 3u);
  const std::vector<TensorRecord>& got = t->steps[2].tensors;
  ASSERT_NE(got[0].group, nullptr);
  EXPECT_EQ(*got[0].group, *dp);
  EXPECT_EQ(*got[1].group, *tp);
  EXPECT_EQ(*got[3].group, *tp);
  EXPECT_EQ(t->steps[0].tensors[3].group, nullptr);
  EXPECT_EQ(DescribeReplicaGroup(*got[0].group), "{1, 3} on mesh dim dp");
}

TEST(TraceWriterTest, AStepWithReplicaGroupsCostsWhatOneWithoutDoes) {
  testing::TempDir temp("lockstep_trace_writer_group_cost_");
  auto size_of_steps = [&](bool grouped) {
    const auto path = temp.path() / (grouped ? "grouped.trace" : "plain.trace");
    auto w = TraceWriter::Open(path, Header(0));
    EXPECT_TRUE(w.ok());
    auto g = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim replicate"});
    for (int64_t k = 1; k <= 3; ++k) {
      StepRecord s = Step(k, 100);
      if (grouped) for (TensorRecord& t : s.tensors) t.group = g;
      EXPECT_TRUE((*w)->WriteStep(s).ok());
    }
    return Lines(path).back().size();  // the third step: a step record alone
  };
  EXPECT_EQ(size_of_steps(true), size_of_steps(false));
}


TEST_F(TraceWriterFileTest, ALossNotReportedIsLeftOutAndReadsBackAsNotReported) {
  StepRecord a = Step(1, 2);
  a.loss = std::numeric_limits<double>::quiet_NaN();
  a.loss_reported = false;
  StepRecord b = Step(2, 2);
  b.loss = std::numeric_limits<double>::quiet_NaN();  // a NaN the program did report
  ASSERT_TRUE(writer_->WriteStep(a).ok());
  ASSERT_TRUE(writer_->WriteStep(b).ok());
  const std::vector<std::string> lines = Lines(path_);
  EXPECT_FALSE(nlohmann::json::parse(lines[2]).contains("loss")) << lines[2];
  EXPECT_EQ(nlohmann::json::parse(lines[3])["loss"], "nan");
  auto t = ReadTrace(path_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 2u);
  EXPECT_FALSE(t->steps[0].loss_reported);
  EXPECT_TRUE(std::isnan(t->steps[0].loss));
  EXPECT_TRUE(t->steps[1].loss_reported);
  EXPECT_TRUE(std::isnan(t->steps[1].loss));
}

// A step record's text, member by member: the members every step has, written by the writer's
// own pointer stores, then the optional ones (JsonLine), then the count and the table, one line.
TEST_F(TraceWriterFileTest, AStepRecordsTextIsItsMembersInOrder) {
  StepRecord plain = Step(3, 1);
  plain.loss = 0.5501333475112915;
  plain.grad_norm = -std::numeric_limits<double>::infinity();
  plain.lr = 0.001;
  plain.wall_s = 12.345678;
  StepRecord full = plain;
  full.step = 4;
  full.loss_reported = false;
  full.forwards = 2;
  full.optimizer = {{"beta1", 0.9}};
  full.edited_after_update = std::vector<std::string>{"w\"0"};
  ASSERT_TRUE(writer_->WriteStep(plain).ok());
  ASSERT_TRUE(writer_->WriteStep(full).ok());
  const std::vector<std::string> lines = Lines(path_);
  ASSERT_EQ(lines.size(), 4u);  // the header, the tensors record, the two steps
  const std::string table = lines[2].substr(lines[2].find(",\"table\":"));
  EXPECT_EQ(lines[2], R"({"type":"step","step":3,"loss":0.5501333475112915,"grad_norm":"-inf","lr":0.001,)"
                      R"("wall_s":12.345678,"n":1)" + table);
  EXPECT_EQ(table.size(), std::string(R"(,"table":")").size() + kTensorTableEntryChars + 2);  // and "}
  EXPECT_EQ(lines[3].substr(0, lines[3].find(",\"table\":")),
            R"({"type":"step","step":4,"grad_norm":"-inf","lr":0.001,"wall_s":12.345678,"forwards":2,)"
            R"("optimizer":{"beta1":0.9},"edited_after_update":["w\"0"],"n":1)");
  auto t = ReadTrace(path_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 2u);
  EXPECT_EQ(t->steps[0].loss, 0.5501333475112915);
  EXPECT_EQ(t->steps[1].edited_after_update, full.edited_after_update);
}

// A rank killed by SIGKILL anywhere in the write path (inside a record's store, while the mapping
// grows, between records) keeps every step whose WriteStep had returned readable, and a record it
// was storing is recognisably incomplete (cut, or absent), never a wrong or unreadable step. A
// chunk of 4 KiB makes the mapping grow every few steps; 200 kills at random moments.
TEST(TraceWriterCrashTest, ARankKilledAnywhereInTheWritePathKeepsEveryCompletedStep) {
  testing::TempDir temp("lockstep_trace_writer_kill_");
  // What the child had completed, in memory it shares with the test.
  auto* completed = static_cast<std::atomic<int64_t>*>(
      ::mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(completed, MAP_FAILED);
  std::mt19937 random(20261128);
  int cut = 0, grown_kills = 0;
  for (int i = 0; i < 200; ++i) {
    const auto path = temp.path() / ("rank-" + std::to_string(i) + ".trace");
    completed->store(-1);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto w = TraceWriter::Open(path, Header(0), TraceOpen::kReplace, /*map_chunk_bytes=*/4096);
      if (!w.ok()) ::_exit(2);
      for (int64_t k = 0;; ++k) {
        if (!(*w)->WriteStep(Step(k, 24)).ok()) ::_exit(3);
        completed->store(k);
        if (!(*w)->WriteHeartbeat(k, 0.5).ok()) ::_exit(3);
      }
    }
    // A moment after the child began: anywhere from before its header to many records in.
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own: " << status;
    const int64_t done = completed->load();
    if (!std::filesystem::exists(path)) {
      EXPECT_EQ(done, -1);
      continue;
    }
    grown_kills += std::filesystem::file_size(path) > 4096 ? 1 : 0;
    Result<RankTrace> trace = ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << "kill " << i << ": " << trace.status().ToString();
    ASSERT_GE(static_cast<int64_t>(trace->steps.size()), done + 1) << "kill " << i << ": a completed step is missing";
    for (size_t k = 0; k < trace->steps.size(); ++k) {
      const StepRecord want = Step(static_cast<int64_t>(k), 24);
      ASSERT_EQ(trace->steps[k].step, static_cast<int64_t>(k)) << "kill " << i;
      ASSERT_EQ(trace->steps[k].tensors.size(), want.tensors.size()) << "kill " << i;
      for (size_t t = 0; t < want.tensors.size(); ++t) {
        ASSERT_EQ(trace->steps[k].tensors[t].digest, want.tensors[t].digest) << "kill " << i << " step " << k;
      }
    }
    // At most the one step in flight beyond the completed ones: written but not yet reported.
    EXPECT_LE(static_cast<int64_t>(trace->steps.size()), done + 2) << "kill " << i;
    EXPECT_FALSE(trace->footer.has_value());
    cut += trace->truncated ? 1 : 0;
    // The launcher cuts a killed rank's file to its data: those bytes exactly, no zero left.
    std::string data = FileBytes(path);
    data.resize(TraceDataLength(data));
    ASSERT_TRUE(CutReservedTail(path).ok());
    ASSERT_EQ(FileBytes(path), data) << "kill " << i;
  }
  ::munmap(completed, sizeof(std::atomic<int64_t>));
  // The kills did land inside records and after the mapping grew, not only between records.
  EXPECT_GT(cut, 0);
  EXPECT_GT(grown_kills, 0);
}

}  // namespace
}  // namespace lockstep
