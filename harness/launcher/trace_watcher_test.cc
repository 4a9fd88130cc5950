#include "harness/launcher/trace_watcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <utility>

#include "harness/trace/trace_writer.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TraceWatcherTest : public ::testing::Test {
 protected:
  // A new file starts with a header, as every trace does.
  void Append(int rank, const std::string& text) {
    const auto path = dir_ / ("rank-" + std::to_string(rank) + ".trace");
    const bool fresh = !std::filesystem::exists(path);
    std::ofstream out(path, std::ios::app | std::ios::binary);
    if (fresh) out << Header(rank);
    out << text;
  }
  static std::string Header(int rank, const std::string& extra = "") {
    return R"({"type":"header","schema":"lockstep.trace/2.0","rank":)" + std::to_string(rank) + extra + "}\n";
  }
  static std::string Begin(uint64_t seq, int64_t step, const std::string& group = "world") {
    return R"({"type":"collective_begin","group":")" + group + R"(","seq":)" + std::to_string(seq) +
           R"(,"op":"all_reduce","dtype":"float32","count":4,"step":)" + std::to_string(step) + "}\n";
  }
  static std::string End(uint64_t seq, const std::string& group = "world") {
    return R"({"type":"collective_end","group":")" + group + R"(","seq":)" + std::to_string(seq) + R"(,"end_s":1.5})" + "\n";
  }
  static std::string Step(int64_t step) {
    return R"({"type":"step","step":)" + std::to_string(step) +
           R"(,"loss":0.5,"tensors":[{"name":"w","digest":"0123456789abcdef0123456789abcdef","numel":3,"dtype":"float32"}]})" +
           "\n";
  }

  testing::TempDir temp_{"lockstep-watch-"};
  const std::filesystem::path dir_ = temp_.path();
};

// The watchdog reads through the trace's one parser without decoding tensors: a step's tensor
// list (or table) costs it nothing, and is not even checked.
TEST_F(TraceWatcherTest, SkipsTheTensorsOfAStep) {
  std::string line = R"({"type":"step","step":9,"tensors":[)";
  for (int i = 0; i < 2000; ++i) line += std::string(i ? "," : "") + R"({"name":"t)" + std::to_string(i) + R"(","digest":"00"})";
  line += "]}\n";
  Append(0, line + R"({"type":"step","step":10,"n":7,"table":"not checked"})" "\n");
  TraceWatcher w(dir_, 1);
  EXPECT_TRUE(w.Poll());
  EXPECT_EQ(w.rank(0).last_step, 10);
  EXPECT_EQ(w.rank(0).unreadable_records, 0);
}

TEST_F(TraceWatcherTest, ARecordTheParserRefusesIsUnreadable) {
  Append(0, R"({"type":"collective_begin","group":"world","seq":-1})" "\n" R"({"type":"step","st)" "\n[1,2]\n" +
                Step(3));
  TraceWatcher w(dir_, 1);
  EXPECT_TRUE(w.Poll());
  EXPECT_EQ(w.rank(0).unreadable_records, 3);
  EXPECT_EQ(w.rank(0).last_step, 3);
  EXPECT_FALSE(w.rank(0).last_begun);
}

TEST_F(TraceWatcherTest, AFileThatIsNotATraceIsAllUnreadable) {
  const auto path = dir_ / "rank-0.trace";
  std::ofstream(path, std::ios::binary) << Step(1) << Step(2);
  TraceWatcher w(dir_, 1);
  EXPECT_TRUE(w.Poll());  // the rank wrote something
  EXPECT_EQ(w.rank(0).unreadable_records, 2);
  EXPECT_FALSE(w.rank(0).last_step);
}

TEST_F(TraceWatcherTest, FollowsStepsAndCollectives) {
  std::vector<std::pair<int, int64_t>> calls;
  TraceWatcher w(dir_, 2, [&](int r, int64_t s) { calls.emplace_back(r, s); });
  EXPECT_FALSE(w.Poll());
  EXPECT_FALSE(w.rank(0).file_seen);

  std::ofstream(dir_ / "rank-0.trace", std::ios::binary) << Header(0, R"(,"pid":10)");
  Append(0, Step(0) + Begin(0, 1) + End(0) + Step(1) + Begin(1, 2));
  EXPECT_TRUE(w.Poll());
  const RankProgress& p = w.rank(0);
  EXPECT_TRUE(p.file_seen);
  EXPECT_EQ(p.last_step, 1);
  EXPECT_EQ(p.pid, 10);
  ASSERT_TRUE(p.last_begun && p.last_completed);
  EXPECT_EQ(p.last_begun->seq, 1u);
  EXPECT_EQ(p.last_begun->step, 2);
  EXPECT_EQ(p.last_completed->seq, 0u);
  EXPECT_EQ(p.last_completed->op, "all_reduce");  // taken from the begin record it closes
  EXPECT_EQ(p.last_completed->step, 1);
  EXPECT_FALSE(p.footer);
  EXPECT_THAT(calls, ElementsAre(std::make_pair(0, int64_t{0}), std::make_pair(0, int64_t{1})));

  EXPECT_FALSE(w.Poll());  // nothing new
  Append(0, End(1) + Step(2) + R"({"type":"footer","status":"ok"})" "\n");
  EXPECT_TRUE(w.Poll());
  EXPECT_EQ(w.rank(0).last_step, 2);
  EXPECT_TRUE(w.rank(0).footer);
  EXPECT_EQ(w.rank(0).footer_status, "ok");
  EXPECT_THAT(w.Describe(0), HasSubstr("last step 2"));
  EXPECT_THAT(w.Describe(0), HasSubstr("finished"));
  EXPECT_EQ(w.Describe(1), "rank 1: no trace");
}

// The contract with the real trace writer: what it writes is what the watchdog reads.
TEST_F(TraceWatcherTest, ReadsWhatTheTraceWriterWrites) {
  TraceHeader header;
  header.rank = 1;
  header.world_size = 2;
  header.pid = 4242;
  header.host = "node7";
  auto writer = TraceWriter::Open(dir_ / TraceFileName(1), header);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  TraceWriter& w = **writer;

  std::vector<int64_t> seen;
  TraceWatcher watcher(dir_, 2, [&](int r, int64_t s) {
    EXPECT_EQ(r, 1);
    seen.push_back(s);
  });
  StepRecord step0;
  ASSERT_TRUE(w.WriteStep(step0).ok());
  CollectiveRecord c;
  c.group = "world";
  c.seq = 0;
  c.op = "all_reduce";
  c.dtype = "float32";
  c.count = 128;
  c.step = 1;
  ASSERT_TRUE(w.WriteCollectiveBegin(c).ok());
  ASSERT_TRUE(w.WriteCollectiveEnd("world", 0, 0.5).ok());
  StepRecord step1;
  step1.step = 1;
  step1.loss = 0.25;
  TensorRecord t;
  t.name = "fc.weight";
  step1.tensors.push_back(t);
  ASSERT_TRUE(w.WriteStep(step1).ok());
  c.seq = 1;
  c.step = 2;
  ASSERT_TRUE(w.WriteCollectiveBegin(c).ok());
  EXPECT_TRUE(watcher.Poll());

  const RankProgress& p = watcher.rank(1);
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.host, "node7");
  EXPECT_EQ(p.last_step, 1);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(p.last_begun && p.last_completed);
  EXPECT_EQ(p.last_begun->seq, 1u);
  EXPECT_EQ(p.last_begun->step, 2);
  EXPECT_EQ(p.last_completed->seq, 0u);
  EXPECT_EQ(p.last_completed->op, "all_reduce");
  EXPECT_TRUE(p.in_collective);
  EXPECT_EQ(p.unreadable_records, 0);

  ASSERT_TRUE(w.WriteHeartbeat(2, 3.0).ok());
  EXPECT_FALSE(watcher.Poll());  // a heartbeat is not progress
  ASSERT_TRUE(w.WriteDiscovery(DiscoveryRecord{}).ok());
  ASSERT_TRUE(w.WriteLog("hello").ok());
  TraceFooter footer;
  footer.steps_completed = 1;
  footer.status = "ok";
  ASSERT_TRUE(w.WriteFooter(footer).ok());
  EXPECT_TRUE(watcher.Poll());
  EXPECT_TRUE(watcher.rank(1).footer);
  EXPECT_EQ(watcher.rank(1).footer_status, "ok");
  // header, 2 steps and the `tensors` record naming step 1's tensor, 3 collective records,
  // heartbeat, discovery, log, footer
  EXPECT_EQ(watcher.rank(1).records, 11);
}

TEST_F(TraceWatcherTest, WaitsForTheRestOfACutRecord) {
  Append(0, "");
  TraceWatcher w(dir_, 1);
  EXPECT_TRUE(w.Poll());  // the header
  const std::string rec = Step(4);
  Append(0, rec.substr(0, 10));
  EXPECT_FALSE(w.Poll());  // half a record is not progress yet
  EXPECT_FALSE(w.rank(0).last_step.has_value());
  Append(0, rec.substr(10));
  EXPECT_TRUE(w.Poll());
  EXPECT_EQ(w.rank(0).last_step, 4);
  EXPECT_EQ(w.rank(0).unreadable_records, 0);
}

TEST_F(TraceWatcherTest, HeartbeatsAreNotProgress) {
  Append(0, "");
  TraceWatcher w(dir_, 1);
  EXPECT_TRUE(w.Poll());  // the header
  Append(0, R"({"type":"heartbeat","step":1,"wall_s":3.0})" "\n");
  EXPECT_FALSE(w.Poll());
  EXPECT_EQ(w.rank(0).records, 2);
  Append(0, "not json at all\n");
  EXPECT_TRUE(w.Poll());  // unreadable, but the rank wrote something
  EXPECT_EQ(w.rank(0).unreadable_records, 1);
}

TEST_F(TraceWatcherTest, StartsOverWhenTheFileIsReplaced) {
  TraceWatcher w(dir_, 1);
  Append(0, Step(0) + Step(1) + Step(2) + Step(3));
  w.Poll();
  EXPECT_EQ(w.rank(0).last_step, 3);
  std::filesystem::remove(dir_ / "rank-0.trace");
  Append(0, Step(0));
  w.Poll();
  EXPECT_EQ(w.rank(0).last_step, 0);
}

// Ranks 0, 2 and 3 wait in world seq 1; rank 1 never began it.
TEST_F(TraceWatcherTest, StalledRankIsTheOneBehindInItsGroup) {
  for (int r = 0; r < 4; ++r) {
    Append(r, Step(0) + Begin(0, 1) + End(0) + Step(1));
    if (r != 1) Append(r, Begin(1, 2));
  }
  TraceWatcher w(dir_, 4);
  w.Poll();
  EXPECT_THAT(w.StalledRanks(), ElementsAre(1));
  EXPECT_THAT(w.Describe(0), HasSubstr("last collective begun: world seq 1 all_reduce (step 2)"));
  EXPECT_THAT(w.Describe(1), HasSubstr("last collective begun: world seq 0 all_reduce (step 1)"));
}

TEST_F(TraceWatcherTest, StalledInASubGroupOnly) {
  // Two slices; rank 3 never reaches slice1's seq 2 while rank 2 waits in it.
  for (int r = 0; r < 4; ++r) {
    const std::string slice = r < 2 ? "slice0" : "slice1";
    Append(r, Begin(0, 1) + End(0) + Begin(0, 1, slice) + End(0, slice) + Begin(1, 1, slice) + End(1, slice));
  }
  Append(2, Begin(2, 2, "slice1"));
  TraceWatcher w(dir_, 4);
  w.Poll();
  EXPECT_THAT(w.StalledRanks(), ElementsAre(3));
}

// Hierarchical sync: rank 3 never reaches slice1 seq 1, where rank 2 waits; ranks 0 and 1 wait
// in the cross-slice collectives for 2 and 3. Rank 2 is behind in cross0 only because it waits
// for rank 3: the stalled rank is 3 alone.
TEST_F(TraceWatcherTest, RankWaitingElsewhereIsNotTheCause) {
  for (int r = 0; r < 4; ++r) {  // step 1 went through on every rank
    const std::string slice = r < 2 ? "slice0" : "slice1";
    const std::string cross = r % 2 == 0 ? "cross0" : "cross1";
    Append(r, Begin(0, 1, slice) + End(0, slice) + Begin(0, 1, cross) + End(0, cross));
  }
  Append(0, Begin(1, 1, "slice0") + End(1, "slice0") + Begin(0, 1, "cross0"));
  Append(1, Begin(1, 1, "slice0") + End(1, "slice0") + Begin(0, 1, "cross1"));
  Append(2, Begin(1, 1, "slice1"));
  TraceWatcher w(dir_, 4);
  w.Poll();
  EXPECT_TRUE(w.rank(2).in_collective);
  EXPECT_FALSE(w.rank(3).in_collective);
  EXPECT_THAT(w.StalledRanks(), ElementsAre(3));
}

TEST_F(TraceWatcherTest, SingleRecordCollectives) {
  Append(0, R"({"type":"collective_begin","group":"world","seq":0,"op":"barrier","step":1,"start_s":1,"end_s":2})" "\n");
  TraceWatcher w(dir_, 1);
  w.Poll();
  ASSERT_TRUE(w.rank(0).last_begun && w.rank(0).last_completed);
  EXPECT_EQ(w.rank(0).last_begun->op, "barrier");
  EXPECT_FALSE(w.rank(0).in_collective);
}

TEST_F(TraceWatcherTest, RankWithNoCollectiveAtAllIsBehind) {
  Append(0, Step(0) + Begin(0, 1));
  Append(1, Step(0));
  TraceWatcher w(dir_, 3);  // rank 2 wrote nothing
  w.Poll();
  EXPECT_THAT(w.StalledRanks(), ElementsAre(1, 2));
}

TEST_F(TraceWatcherTest, FallsBackToTheLowestStep) {
  Append(0, Step(0) + Step(1) + Step(2));
  Append(1, Step(0) + Step(1));
  Append(2, Step(0) + Step(1) + Step(2));
  TraceWatcher w(dir_, 3);
  w.Poll();
  EXPECT_THAT(w.StalledRanks(), ElementsAre(1));
}

TEST_F(TraceWatcherTest, NobodyBehind) {
  for (int r = 0; r < 2; ++r) Append(r, Step(0) + Begin(0, 1));
  TraceWatcher w(dir_, 2);
  w.Poll();
  EXPECT_TRUE(w.StalledRanks().empty());
}

}  // namespace
}  // namespace lockstep
