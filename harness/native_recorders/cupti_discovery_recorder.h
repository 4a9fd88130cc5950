// CUDA's device discovery, seen through CUPTI's callback API: which callbacks count, and how a
// sequence of them becomes discovery records (`cuda.init`, `cuda.device_count`). Pure logic over
// CUPTI's callback data: it needs CUPTI's headers but neither libcupti nor a driver, so a test
// drives it with the sequences CUPTI would deliver. The subscriber that feeds it in a real process
// is cupti_discovery.cc (liblockstep_cupti.so).
//
// Why CUPTI: the CUDA runtime reaches the driver through dlopen + cuGetProcAddress, so an
// LD_PRELOAD of cuInit never sees its calls; CUPTI's callbacks fire however the entry point was
// resolved.
#pragma once

#include <cupti_callbacks.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace lockstep {

// One CUPTI callback the recorder needs, and the only ones the subscriber enables (one
// cuptiEnableCallback per entry, never a whole domain, so every other CUDA call pays nothing).
struct CuptiCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* api;  // "cuInit"
};
// Driver cuInit and cuDeviceGetCount, runtime cudaGetDeviceCount.
const std::vector<CuptiCallback>& CuptiDiscoveryCallbacks();

class CuptiDiscoveryRecorder {
 public:
  // `where` names the native caller of the call being recorded (a short stack); it is asked on
  // the calling thread, inside the callback. Null: records carry no `where`.
  explicit CuptiDiscoveryRecorder(std::function<std::string()> where = nullptr);

  // One callback as CUPTI delivers it (API_ENTER, then API_EXIT on the same thread).
  //   cuInit: `cuda.init` at the EXIT of the first one that succeeded, and never again: later
  //     calls are no-ops by the driver's own contract ("repeated calls to cuInit() have no
  //     additional effect"), and libraries that initialize lazily (cuBLAS, NCCL, a JIT) call it
  //     whenever they first run, mid-training included; recording those would cry wolf.
  //   cudaGetDeviceCount, cuDeviceGetCount: `cuda.device_count` at the EXIT of the outermost one
  //     on this thread, whatever it returned: whatever the runtime asks the driver inside its call
  //     is one question, not two. A runtime's lazy initialization (the first runtime call of the
  //     process, and of each library that links the runtime statically: cuBLAS and cuBLASLt at the
  //     first matmul) counts the devices through the driver before it can issue its first runtime
  //     callback, so that count is a top-level call of its own and recorded as one. Either way a
  //     device count is a query: discovery_count keeps it as evidence and never judges it.
  // Other domains and callback ids are ignored.
  void OnApiCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& data);

  // The driver was initialized before the subscriber saw it: it loaded this recorder from inside
  // the process's first cuInit (CUDA_INJECTION64_PATH), or a program subscribed after CUDA had
  // started. Records `cuda.init` now, with `where` saying so, unless one was recorded already, and
  // every cuInit from now on is a no-op (CUPTI may or may not deliver the EXIT of the cuInit that
  // loaded it; either way the process has one `cuda.init`).
  void NoteDriverInitialized(const std::string& where);

 private:
  void RecordInitOnce(const std::string& where);

  std::function<std::string()> where_;
  std::atomic<bool> init_recorded_{false};
};

// The CUpti_CallbackFunc handed to cuptiSubscribe: `userdata` is the CuptiDiscoveryRecorder and
// `cbdata` a CUpti_CallbackData (API domains). Tests call it directly as CUPTI would.
void CUPTIAPI CuptiDiscoveryCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                     const void* cbdata);

}  // namespace lockstep
