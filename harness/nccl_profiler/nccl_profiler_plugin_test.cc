// The plugin as NCCL sees it: dlopened from <build>/lib, its exported ncclProfiler_v5 / _v4 tables
// driven with the descriptors NCCL 2.28 / 2.27 would pass (NVIDIA/nccl src/plugin/profiler.cc),
// and what reaches the process log read back through observers, as the trace owner reads it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/discovery/discovery_log.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/nccl_profiler/nccl_profiler_abi.h"

namespace lockstep {
namespace {

using namespace nccl_abi;  // NOLINT

struct Event {
  bool end = false;
  CollectiveRecord c;  // group and seq only for an end
};

class Collected : public NativeCollectiveObserver {
 public:
  void Begin(const CollectiveRecord& c) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({false, c});
  }
  void End(const std::string& group, uint64_t seq) override {
    std::lock_guard<std::mutex> lock(mu_);
    Event e;
    e.end = true;
    e.c.group = group;
    e.c.seq = seq;
    events_.push_back(e);
  }
  std::vector<Event> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t ends() {
    size_t n = 0;
    for (const Event& e : events()) n += e.end ? 1 : 0;
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<Event> events_;
};

void* OpenPlugin() {
  static void* lib = dlopen(LOCKSTEP_NCCL_PROFILER_PATH, RTLD_NOW | RTLD_LOCAL);
  return lib;
}

class NcclProfilerPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetDiscoveryForTest();
    ResetNativeCollectivesForTest();
    void* lib = OpenPlugin();
    ASSERT_NE(lib, nullptr) << dlerror();
    v5_ = static_cast<ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
    v4_ = static_cast<ncclProfiler_v4_t*>(dlsym(lib, "ncclProfiler_v4"));
    ASSERT_NE(v5_, nullptr);
    ASSERT_NE(v4_, nullptr);
    SetDiscoveryObserver([this](const DiscoveryRecord& r) { discoveries_.push_back(r); });
    SetNativeCollectiveObserver(collected_);
  }
  void TearDown() override {
    SetNativeCollectiveObserver(nullptr);
    ResetNativeCollectivesForTest();
    ResetDiscoveryForTest();
  }

  // NCCL 2.28's init (ncclProfilerPluginInit): the context, then the mask it reads back.
  void* Init(uint64_t hash, const char* name, int nranks, int* mask_out = nullptr) {
    void* ctx = nullptr;
    int mask = -1;
    EXPECT_EQ(v5_->init(&ctx, hash, &mask, name, 1, nranks, 0, nullptr), ncclSuccess);
    if (mask_out != nullptr) *mask_out = mask;
    return ctx;
  }

  void* Start(void* ctx, const ncclProfilerEventDescr_v5_t& d) {
    void* handle = reinterpret_cast<void*>(0xdead);  // NCCL's slot may hold anything before
    ncclProfilerEventDescr_v5_t copy = d;
    EXPECT_EQ(v5_->startEvent(ctx, &handle, &copy), ncclSuccess);
    return handle;
  }

  // A coll event's descriptor as ncclProfilerStartTaskEvents fills it.
  static ncclProfilerEventDescr_v5_t Coll(const char* func, const char* dtype, size_t count, int channels,
                                          int root = 0) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileColl;
    d.coll.seqNumber = 0;  // per type in NCCL; the plugin must not use it
    d.coll.func = func;
    d.coll.datatype = dtype;
    d.coll.count = count;
    d.coll.root = root;
    d.coll.nChannels = static_cast<uint8_t>(channels);
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    return d;
  }
  static ncclProfilerEventDescr_v5_t Channel(void* parent, int channel) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileKernelCh;
    d.parentObj = parent;
    d.kernelCh.channelId = static_cast<uint8_t>(channel);
    return d;
  }
  // A collective run to completion the way NCCL reports it: started and stopped on the host,
  // then each channel's kernel event started and stopped on the proxy thread.
  void Run(void* ctx, const ncclProfilerEventDescr_v5_t& coll) {
    void* h = Start(ctx, coll);
    ASSERT_NE(h, nullptr);
    v5_->stopEvent(h);
    std::vector<void*> channels;
    for (int c = 0; c < coll.coll.nChannels; ++c) channels.push_back(Start(ctx, Channel(h, c)));
    for (void* ch : channels) v5_->stopEvent(ch);
  }

  ncclProfiler_v5_t* v5_ = nullptr;
  ncclProfiler_v4_t* v4_ = nullptr;
  std::vector<DiscoveryRecord> discoveries_;
  std::shared_ptr<Collected> collected_ = std::make_shared<Collected>();
};

TEST_F(NcclProfilerPluginTest, ExportsTheVersionsNccl227And228AskFor) {
  EXPECT_STREQ(v5_->name, "lockstep");
  EXPECT_STREQ(v4_->name, "lockstep");
  EXPECT_EQ(dlsym(OpenPlugin(), "ncclProfiler_v6"), nullptr);  // 2.29+ load v5 (see the ABI header)
}

TEST_F(NcclProfilerPluginTest, EachInitIsOneCommInitNamingItsCommunicator) {
  int mask = 0;
  void* a = Init(0xab, nullptr, 2, &mask);
  void* b = Init(0x0123456789abcdefULL, "trainer", 4);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  // Collectives, and the kernel's channel events that say when one is done; nothing else.
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh);
  ASSERT_EQ(discoveries_.size(), 2u);
  EXPECT_EQ(discoveries_[0].name, "nccl.comm_init");
  EXPECT_EQ(discoveries_[0].comm, "nccl:00000000000000ab/2");
  EXPECT_EQ(discoveries_[0].phase, "startup");
  EXPECT_EQ(discoveries_[1].name, "nccl.comm_init");
  EXPECT_EQ(discoveries_[1].comm, "nccl:0123456789abcdef/4 (trainer)");
  v5_->finalize(a);
  v5_->finalize(b);
  EXPECT_EQ(discoveries_.size(), 2u);  // finalize is no discovery
}

TEST_F(NcclProfilerPluginTest, ACollectiveEndsWhenItsLastChannelFinishesNotWhenNcclEnqueuedIt) {
  void* ctx = Init(0xab, nullptr, 2);
  // What NCCL 2.28 starts around a collective besides it: API and group events (null or a
  // dummy handle is fine, they are parents only).
  ncclProfilerEventDescr_v5_t api{};
  api.type = ncclProfileCollApi;
  EXPECT_EQ(Start(ctx, api), nullptr);
  ncclProfilerEventDescr_v5_t group{};
  group.type = ncclProfileGroup;
  void* g = Start(ctx, group);

  void* h = Start(ctx, Coll("AllReduce", "ncclFloat32", 1024, 2));
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(collected_->events().size(), 1u);
  v5_->stopEvent(h);  // enqueued: hostStreamPlanTask stops the coll event right after upload
  v5_->stopEvent(g);
  EXPECT_EQ(collected_->ends(), 0u);
  void* ch0 = Start(ctx, Channel(h, 0));
  void* ch1 = Start(ctx, Channel(h, 1));
  ASSERT_NE(ch0, nullptr);
  ASSERT_NE(ch1, nullptr);
  v5_->recordEventState(ch0, ncclProfilerKernelChStop, nullptr);
  v5_->stopEvent(ch0);
  EXPECT_EQ(collected_->ends(), 0u);  // channel 1 still runs
  v5_->stopEvent(ch1);

  const std::vector<Event> events = collected_->events();
  ASSERT_EQ(events.size(), 2u);
  const CollectiveRecord& begin = events[0].c;
  EXPECT_FALSE(events[0].end);
  EXPECT_EQ(begin.group, "nccl:00000000000000ab");
  EXPECT_EQ(begin.seq, 0u);
  EXPECT_EQ(begin.op, "all_reduce");
  EXPECT_EQ(begin.dtype, "float32");
  EXPECT_EQ(begin.count, 1024);
  EXPECT_EQ(begin.root, -1);
  EXPECT_EQ(begin.reduce, "");  // no ABI version carries it
  EXPECT_TRUE(events[1].end);
  EXPECT_EQ(events[1].c.group, "nccl:00000000000000ab");
  EXPECT_EQ(events[1].c.seq, 0u);
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, ChannelsThatFinishBeforeTheEnqueueEndsStillWaitForIt) {
  void* ctx = Init(0xab, nullptr, 2);
  void* h = Start(ctx, Coll("AllGather", "ncclBfloat16", 8, 1));
  v5_->stopEvent(Start(ctx, Channel(h, 0)));
  EXPECT_EQ(collected_->ends(), 0u);
  v5_->stopEvent(h);
  EXPECT_EQ(collected_->ends(), 1u);
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, OpsDtypesCountsAndRootsInLockstepsSpellingNumberedInCallOrder) {
  void* ctx = Init(0xcd, nullptr, 4);
  Run(ctx, Coll("AllReduce", "ncclFloat32", 10, 2));
  Run(ctx, Coll("AllGather", "ncclBfloat16", 10, 1));
  Run(ctx, Coll("ReduceScatter", "ncclFloat16", 3, 1));  // count is what each rank receives
  Run(ctx, Coll("Broadcast", "ncclInt64", 5, 1, /*root=*/1));
  Run(ctx, Coll("Reduce", "ncclFloat64", 5, 1, /*root=*/2));
  Run(ctx, Coll("AllReduce", "ncclInt32", 7, 3));
  Run(ctx, Coll("AlltoAll", "ncclUint8", 2, 1));
  Run(ctx, Coll("SomethingNew", "ncclFloat8e4m3", 1, 1));

  struct Want {
    const char* op;
    const char* dtype;
    int64_t count;
    int root;
  };
  const Want want[] = {
      {"all_reduce", "float32", 10, -1},     {"all_gather", "bfloat16", 10, -1},
      {"reduce_scatter", "float16", 12, -1}, {"broadcast", "int64", 5, 1},
      {"reduce", "float64", 5, 2},           {"all_reduce", "int32", 7, -1},
      {"all_to_all", "uint8", 8, -1},        {"something_new", "float8_e4m3fn", 1, -1},
  };
  std::vector<CollectiveRecord> begins;
  for (const Event& e : collected_->events()) {
    if (!e.end) begins.push_back(e.c);
  }
  ASSERT_EQ(begins.size(), std::size(want));
  EXPECT_EQ(collected_->ends(), std::size(want));
  for (size_t i = 0; i < begins.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(begins[i].seq, i);  // one sequence over every type, unlike NCCL's seqNumber
    EXPECT_EQ(begins[i].op, want[i].op);
    EXPECT_EQ(begins[i].dtype, want[i].dtype);
    EXPECT_EQ(begins[i].count, want[i].count);
    EXPECT_EQ(begins[i].root, want[i].root);
    EXPECT_EQ(begins[i].group, "nccl:00000000000000cd");
  }
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, TwoCommunicatorsAreKeptApart) {
  void* world = Init(0x1, nullptr, 4);
  void* pair = Init(0x2, nullptr, 2);
  void* w0 = Start(world, Coll("AllReduce", "ncclFloat32", 4, 1));
  void* p0 = Start(pair, Coll("ReduceScatter", "ncclFloat32", 4, 1));
  void* w1 = Start(world, Coll("Broadcast", "ncclFloat32", 4, 1));
  for (void* h : {w0, p0, w1}) v5_->stopEvent(h);
  // The pair's collective finishes first, then the world's in reverse.
  v5_->stopEvent(Start(pair, Channel(p0, 0)));
  v5_->stopEvent(Start(world, Channel(w1, 0)));
  v5_->stopEvent(Start(world, Channel(w0, 0)));

  const std::vector<Event> events = collected_->events();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].c.group, "nccl:0000000000000001");
  EXPECT_EQ(events[0].c.seq, 0u);
  EXPECT_EQ(events[1].c.group, "nccl:0000000000000002");
  EXPECT_EQ(events[1].c.seq, 0u);
  EXPECT_EQ(events[1].c.count, 8);  // the pair's nranks, not the world's
  EXPECT_EQ(events[2].c.group, "nccl:0000000000000001");
  EXPECT_EQ(events[2].c.seq, 1u);
  EXPECT_TRUE(events[3].end);
  EXPECT_EQ(events[3].c.group, "nccl:0000000000000002");
  EXPECT_EQ(events[3].c.seq, 0u);
  EXPECT_EQ(events[4].c.group, "nccl:0000000000000001");
  EXPECT_EQ(events[4].c.seq, 1u);
  EXPECT_EQ(events[5].c.seq, 0u);
  v5_->finalize(world);
  v5_->finalize(pair);
}

TEST_F(NcclProfilerPluginTest, Nccl227ReachesTheV4TableWithItsOwnLayoutAndArgumentOrder) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v4_->init(&ctx, &mask, "tp", 0xef, 1, 2, 1, nullptr), ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh);
  ASSERT_EQ(discoveries_.size(), 1u);
  EXPECT_EQ(discoveries_[0].comm, "nccl:00000000000000ef/2 (tp)");

  // NCCL 2.27 starts a plan's coll events only when the group event got a handle.
  ncclProfilerEventDescr_v4_t group{};
  group.type = ncclProfileGroup;
  void* g = nullptr;
  v4_->startEvent(ctx, &g, &group);
  EXPECT_NE(g, nullptr);

  ncclProfilerEventDescr_v4_t coll{};
  coll.type = ncclProfileColl;
  coll.parentObj = g;
  coll.coll.func = "ReduceScatter";
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.count = 6;
  coll.coll.nChannels = 1;
  void* h = nullptr;
  v4_->startEvent(ctx, &h, &coll);
  ASSERT_NE(h, nullptr);
  v4_->stopEvent(h);
  v4_->stopEvent(g);
  ncclProfilerEventDescr_v4_t ch{};
  ch.type = ncclProfileKernelCh;
  ch.parentObj = h;
  void* c = nullptr;
  v4_->startEvent(ctx, &c, &ch);
  v4_->stopEvent(c);

  const std::vector<Event> events = collected_->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].c.op, "reduce_scatter");
  EXPECT_EQ(events[0].c.dtype, "bfloat16");
  EXPECT_EQ(events[0].c.count, 12);
  EXPECT_EQ(events[0].c.group, "nccl:00000000000000ef");
  EXPECT_TRUE(events[1].end);
  v4_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, ACollectiveWithoutChannelsEndsWhenEnqueued) {
  void* ctx = Init(0xab, nullptr, 2);
  v5_->stopEvent(Start(ctx, Coll("AllReduce", "ncclFloat32", 1, 0)));
  EXPECT_EQ(collected_->ends(), 1u);
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, MoreChannelEventsThanAnnouncedEndItOnce) {
  void* ctx = Init(0xab, nullptr, 2);
  void* h = Start(ctx, Coll("AllReduce", "ncclFloat32", 1, 1));
  void* ch0 = Start(ctx, Channel(h, 0));
  void* extra = Start(ctx, Channel(h, 1));
  EXPECT_NE(ch0, nullptr);
  EXPECT_EQ(extra, nullptr);  // not followed: it would end the collective twice
  v5_->stopEvent(ch0);
  v5_->stopEvent(h);
  EXPECT_EQ(collected_->ends(), 1u);
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, ChannelsStoppedOnManyThreadsEndTheCollectiveOnce) {
  void* ctx = Init(0xab, nullptr, 2);
  constexpr int kChannels = 32;
  for (int round = 0; round < 50; ++round) {
    void* h = Start(ctx, Coll("AllReduce", "ncclFloat32", 1, kChannels));
    std::vector<void*> channels;
    for (int c = 0; c < kChannels; ++c) channels.push_back(Start(ctx, Channel(h, c)));
    std::vector<std::thread> threads;
    for (void* ch : channels) threads.emplace_back([this, ch] { v5_->stopEvent(ch); });
    v5_->stopEvent(h);
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(collected_->ends(), 50u);
  v5_->finalize(ctx);
}

TEST_F(NcclProfilerPluginTest, ACollectiveInFlightOutlivesItsCommunicatorsFinalize) {
  void* ctx = Init(0xab, nullptr, 2);
  void* h = Start(ctx, Coll("AllReduce", "ncclFloat32", 1, 1));
  void* ch = Start(ctx, Channel(h, 0));
  v5_->finalize(ctx);  // ncclCommAbort with a collective in flight
  v5_->stopEvent(h);
  v5_->stopEvent(ch);
  const std::vector<Event> events = collected_->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].c.group, "nccl:00000000000000ab");
}

TEST_F(NcclProfilerPluginTest, BadOrUnknownDescriptorsAreIgnoredAndSaidOnce) {
  void* ctx = Init(0xab, nullptr, 2);
  testing::internal::CaptureStderr();
  void* handle = reinterpret_cast<void*>(0xdead);
  EXPECT_EQ(v5_->startEvent(ctx, &handle, nullptr), ncclSuccess);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(v5_->startEvent(ctx, nullptr, nullptr), ncclSuccess);

  ncclProfilerEventDescr_v5_t unknown{};
  unknown.type = 1u << 20;
  EXPECT_EQ(Start(ctx, unknown), nullptr);
  ncclProfilerEventDescr_v5_t p2p{};
  p2p.type = ncclProfileP2p;
  p2p.p2p.func = "Send";
  EXPECT_EQ(Start(ctx, p2p), nullptr);
  EXPECT_EQ(Start(ctx, Channel(nullptr, 0)), nullptr);  // a p2p's channel: its parent is null

  ncclProfilerEventDescr_v5_t group{};
  group.type = ncclProfileGroup;
  EXPECT_EQ(Start(ctx, Channel(Start(ctx, group), 0)), nullptr);  // a channel under no collective
  EXPECT_EQ(Start(ctx, Coll(nullptr, "ncclFloat32", 1, 1)), nullptr);
  EXPECT_EQ(Start(ctx, Coll("AllReduce", nullptr, 1, 1)), nullptr);
  EXPECT_EQ(Start(nullptr, Coll("AllReduce", "ncclFloat32", 1, 1)), nullptr);  // init had failed

  EXPECT_EQ(v5_->stopEvent(nullptr), ncclSuccess);
  EXPECT_EQ(v5_->recordEventState(nullptr, ncclProfilerKernelChStop, nullptr), ncclSuccess);
  EXPECT_EQ(v5_->finalize(nullptr), ncclSuccess);
  EXPECT_EQ(v5_->init(nullptr, 0xab, nullptr, nullptr, 1, 2, 0, nullptr), ncclSuccess);
  const std::string said = testing::internal::GetCapturedStderr();

  EXPECT_TRUE(collected_->events().empty());
  EXPECT_EQ(discoveries_.size(), 1u);  // the first Init only
  EXPECT_EQ(said, "lockstep nccl profiler: a collective event without a function or datatype name; ignored\n");
  // Still working after all that.
  Run(ctx, Coll("AllReduce", "ncclFloat32", 1, 1));
  EXPECT_EQ(collected_->ends(), 1u);
  v5_->finalize(ctx);
}

}  // namespace
}  // namespace lockstep
