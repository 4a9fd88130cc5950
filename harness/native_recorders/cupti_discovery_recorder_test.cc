// The CUPTI recorder's logic, driven through its CUpti_CallbackFunc with the callback sequences
// CUPTI delivers (API_ENTER, then API_EXIT with the return value), read back through an observer
// on the process's discovery log. No driver, no libcupti: only CUPTI's headers.
#include "harness/native_recorders/cupti_discovery_recorder.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/discovery/discovery_calls.h"
#include "harness/discovery/discovery_log.h"

namespace lockstep {
namespace {

constexpr CUpti_CallbackDomain kDriver = CUPTI_CB_DOMAIN_DRIVER_API;
constexpr CUpti_CallbackDomain kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackId kCuInit = CUPTI_DRIVER_TRACE_CBID_cuInit;
constexpr CUpti_CallbackId kCuDeviceGetCount = CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount;
constexpr CUpti_CallbackId kCudaGetDeviceCount = CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020;

class CuptiDiscoveryRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetDiscoveryForTest();
    SetDiscoveryObserver([this](const DiscoveryRecord& r) { seen_.push_back(r.name + " @" + r.where); });
  }
  void TearDown() override { ResetDiscoveryForTest(); }

  // One callback as CUPTI delivers it; `result` is what the API returned (read at EXIT only).
  void Deliver(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, int result = 0) {
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.functionName = "synthetic";
    // Driver calls return a CUresult, runtime calls a cudaError_t: both int-sized enums here.
    driver_result_ = static_cast<CUresult>(result);
    runtime_result_ = result;
    if (site == CUPTI_API_EXIT) {
      data.functionReturnValue = domain == kDriver ? static_cast<void*>(&driver_result_) : &runtime_result_;
    }
    CuptiDiscoveryCallback(&recorder_, domain, cbid, &data);
  }
  void Call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, int result = 0) {
    Deliver(domain, cbid, CUPTI_API_ENTER);
    Deliver(domain, cbid, CUPTI_API_EXIT, result);
  }

  int calls_ = 0;
  CuptiDiscoveryRecorder recorder_{[this] { return "caller" + std::to_string(++calls_); }};
  std::vector<std::string> seen_;
  CUresult driver_result_ = CUDA_SUCCESS;
  int runtime_result_ = 0;
};

TEST_F(CuptiDiscoveryRecorderTest, OnlyTheFirstSuccessfulCuInitIsRecorded) {
  Call(kDriver, kCuInit, CUDA_ERROR_NO_DEVICE);  // failed: initialized nothing
  Call(kDriver, kCuInit);                        // the first that worked
  Call(kDriver, kCuInit);                        // a lazily initialized library's no-op
  Call(kDriver, kCuInit);
  EXPECT_EQ(seen_, (std::vector<std::string>{"cuda.init @caller1"}));
}

TEST_F(CuptiDiscoveryRecorderTest, ARuntimeCallIsOneDeviceCountNotTwo) {
  // cudaGetDeviceCount as the runtime runs it: cuInit and cuDeviceGetCount inside.
  Deliver(kRuntime, kCudaGetDeviceCount, CUPTI_API_ENTER);
  Call(kDriver, kCuInit);
  Call(kDriver, kCuDeviceGetCount);
  EXPECT_EQ(seen_, (std::vector<std::string>{"cuda.init @caller1"}));  // nothing at the inner EXIT
  Deliver(kRuntime, kCudaGetDeviceCount, CUPTI_API_EXIT);
  // Then the driver's own call, made by a program directly.
  Call(kDriver, kCuDeviceGetCount);
  EXPECT_EQ(seen_, (std::vector<std::string>{"cuda.init @caller1", "cuda.device_count @caller2",
                                             "cuda.device_count @caller3"}));
}

TEST_F(CuptiDiscoveryRecorderTest, EveryDeviceCountCountsWhateverItFound) {
  Call(kRuntime, kCudaGetDeviceCount);
  Call(kRuntime, kCudaGetDeviceCount, /*cudaErrorNoDevice=*/100);
  ASSERT_EQ(DiscoveryCount(), 2);
  for (const DiscoveryRecord& r : DiscoveryCalls()) EXPECT_EQ(r.name, "cuda.device_count");
}

TEST_F(CuptiDiscoveryRecorderTest, AnExitWhoseEnterCameBeforeTheSubscriberIsNotCounted) {
  Deliver(kRuntime, kCudaGetDeviceCount, CUPTI_API_EXIT);
  Call(kRuntime, kCudaGetDeviceCount);
  EXPECT_EQ(seen_, (std::vector<std::string>{"cuda.device_count @caller1"}));
}

// Loaded from inside the first cuInit: recorded then, and that cuInit's own EXIT, if CUPTI
// delivers it, is not a second one.
TEST_F(CuptiDiscoveryRecorderTest, ADriverInitializedBeforeTheSubscriberIsOneInit) {
  recorder_.NoteDriverInitialized("the cuInit that loaded it");
  Deliver(kDriver, kCuInit, CUPTI_API_EXIT);
  Call(kDriver, kCuInit);
  EXPECT_EQ(seen_, (std::vector<std::string>{"cuda.init @the cuInit that loaded it"}));
}

TEST_F(CuptiDiscoveryRecorderTest, OtherCallbacksAndDomainsAreIgnored) {
  Call(kDriver, CUPTI_DRIVER_TRACE_CBID_cuDeviceGet);
  Call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020);
  CUpti_ResourceData resource{};
  CuptiDiscoveryCallback(&recorder_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &resource);
  EXPECT_TRUE(seen_.empty());
}

// What CuptiDiscoveryGpuTest makes on a real GPU, as CUPTI delivered it there (two H100 runs,
// 2026-11-26, CUDA 13.0): the runtime's first call initializes the runtime lazily, and that
// initialization asks the driver for its device count before the runtime can issue its first
// callback, so that count comes top-level, not nested in the cudaGetDeviceCount that triggered
// it; the initialization's own cuInit reaches no callback at all (the second run recorded no
// cuda.init in that phase), so the first cuInit CUPTI reports is the program's. Four device
// counts, one init, each in the phase the GPU run recorded it in.
TEST_F(CuptiDiscoveryRecorderTest, TheRuntimesLazyInitializationCountsDevicesOutsideTheCallThatTriggeredIt) {
  SetDiscoveryContext("first runtime call", 0);
  Call(kDriver, kCuDeviceGetCount);   // the runtime's device table, outside any runtime callback
  Call(kRuntime, kCudaGetDeviceCount);  // then the call itself, answered from that table
  SetDiscoveryContext("second runtime call", 0);
  Deliver(kRuntime, kCudaGetDeviceCount, CUPTI_API_ENTER);
  Call(kDriver, kCuDeviceGetCount);   // whatever the runtime asks the driver underneath is one question
  Deliver(kRuntime, kCudaGetDeviceCount, CUPTI_API_EXIT);
  SetDiscoveryContext("driver calls", 0);
  Call(kDriver, kCuInit);             // the first cuInit CUPTI reports: recorded
  Call(kDriver, kCuInit);             // a second one of an initialized driver: not
  Call(kDriver, kCuDeviceGetCount);
  std::vector<std::string> by_phase;
  for (const DiscoveryRecord& r : DiscoveryCalls()) by_phase.push_back(r.phase + ": " + r.name);
  EXPECT_EQ(by_phase, (std::vector<std::string>{
                          "first runtime call: cuda.device_count", "first runtime call: cuda.device_count",
                          "second runtime call: cuda.device_count", "driver calls: cuda.init",
                          "driver calls: cuda.device_count"}));
}

// The first matmul of a clean run on the GPU: cuBLAS and cuBLASLt each carry a statically linked
// CUDA runtime (libcublas.so.13 and libcublasLt.so.13 need no libcudart), which initializes at the
// library's first use: its cuInit is a no-op of an initialized driver, its device count a query.
// Two `cuda.device_count` at step 1, as every rank recorded them; discovery_count's test judges
// that trace (DiscoveryCountCheckerTest.QuietOnACleanCudaRunWhoseLibrariesStartAtTheFirstStep).
TEST_F(CuptiDiscoveryRecorderTest, TheMathLibrariesLazyStartAtTheFirstMatmulIsTwoDeviceCountsAndNoInit) {
  Call(kDriver, kCuInit);  // start-up: the process's first
  Call(kRuntime, kCudaGetDeviceCount);
  SetDiscoveryContext("step", 1);
  for (int library = 0; library < 2; ++library) {  // cuBLAS, then cuBLASLt
    Call(kDriver, kCuInit);
    Call(kDriver, kCuDeviceGetCount);
  }
  std::vector<std::string> calls;
  for (const DiscoveryRecord& r : DiscoveryCalls()) {
    calls.push_back(r.name + " " + r.phase + " " + std::to_string(r.step));
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"cuda.init startup 0", "cuda.device_count startup 0",
                                             "cuda.device_count step 1", "cuda.device_count step 1"}));
  // Recorded as evidence, judged as what it is: a question, not discovery.
  EXPECT_EQ(FindDiscoveryCall("cuda.device_count")->kind, DiscoveryKind::kQuery);
  EXPECT_EQ(FindDiscoveryCall("cuda.init")->kind, DiscoveryKind::kFirstUse);
}

TEST_F(CuptiDiscoveryRecorderTest, TheCallsAreTheEnabledOnesAndTheNamesAreDiscoveryCalls) {
  std::vector<std::string> apis;
  for (const CuptiCallback& cb : CuptiDiscoveryCallbacks()) apis.push_back(cb.api);
  EXPECT_EQ(apis, (std::vector<std::string>{"cuInit", "cuDeviceGetCount", "cudaGetDeviceCount"}));
  // The names it records are rows of the table the checker and the scenario loader read.
  Call(kDriver, kCuInit);
  Call(kRuntime, kCudaGetDeviceCount);
  for (const DiscoveryRecord& r : DiscoveryCalls()) {
    const DiscoveryCall* row = FindDiscoveryCall(r.name);
    ASSERT_NE(row, nullptr) << r.name;
    EXPECT_EQ(row->once_per_process, r.name == "cuda.init") << r.name;
  }
}

}  // namespace
}  // namespace lockstep
