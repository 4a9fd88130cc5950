// liblockstep_cupti.so loaded the way the driver loads it (dlopen, then InitializeInjection) on a
// machine without a CUDA driver: it must return success and say in one line why it records
// nothing, never crash or stop the program. The machine with a GPU runs
// cupti_discovery_gpu_test instead.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "harness/discovery/discovery_log.h"

namespace lockstep {
namespace {

TEST(CuptiDiscoveryTest, WithoutADriverTheInjectionSaysWhyAndTheProgramRunsOn) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "this machine has a CUDA driver (libcuda.so.1): cupti_discovery_gpu_test covers it";
  }
  ResetDiscoveryForTest();
  void* lib = dlopen(LOCKSTEP_CUPTI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using Entry = int (*)();
  auto initialize = reinterpret_cast<Entry>(dlsym(lib, "InitializeInjection"));
  ASSERT_NE(initialize, nullptr) << "InitializeInjection is not exported: " << dlerror();

  testing::internal::CaptureStderr();
  const int first = initialize();
  const int second = initialize();  // subscribes once per process: nothing more to say
  const std::string err = testing::internal::GetCapturedStderr();

  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(err.rfind("lockstep cupti: cuptiSubscribe failed: CUPTI_ERROR_", 0), 0u) << err;
  EXPECT_NE(err.find("not recorded in this process"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line: " << err;
  EXPECT_EQ(DiscoveryCount(), 0);
  // Not closed: a CUPTI that started half-way keeps pointers into it.
}

}  // namespace
}  // namespace lockstep
