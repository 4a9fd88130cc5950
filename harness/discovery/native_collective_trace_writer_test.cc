#include "harness/discovery/native_collective_trace_writer.h"

#include <gtest/gtest.h>

#include <memory>

#include "harness/core/testing/temp_dir.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

TraceHeader Header() {
  TraceHeader h;
  h.rank = 0;
  h.world_size = 2;
  h.device = "cuda:0";
  h.backend = "nccl";
  h.scenario_id = "native_collectives";
  return h;
}

TEST(NativeCollectiveTraceWriterTest, EventsBecomeCollectiveRecordsWithTheOwnersClockAndStep) {
  testing::TempDir temp("lockstep_native_collective_trace_");
  const auto path = temp.path() / "rank-0.trace";
  ResetNativeCollectivesForTest();
  {
    auto writer = TraceWriter::Open(path, Header());
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    double clock = 1.5;
    int64_t step = 3;
    auto observer = std::make_shared<NativeCollectiveTraceWriter>(
        writer.value().get(), [&] { return clock; }, [&] { return step; });
    SetNativeCollectiveObserver(observer);
    CollectiveRecord c;
    c.group = "nccl:00000000000000ab";
    c.seq = 7;
    c.op = "all_reduce";
    c.dtype = "bfloat16";
    c.count = 1024;
    c.reduce = "sum";
    c.step = 99;        // the owner's step wins
    c.start_s = 42.0;   // and its clock
    RecordNativeCollectiveBegin(c);
    clock = 2.25;
    RecordNativeCollectiveEnd("nccl:00000000000000ab", 7);
    SetNativeCollectiveObserver(nullptr);
    EXPECT_TRUE(observer->status().ok());
  }
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace.value().collectives.size(), 1u);
  const CollectiveRecord& r = trace.value().collectives[0];
  EXPECT_EQ(r.group, "nccl:00000000000000ab");
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.dtype, "bfloat16");
  EXPECT_EQ(r.count, 1024);
  EXPECT_EQ(r.reduce, "sum");
  EXPECT_EQ(r.step, 3);
  EXPECT_DOUBLE_EQ(r.start_s, 1.5);
  ASSERT_TRUE(r.end_s.has_value());
  EXPECT_DOUBLE_EQ(*r.end_s, 2.25);
  ResetNativeCollectivesForTest();
}

}  // namespace
}  // namespace lockstep
