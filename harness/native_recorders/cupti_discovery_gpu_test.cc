// The CUPTI recorder in a real CUDA program: subscribed the way lockstep-rank does (its
// InitializeInjection, before any CUDA call), then cudaGetDeviceCount twice, cuInit twice and
// cuDeviceGetCount once, through the real runtime and driver, each part in a discovery phase of
// its own so that the expectation says which part made which record. Skips, saying why, without
// a device.
//
// What CUPTI delivers, as two H100 runs of 2026-11-26 recorded it (driver 580.159.04, CUDA 13.0):
// - The first runtime call makes two device counts, not one (the first run counted 4 in all where
//   3 were expected): it initializes the runtime lazily, and that initialization asks the driver
//   for its device count before the runtime can issue a callback of its own, so the driver's count
//   comes top-level, not inside the ENTER and EXIT of the cudaGetDeviceCount that triggered it, and
//   the recorder counts it apart. Later runtime calls nest whatever they ask the driver, and count
//   once.
// - The runtime's own cuInit is not delivered at all (the second run: no cuda.init in the first
//   runtime call's phase): the runtime initializes the driver through an entry point that has no
//   callback. The first cuInit CUPTI reports is the program's own, here the first of the two in
//   "driver calls"; the second is not recorded (only the first successful cuInit is). A program
//   that never calls cuInit itself has no cuda.init record; torch does call it (the cupti check of
//   ci/gpu-checks.sh counts one per rank of its CUDA programs).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "harness/discovery/discovery_log.h"

extern "C" int InitializeInjection(void);

namespace lockstep {
namespace {

TEST(CuptiDiscoveryGpuTest, RecordsEachDeviceCountOnceAndTheFirstInit) {
  // The driver is loaded, not initialized: the subscriber must see its first cuInit.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver == nullptr) GTEST_SKIP() << "needs a CUDA device: no CUDA driver (" << dlerror() << ")";
  using Init = int (*)(unsigned);
  using DeviceGetCount = int (*)(int*);
  auto cu_init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto cu_device_get_count = reinterpret_cast<DeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  ASSERT_NE(cu_init, nullptr);
  ASSERT_NE(cu_device_get_count, nullptr);

  ResetDiscoveryForTest();
  testing::internal::CaptureStderr();
  EXPECT_EQ(InitializeInjection(), 1);
  const std::string err = testing::internal::GetCapturedStderr();

  int devices = 0;
  SetDiscoveryContext("first runtime call", 0);
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "needs a CUDA device: cudaGetDeviceCount: " << cudaGetErrorString(rc) << ", " << devices
                 << " devices";
  }
  ASSERT_EQ(err, "") << "the subscriber failed on a machine with a GPU (another CUPTI client?)";
  SetDiscoveryContext("second runtime call", 0);
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  SetDiscoveryContext("driver calls", 0);
  EXPECT_EQ(cu_init(0), 0);
  EXPECT_EQ(cu_init(0), 0);
  int count = 0;
  EXPECT_EQ(cu_device_get_count(&count), 0);
  EXPECT_EQ(count, devices);

  std::map<std::string, int> counts;
  for (const DiscoveryRecord& r : DiscoveryCalls()) {
    ++counts[r.phase + ": " + r.name];
    EXPECT_NE(r.where, "") << r.name << " (call " << r.call << ") has no native caller";
  }
  // The first runtime call: the runtime's lazy initialization (the driver's device count,
  // top-level; its cuInit unseen) and the call itself. The second: one count, whatever it asked the
  // driver underneath. The driver's calls: the first cuInit CUPTI reports, and one count.
  EXPECT_EQ(counts, (std::map<std::string, int>{{"first runtime call: cuda.device_count", 2},
                                                {"second runtime call: cuda.device_count", 1},
                                                {"driver calls: cuda.init", 1},
                                                {"driver calls: cuda.device_count", 1}}));
  ResetDiscoveryForTest();
}

}  // namespace
}  // namespace lockstep
