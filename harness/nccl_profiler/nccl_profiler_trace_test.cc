// The plugin's records in a rank's trace, wired as lockstep-rank wires its trace writer
// (harness/rank/run_rank.cc): the discovery observer and a NativeCollectiveTraceWriter on the
// process log, the plugin dlopened as NCCL would, then the trace read back by lockstep's reader.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>

#include "harness/core/testing/temp_dir.h"
#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_trace_writer.h"
#include "harness/nccl_profiler/nccl_profiler_abi.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using namespace nccl_abi;  // NOLINT

TEST(NcclProfilerTraceTest, CommInitAndCollectivesBecomeTraceRecords) {
  void* lib = dlopen(LOCKSTEP_NCCL_PROFILER_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto* nccl = static_cast<ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  ASSERT_NE(nccl, nullptr);

  testing::TempDir temp("lockstep_nccl_profiler_trace_");
  const auto path = temp.path() / "rank-1.trace";
  ResetDiscoveryForTest();
  ResetNativeCollectivesForTest();
  {
    TraceHeader header;
    header.rank = 1;
    header.world_size = 2;
    header.device = "cuda:1";
    header.backend = "nccl";
    header.scenario_id = "nccl_profiler";
    auto writer = TraceWriter::Open(path, header);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    TraceWriter* w = writer.value().get();
    SetDiscoveryObserver([w](const DiscoveryRecord& r) { ASSERT_TRUE(w->WriteDiscovery(r).ok()); });
    double clock = 10.0;
    auto collectives = std::make_shared<NativeCollectiveTraceWriter>(w, [&] { return clock; }, [] { return 2; });
    SetNativeCollectiveObserver(collectives);

    void* ctx = nullptr;
    int mask = 0;
    nccl->init(&ctx, 0x5eed, &mask, nullptr, 1, 2, 1, nullptr);
    ncclProfilerEventDescr_v5_t coll{};
    coll.type = ncclProfileColl;
    coll.coll.func = "AllReduce";
    coll.coll.datatype = "ncclBfloat16";
    coll.coll.count = 4096;
    coll.coll.nChannels = 1;
    void* h = nullptr;
    nccl->startEvent(ctx, &h, &coll);
    nccl->stopEvent(h);
    ncclProfilerEventDescr_v5_t channel{};
    channel.type = ncclProfileKernelCh;
    channel.parentObj = h;
    void* c = nullptr;
    nccl->startEvent(ctx, &c, &channel);
    clock = 10.5;
    nccl->stopEvent(c);
    nccl->finalize(ctx);

    SetNativeCollectiveObserver(nullptr);
    SetDiscoveryObserver(nullptr);
    EXPECT_TRUE(collectives->status().ok());
  }
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace.value().discoveries.size(), 1u);
  EXPECT_EQ(trace.value().discoveries[0].name, "nccl.comm_init");
  EXPECT_EQ(trace.value().discoveries[0].comm, "nccl:0000000000005eed/2");
  ASSERT_EQ(trace.value().collectives.size(), 1u);
  const CollectiveRecord& r = trace.value().collectives[0];
  EXPECT_EQ(r.group, "nccl:0000000000005eed");
  EXPECT_EQ(r.seq, 0u);
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.dtype, "bfloat16");
  EXPECT_EQ(r.count, 4096);
  EXPECT_EQ(r.step, 2);
  EXPECT_DOUBLE_EQ(r.start_s, 10.0);
  ASSERT_TRUE(r.end_s.has_value());
  EXPECT_DOUBLE_EQ(*r.end_s, 10.5);
  ResetNativeCollectivesForTest();
  ResetDiscoveryForTest();
}

}  // namespace
}  // namespace lockstep
