#include "harness/trace/world_settings.h"

#include <cstdlib>

namespace lockstep {

const std::vector<std::string_view>& WorldSettingVariables() {
  static const std::vector<std::string_view> kVariables = {
      // NCCL: which algorithm, protocol and transport a collective takes, and so the order in
      // which it sums (numerics) and whether ranks agree on how to run it (hangs).
      "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS",
      "NCCL_NTHREADS", "NCCL_BUFFSIZE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE",
      "NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_GDR_LEVEL", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE",
      "NCCL_CROSS_NIC", "NCCL_CUMEM_ENABLE",
      // PyTorch: how c10d waits, fails and checks collectives, and TF32 in matrix products.
      "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_USE_COMM_NONBLOCKING",
      "TORCH_NCCL_AVOID_RECORD_STREAMS", "TORCH_NCCL_HIGH_PRIORITY", "TORCH_DISTRIBUTED_DEBUG",
      "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
      // CUDA libraries: TF32 everywhere, cuBLAS's deterministic workspaces.
      "NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG",
  };
  return kVariables;
}

std::map<std::string, std::string> RecordedEnvironment() {
  std::map<std::string, std::string> set;
  for (std::string_view name : WorldSettingVariables()) {
    const std::string key(name);
    if (const char* value = std::getenv(key.c_str())) set[key] = value;
  }
  return set;
}

}  // namespace lockstep
