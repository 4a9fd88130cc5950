# Finds every dependency once, here. Required ones fail the configure step with the package
# to install; CUDA and NCCL are optional and only switch the GPU sources on.

find_package(Threads REQUIRED)

# LibTorch 2.x with CUDA links torch::nvtoolsext to CUDA::nvToolsExt, a library that CUDA >= 12.9
# no longer ships (NVTX 3 is header-only: pytorch#152756). ci/gpu-checks.sh turns this on when
# the first configure fails: NVTX 3 of the toolkit stands in for it, as PyTorch itself does since.
option(LOCKSTEP_TORCH_NVTX3_SHIM "Let CUDA::nvtx3 stand in for CUDA::nvToolsExt in LibTorch's CMake config" OFF)
if(LOCKSTEP_TORCH_NVTX3_SHIM)
  find_package(CUDAToolkit REQUIRED)
  if(TARGET CUDA::nvtx3 AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
    target_compile_definitions(CUDA::nvToolsExt INTERFACE TORCH_CUDA_USE_NVTX3)
    message(STATUS "lockstep: CUDA::nvToolsExt is NVTX 3 of the toolkit (LOCKSTEP_TORCH_NVTX3_SHIM)")
  endif()
endif()

# One torch for everything: the Python interpreter whose torch runs the probe and the examples
# (LOCKSTEP_PYTHON; by default the repository's .venv, which ci/install-deps.sh fills from
# ci/requirements.txt) also gives the LibTorch that every target links, from its wheel
# (torch.utils.cmake_prefix_path). -DTorch_DIR=... still names another LibTorch; the probe is then
# built only when LOCKSTEP_PYTHON's torch is that one (probe/CMakeLists.txt says why not).
set(LOCKSTEP_PYTHON "" CACHE FILEPATH "Python interpreter whose torch the build and the probe use (default: <repo>/.venv)")
if(LOCKSTEP_PROBE_PACKAGE AND NOT LOCKSTEP_PYTHON)
  # pip's interpreter, which scikit-build-core names: the package is built for the environment
  # it is installed into, never for the repository's .venv.
  if(NOT Python_EXECUTABLE)
    message(FATAL_ERROR "LOCKSTEP_PROBE_PACKAGE: no Python_EXECUTABLE (build the package with pip, or set -DLOCKSTEP_PYTHON=...)")
  endif()
  set(LOCKSTEP_PYTHON "${Python_EXECUTABLE}" CACHE FILEPATH "" FORCE)
endif()
if(NOT LOCKSTEP_PYTHON AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  set(LOCKSTEP_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH "" FORCE)
endif()
if(LOCKSTEP_PROBE_PACKAGE)
  # The package's extension is a CPU extension of the interpreter's torch, built as
  # torch.utils.cpp_extension builds one: torch's CMake config would ask for a CUDA toolkit that a
  # pip CUDA torch does not need (cmake/LockstepTorchFromPython.cmake).
  include(LockstepTorchFromPython)
elseif(NOT Torch_DIR AND LOCKSTEP_PYTHON)
  execute_process(COMMAND "${LOCKSTEP_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _torch_prefix RESULT_VARIABLE _torch_rc ERROR_VARIABLE _torch_err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "${LOCKSTEP_PYTHON} cannot import torch (run ci/install-deps.sh, or -DTorch_DIR=...): ${_torch_err}")
  endif()
  set(Torch_DIR "${_torch_prefix}/Torch" CACHE PATH "LibTorch's CMake package" FORCE)
endif()
# Torch's CMake config compiles CUDA for every architecture it knows unless told otherwise, and
# ignores CMAKE_CUDA_ARCHITECTURES: Ampere and Hopper, as below.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
if(NOT LOCKSTEP_PROBE_PACKAGE)
  find_package(Torch REQUIRED)
endif()
# torch 2.7 is the oldest with C++11-ABI wheels (Debian's yaml-cpp, gtest and benchmark need that
# ABI); 2.11 is the version tested (ci/requirements.txt). torch 1.x is not supported: its c10d has
# no Backend class, which the probe's recording wrapper derives from.
# libstdc++ first in every link's needed list (LibTorch's wheels export copies of std::filesystem),
# also where the toolchain finds only libstdc++.a.
include(LockstepLibstdcxxFirst)
if(Torch_VERSION AND Torch_VERSION VERSION_LESS 2.7)
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} at ${Torch_DIR}: lockstep needs torch >= 2.7 (ci/requirements.txt pins the tested one)")
endif()
# TORCH_CXX_FLAGS carries the libstdc++ ABI switch the LibTorch was built with. It must apply to
# every translation unit that shares a std::string with LibTorch, i.e. all of ours.
separate_arguments(LOCKSTEP_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
add_compile_options(${LOCKSTEP_TORCH_CXX_FLAGS})
set(LOCKSTEP_TORCH_VERSION "${Torch_VERSION}")
if(NOT LOCKSTEP_TORCH_VERSION)
  set(LOCKSTEP_TORCH_VERSION "unknown")
endif()

# The probe's package needs none of MPI (its build info then says "none"), yaml-cpp or CLI11.
if(LOCKSTEP_PROBE_PACKAGE)
  find_package(MPI COMPONENTS C)
else()
  find_package(MPI REQUIRED COMPONENTS C)
endif()
# We use MPI's C API only; without these, <mpi.h> in C++ drags in the deprecated C++ bindings and
# every program that includes it must link them.
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
if(NOT LOCKSTEP_PROBE_PACKAGE)
  find_package(yaml-cpp REQUIRED)
  find_package(CLI11 REQUIRED)
endif()
find_package(nlohmann_json 3.9 REQUIRED)

# xxHash ships no CMake config in Debian; use pkg-config, then a plain search.
find_package(PkgConfig)
if(PkgConfig_FOUND)
  pkg_check_modules(XXHASH IMPORTED_TARGET libxxhash)
endif()
if(TARGET PkgConfig::XXHASH)
  add_library(lockstep_xxhash INTERFACE)
  target_link_libraries(lockstep_xxhash INTERFACE PkgConfig::XXHASH)
else()
  find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
  find_library(XXHASH_LIBRARY xxhash REQUIRED)
  add_library(lockstep_xxhash INTERFACE)
  target_include_directories(lockstep_xxhash INTERFACE ${XXHASH_INCLUDE_DIR})
  target_link_libraries(lockstep_xxhash INTERFACE ${XXHASH_LIBRARY})
endif()

# Gloo: c10d's ProcessGroupGloo header includes <gloo/...>. A LibTorch that bundles gloo headers
# (pip wheels do) needs nothing more; Debian's needs libgloo-dev.
# The LibTorch's own gloo headers first: they match the gloo compiled into it. Other gloo headers
# (Debian's, or those of ci/gpu-deps.sh's prefix) only when the LibTorch has none.
# LOCKSTEP_ENABLE_GLOO=OFF leaves the backend out: ci/gpu-checks.sh's fallback when a LibTorch's
# c10d headers do not compile against the only gloo headers there are (a wheel without its own).
option(LOCKSTEP_ENABLE_GLOO "Build the gloo backend when gloo headers are found" ON)
find_path(LOCKSTEP_GLOO_INCLUDE_DIR gloo/config.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
find_path(LOCKSTEP_GLOO_INCLUDE_DIR gloo/config.h)
find_library(LOCKSTEP_GLOO_LIBRARY gloo)
if(LOCKSTEP_GLOO_INCLUDE_DIR AND NOT LOCKSTEP_ENABLE_GLOO)
  set(LOCKSTEP_HAVE_GLOO OFF)
  message(STATUS "lockstep: gloo backend off (LOCKSTEP_ENABLE_GLOO=OFF)")
elseif(LOCKSTEP_GLOO_INCLUDE_DIR)
  set(LOCKSTEP_HAVE_GLOO ON)
  message(STATUS "lockstep: gloo headers from ${LOCKSTEP_GLOO_INCLUDE_DIR}")
else()
  set(LOCKSTEP_HAVE_GLOO OFF)
  message(WARNING "gloo headers not found (install libgloo-dev): the gloo backend is not built")
endif()

find_package(OpenSSL)  # SHA-1 baseline in the benchmarks only

if(LOCKSTEP_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(LOCKSTEP_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA and NCCL: optional, detected.
set(LOCKSTEP_HAVE_CUDA OFF)
set(LOCKSTEP_HAVE_NCCL OFF)
if(LOCKSTEP_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  include(CheckLanguage)
  check_language(CUDA)
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(LOCKSTEP_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      # Hopper (sm_90) is the machine we measure on; PTX for 80 keeps older parts working.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(LOCKSTEP_HAVE_NCCL ON)
      file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
      string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
             LOCKSTEP_NCCL_VERSION "${_nccl_ver}")
    endif()
  endif()
endif()
if(NOT LOCKSTEP_NCCL_VERSION)
  set(LOCKSTEP_NCCL_VERSION "none")
endif()
if(LOCKSTEP_HAVE_CUDA)
  set(LOCKSTEP_CUDA_VERSION "${CUDAToolkit_VERSION}")
else()
  set(LOCKSTEP_CUDA_VERSION "none")
endif()

set(_mpi_text "${MPI_C_VERSION}")
if(NOT MPI_C_FOUND)
  set(_mpi_text "none")
endif()
message(STATUS "lockstep: LibTorch ${LOCKSTEP_TORCH_VERSION}, MPI ${_mpi_text}, gloo ${LOCKSTEP_HAVE_GLOO}, "
               "CUDA ${LOCKSTEP_CUDA_VERSION}, NCCL ${LOCKSTEP_NCCL_VERSION}")

# MPI launch settings for multi-process tests. --oversubscribe lets 4 ranks run on 2 cores;
# pml ob1 skips the UCX probe that costs ~200 ms per start on these machines.
set(LOCKSTEP_MPI_TEST_ENV
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
    OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1)
