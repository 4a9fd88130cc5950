// liblockstep_cupti.so: CUDA's device discovery recorded in any process, through CUPTI.
//
// The CUDA driver loads it into a process from the process's first cuInit when
// CUDA_INJECTION64_PATH names it, and calls InitializeInjection; a program of lockstep's own
// (lockstep-rank) may call the same entry itself. It subscribes to CUPTI's callback API, enables
// only the three callbacks of CuptiDiscoveryCallbacks() and hands them to a
// CuptiDiscoveryRecorder, which writes `cuda.init` and `cuda.device_count` into the process's
// discovery log (the one the trace writer observes).
//
// It never breaks the program: CUPTI of CUDA 13.0 takes one callback subscriber per process
// (cupti_callbacks.h: "Only a single subscriber can be registered at a time"; 13.2's opt-in
// multi-subscriber mode is not used), so under Nsight Systems, compute-sanitizer, or a
// torch.profiler that subscribed first, cuptiSubscribe fails; then one line goes to stderr,
// nothing is recorded, and the driver is told all is well (docs/CHECKERS.md#discovery_count).
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "harness/native_recorders/cupti_discovery_recorder.h"

namespace lockstep {
namespace {

std::string_view Basename(const char* path) {
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// The object (executable or shared library) that holds this code.
const void* OwnBase() {
  Dl_info info{};
  return dladdr(reinterpret_cast<const void*>(&Basename), &info) ? info.dli_fbase : nullptr;
}

// Frames of CUDA itself and of this recorder say nothing about who asked.
bool IsCudaOrOurs(const Dl_info& info) {
  if (info.dli_fbase == OwnBase()) return true;
  const std::string_view lib = Basename(info.dli_fname);
  return lib.rfind("libcuda", 0) == 0 || lib.rfind("libcupti", 0) == 0 || lib.rfind("liblockstep_process_log", 0) == 0;
}

// "c10::cuda::device_count()+0x1c (libc10_cuda.so) < ..." : the first three frames outside CUDA
// and this recorder. backtrace + dladdr only (no debug info, no file:line): discovery calls are a
// handful per process, and each pays a few microseconds here.
std::string NativeCaller() {
  constexpr int kMaxFrames = 32;
  constexpr int kKept = 3;
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  std::string where;
  int kept = 0;
  for (int i = 0; i < n && kept < kKept; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr || IsCudaOrOurs(info)) continue;
    std::string frame;
    const auto pc = reinterpret_cast<uintptr_t>(frames[i]);
    if (info.dli_sname != nullptr) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      frame = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
      std::free(demangled);
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%zx", static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_saddr)));
      frame += offset;
      frame += " (" + std::string(Basename(info.dli_fname)) + ")";
    } else {
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%zx", static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
      frame = std::string(Basename(info.dli_fname)) + offset;
    }
    where += (kept == 0 ? "" : " < ") + frame;
    ++kept;
  }
  return where;
}

// How the driver stood when the subscriber started.
enum class DriverState { kNotInitialized, kInitializingNow, kInitialized };

// The driver calls InitializeInjection from inside cuInit, so a caller in libcuda means the
// process's first cuInit is running now. Any other caller: ask the driver, before any callback
// is enabled (so the question is not recorded), whether cuInit already ran; never load it.
DriverState DriverStateFor(const void* caller) {
  Dl_info info{};
  if (dladdr(caller, &info) != 0 && info.dli_fname != nullptr && Basename(info.dli_fname).rfind("libcuda.so", 0) == 0) {
    return DriverState::kInitializingNow;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return DriverState::kNotInitialized;
  using DeviceGetCount = int (*)(int*);
  auto get_count = reinterpret_cast<DeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  int count = 0;
  // CUDA_ERROR_NOT_INITIALIZED until cuInit ran; anything else means it did.
  const bool initialized = get_count != nullptr && get_count(&count) != CUDA_ERROR_NOT_INITIALIZED;
  dlclose(driver);
  return initialized ? DriverState::kInitialized : DriverState::kNotInitialized;
}

std::string ResultName(CUptiResult result) {
  const char* name = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return name;
}

void Warn(const std::string& what, CUptiResult result) {
  std::fprintf(stderr,
               "lockstep cupti: %s failed: %s; CUDA discovery calls (cuda.init, cuda.device_count) are not recorded "
               "in this process\n",
               what.c_str(), ResultName(result).c_str());
}

void Subscribe(const void* caller) {
  const DriverState driver = DriverStateFor(caller);
  // Warm backtrace up here: its first call loads libgcc_s, which should not happen inside a
  // CUDA call.
  void* warm[1];
  backtrace(warm, 1);

  // Never destroyed: callbacks may come while the process exits.
  static auto* recorder = new CuptiDiscoveryRecorder(&NativeCaller);
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult result = cuptiSubscribe(&subscriber, &CuptiDiscoveryCallback, recorder);
  if (result != CUPTI_SUCCESS) {
    Warn("cuptiSubscribe", result);
    return;
  }
  for (const CuptiCallback& cb : CuptiDiscoveryCallbacks()) {
    result = cuptiEnableCallback(1, subscriber, cb.domain, cb.cbid);
    if (result != CUPTI_SUCCESS) {
      // Half a recorder would count some calls and not others: none, and say so.
      Warn(std::string("cuptiEnableCallback(") + cb.api + ")", result);
      cuptiUnsubscribe(subscriber);
      return;
    }
  }
  if (driver == DriverState::kInitializingNow) {
    recorder->NoteDriverInitialized("the cuInit that loaded lockstep's CUPTI recorder");
  } else if (driver == DriverState::kInitialized) {
    recorder->NoteDriverInitialized("before lockstep's CUPTI recorder subscribed");
  }
}

}  // namespace
}  // namespace lockstep

// The CUDA driver's injection entry (CUDA_INJECTION64_PATH), and lockstep-rank's. Subscribes
// once per process; every call returns 1, success, even when CUPTI refused: the program runs on.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  const void* caller = __builtin_return_address(0);
  std::call_once(once, [caller] { lockstep::Subscribe(caller); });
  return 1;
}
