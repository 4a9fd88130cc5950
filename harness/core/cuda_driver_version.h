// The version of the CUDA driver installed where this process runs ("12.4"), or "none": a
// process's world as the trace header records it (docs/TRACE.md), to compare across ranks.
#pragma once

#include <string>

namespace lockstep {

// Asks libcuda itself (cuDriverGetVersion, which needs no cuInit and no device), loaded on
// demand, so a CPU-only build or a host without the driver answers "none" instead of failing.
std::string CudaDriverVersion();

}  // namespace lockstep
