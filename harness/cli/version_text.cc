#include <sstream>

#include "harness/cli/command.h"
#include "harness/core/build_info.h"

namespace lockstep {

std::string VersionText() {
  const BuildInfo& b = GetBuildInfo();
  auto yes_no = [](bool v) { return v ? "yes" : "no"; };
  std::ostringstream text;
  text << "lockstep " << b.version << " (git " << b.git_sha << ")\n"
       << "LibTorch " << b.torch_version << "\n"
       << b.mpi_version << "\n"
       << "CUDA " << b.cuda_version << "\n"
       << "NCCL " << b.nccl_version << "\n"
       << "built with: gloo " << yes_no(b.have_gloo) << ", cuda " << yes_no(b.have_cuda) << ", nccl "
       << yes_no(b.have_nccl);
  return text.str();
}

}  // namespace lockstep
