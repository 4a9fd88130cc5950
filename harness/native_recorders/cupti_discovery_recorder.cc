#include "harness/native_recorders/cupti_discovery_recorder.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <utility>

#include "harness/discovery/discovery_log.h"

namespace lockstep {
namespace {

constexpr const char* kCudaInit = "cuda.init";
constexpr const char* kCudaDeviceCount = "cuda.device_count";

// Device-count calls open on this thread: the runtime's cudaGetDeviceCount runs the driver's
// cuDeviceGetCount inside it, and only the outermost call is recorded. Per thread, because
// CUPTI delivers a call's ENTER and EXIT on the thread that makes it.
thread_local int device_count_depth = 0;

bool IsDeviceCount(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020) ||
         (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount);
}

bool IsInit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuInit;
}

}  // namespace

const std::vector<CuptiCallback>& CuptiDiscoveryCallbacks() {
  static const std::vector<CuptiCallback> kCallbacks = {
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuInit, "cuInit"},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, "cuDeviceGetCount"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, "cudaGetDeviceCount"},
  };
  return kCallbacks;
}

CuptiDiscoveryRecorder::CuptiDiscoveryRecorder(std::function<std::string()> where) : where_(std::move(where)) {}

void CuptiDiscoveryRecorder::OnApiCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                           const CUpti_CallbackData& data) {
  const bool enter = data.callbackSite == CUPTI_API_ENTER;
  if (IsInit(domain, cbid)) {
    if (enter || init_recorded_.load(std::memory_order_acquire)) return;
    // At EXIT the driver's return value is there; a cuInit that failed initialized nothing.
    const auto* result = static_cast<const CUresult*>(data.functionReturnValue);
    if (result != nullptr && *result != CUDA_SUCCESS) return;
    RecordInitOnce(where_ ? where_() : "");
    return;
  }
  if (!IsDeviceCount(domain, cbid)) return;
  if (enter) {
    ++device_count_depth;
    return;
  }
  // An EXIT whose ENTER came before the subscriber existed is not ours to count.
  if (device_count_depth == 0) return;
  if (--device_count_depth == 0) RecordDiscovery(kCudaDeviceCount, where_ ? where_() : "");
}

void CuptiDiscoveryRecorder::NoteDriverInitialized(const std::string& where) { RecordInitOnce(where); }

void CuptiDiscoveryRecorder::RecordInitOnce(const std::string& where) {
  // Two threads may finish their first cuInit together; one record.
  if (init_recorded_.exchange(true, std::memory_order_acq_rel)) return;
  RecordDiscovery(kCudaInit, where);
}

void CUPTIAPI CuptiDiscoveryCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                     const void* cbdata) {
  if (userdata == nullptr || cbdata == nullptr) return;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  static_cast<CuptiDiscoveryRecorder*>(userdata)->OnApiCallback(domain, cbid,
                                                                *static_cast<const CUpti_CallbackData*>(cbdata));
}

}  // namespace lockstep
