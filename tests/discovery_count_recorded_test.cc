// discovery_count on what the recorders themselves write: each rank's discovery records made by
// the real CUPTI recorder (fed the callback sequences CUPTI delivered on the first GPU run,
// 2026-11-26) and the real NCCL profiler recorder (a communicator's init as NCCL reports it),
// then judged. The same runs as discovery_count_checker_test's canned traces, but end to end
// through the recorders' logic, so a recorder that names or phases a call differently shows here.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkers/discovery_count_checker.h"
#include "checkers/testing/canned_run.h"
#include "harness/discovery/discovery_log.h"
#include "harness/nccl_profiler/nccl_profiler_recorder.h"
#include "harness/native_recorders/cupti_discovery_recorder.h"

namespace lockstep {
namespace {

using testing::CannedRun;

constexpr uint64_t kWorldHash = 0x5a1c0de2f00d0001;

// One rank's process: the recorders and the discovery log, from a clean start.
class RecordedRank {
 public:
  RecordedRank() { ResetDiscoveryForTest(); }
  ~RecordedRank() { ResetDiscoveryForTest(); }

  // One call as CUPTI delivers it: ENTER, what happens inside, EXIT with CUDA_SUCCESS.
  void Cuda(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const std::function<void()>& inside = nullptr) {
    CUpti_CallbackData data{};
    data.callbackSite = CUPTI_API_ENTER;
    CuptiDiscoveryCallback(&recorder_, domain, cbid, &data);
    if (inside) inside();
    int result = 0;  // CUDA_SUCCESS, cudaSuccess
    data.callbackSite = CUPTI_API_EXIT;
    data.functionReturnValue = &result;
    CuptiDiscoveryCallback(&recorder_, domain, cbid, &data);
  }
  void CuInit() { Cuda(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuInit); }
  void CuDeviceGetCount() { Cuda(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount); }
  void CudaGetDeviceCount() {
    Cuda(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, [this] { CuDeviceGetCount(); });
  }
  // A CUDA runtime's lazy initialization: the driver's cuInit and device count, before the
  // runtime issues any callback of its own.
  void RuntimeInitializes() {
    CuInit();
    CuDeviceGetCount();
  }
  // NCCL's profiler plugin told of a new communicator.
  void NcclCommInit(uint64_t hash, int nranks) {
    nccl_profiler::CloseCommunicator(nccl_profiler::OpenCommunicator(hash, "", nranks));
  }

  // Start-up of lockstep-rank on CUDA: the runtime starts under the topology's device count.
  void StartUp() {
    RuntimeInitializes();
    CudaGetDeviceCount();
    RecordDiscovery("lockstep.topology");
  }
  // Step 1: cuBLAS and cuBLASLt start their own static runtimes at the first matmul; the world's
  // communicator is made at its first collective.
  void FirstStep(int nranks) {
    SetDiscoveryContext("step", 1);
    RuntimeInitializes();  // cuBLAS
    RuntimeInitializes();  // cuBLASLt
    NcclCommInit(kWorldHash, nranks);
  }
  // double_discovery: the topology routine again, inside the attention forward.
  void DoubleDiscovery(int64_t step) {
    SetDiscoveryContext("step", step);
    ScopedDiscoveryPhase in_forward("attention_forward");
    CudaGetDeviceCount();
    RecordDiscovery("lockstep.topology");
  }

  std::vector<DiscoveryRecord> Records() const { return DiscoveryCalls(); }

 private:
  CuptiDiscoveryRecorder recorder_{[] { return std::string("caller"); }};
};

// A run of `ranks` ranks, each recorded by `script(rank, recorded)`.
CannedRun Recorded(int ranks, const std::function<void(int, RecordedRank&)>& script) {
  CannedRun run(ranks, 5);
  for (int r = 0; r < ranks; ++r) {
    RecordedRank rank;
    script(r, rank);
    run.traces[r].discoveries = rank.Records();
  }
  return run;
}

TEST(DiscoveryCountRecordedTest, ACleanCudaRunAsTheRecordersWriteItIsQuiet) {
  CannedRun run = Recorded(4, [](int, RecordedRank& rank) {
    rank.StartUp();
    rank.FirstStep(4);
  });
  for (const RankTrace& t : run.traces) {
    std::vector<std::string> calls;
    for (const DiscoveryRecord& d : t.discoveries) calls.push_back(d.name + "@" + std::to_string(d.step));
    ASSERT_EQ(calls, (std::vector<std::string>{"cuda.init@0", "cuda.device_count@0", "cuda.device_count@0",
                                               "lockstep.topology@0", "cuda.device_count@1", "cuda.device_count@1",
                                               "nccl.comm_init@1"}));
  }
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

TEST(DiscoveryCountRecordedTest, DoubleDiscoveryOnCudaFiresAtItsStepAndRank) {
  for (int64_t onset : {1, 3}) {  // in the first step's forward (the flash-attention case), and later
    CannedRun run = Recorded(4, [onset](int r, RecordedRank& rank) {
      rank.StartUp();
      if (r == 1 && onset == 1) rank.DoubleDiscovery(1);
      rank.FirstStep(4);
      if (r == 1 && onset == 3) rank.DoubleDiscovery(3);
    });
    auto f = DiscoveryCountChecker().Check(run.Context());
    ASSERT_EQ(f.size(), 1u) << "onset " << onset;
    EXPECT_EQ(f[0].step, onset);
    EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
    EXPECT_EQ(f[0].details.at("calls"), "lockstep.topology");
  }
}

TEST(DiscoveryCountRecordedTest, ANewGroupInAForwardAtStep3Fires) {
  CannedRun run = Recorded(4, [](int r, RecordedRank& rank) {
    rank.StartUp();
    rank.FirstStep(4);
    SetDiscoveryContext("step", 3);
    RecordDiscovery("torch.new_group", "model.py:41 in forward < train.py:80 in main");
    if (r < 2) rank.NcclCommInit(0x77e0aa0100000002, 2);  // its communicator, at once
  });
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f[0].details.at("calls"), "torch.new_group");
}

TEST(DiscoveryCountRecordedTest, ASecondCommunicatorForTheSameRanksFires) {
  CannedRun run = Recorded(4, [](int, RecordedRank& rank) {
    rank.StartUp();
    rank.FirstStep(4);
    SetDiscoveryContext("step", 3);
    rank.NcclCommInit(0x0badc0de00000003, 4);
  });
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(f[0].message.find("a second communicator for ranks [0, 1, 2, 3] (nccl:0badc0de00000003/4; "
                              "nccl:5a1c0de2f00d0001/4 was first)"),
            std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace lockstep
