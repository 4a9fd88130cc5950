// What this binary was built from and against, for --version, trace headers and reports.
#pragma once

#include <map>
#include <string>

namespace lockstep {

struct BuildInfo {
  std::string version;        // lockstep's own
  std::string git_sha;        // at configure time; "unknown" outside a checkout
  std::string torch_version;  // LibTorch found by CMake
  std::string mpi_version;    // MPI standard and library, e.g. "3.1 (Open MPI 4.1.4)"
  std::string cuda_version;   // "none" when built without CUDA
  std::string nccl_version;   // "none" when built without NCCL
  bool have_gloo = false;
  bool have_cuda = false;
  bool have_nccl = false;
};

const BuildInfo& GetBuildInfo();

// Flat key/value view for trace headers and report contexts.
std::map<std::string, std::string> BuildInfoMap();

}  // namespace lockstep
