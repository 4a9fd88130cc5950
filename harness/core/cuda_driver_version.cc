#include "harness/core/cuda_driver_version.h"

#include <dlfcn.h>

namespace lockstep {

std::string CudaDriverVersion() {
  // The library stays loaded: a process that uses CUDA has it loaded already, and unloading
  // driver libraries is unsafe.
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return "none";
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion"));
  int version = 0;
  if (get == nullptr || get(&version) != 0 || version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace lockstep
