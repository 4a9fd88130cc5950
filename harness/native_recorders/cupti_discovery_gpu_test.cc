// The CUPTI recorder in a real CUDA program: subscribed the way lockstep-rank does (its
// InitializeInjection, before any CUDA call), then cudaGetDeviceCount twice, cuInit twice and
// cuDeviceGetCount once, through the real runtime and driver. Skips, saying why, without a device.
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
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "needs a CUDA device: cudaGetDeviceCount: " << cudaGetErrorString(rc) << ", " << devices
                 << " devices";
  }
  ASSERT_EQ(err, "") << "the subscriber failed on a machine with a GPU (another CUPTI client?)";
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  EXPECT_EQ(cu_init(0), 0);
  EXPECT_EQ(cu_init(0), 0);
  int count = 0;
  EXPECT_EQ(cu_device_get_count(&count), 0);
  EXPECT_EQ(count, devices);

  std::map<std::string, int> counts;
  for (const DiscoveryRecord& r : DiscoveryCalls()) {
    ++counts[r.name];
    EXPECT_NE(r.where, "") << r.name << " (call " << r.call << ") has no native caller";
  }
  // Two runtime calls (each with the driver's cuDeviceGetCount inside it, not counted apart) and
  // one driver call; one cuInit, the runtime's first, however often it is called after.
  EXPECT_EQ(counts, (std::map<std::string, int>{{"cuda.device_count", 3}, {"cuda.init", 1}}));
}

}  // namespace
}  // namespace lockstep
