# LibTorch as torch.utils.cpp_extension sees it, for the probe's pip package (LOCKSTEP_PROBE_PACKAGE):
# the headers, libraries and C++ ABI of the interpreter's torch, without torch's CMake config.
#
# That config is for programs that use all of LibTorch: with a CUDA wheel (PyPI's default) it
# looks for the CUDA toolkit and stops the configure when there is none ("Your installed Caffe2
# version uses CUDA but I cannot find the CUDA libraries", issue 35), although the wheel brings
# the CUDA runtime it needs and the probe compiles no CUDA of torch's. A CPU extension needs the
# CPU side only, which every wheel has: cpp_extension's include paths, c10, torch and torch_cpu,
# and the wheel's _GLIBCXX_USE_CXX11_ABI.
#
# Sets what find_package(Torch) sets and the build reads: TORCH_LIBRARIES (an imported target),
# TORCH_LIBRARY, TORCH_INCLUDE_DIRS, TORCH_CXX_FLAGS and Torch_VERSION.

execute_process(
  COMMAND "${LOCKSTEP_PYTHON}" -c [=[
import os, torch
from torch.utils import cpp_extension
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
print(torch.__version__.split("+")[0])
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(lib)
print(";".join(cpp_extension.include_paths()))
]=]
  OUTPUT_VARIABLE _torch_out ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "${LOCKSTEP_PYTHON} cannot import torch and torch.utils.cpp_extension: ${_torch_err}")
endif()
string(REPLACE "\n" "|" _torch_out "${_torch_out}")
string(REGEX MATCH "^([^|]*)\\|([01])\\|([^|]*)\\|(.*)$" _ "${_torch_out}")
set(Torch_VERSION "${CMAKE_MATCH_1}")
set(_torch_abi "${CMAKE_MATCH_2}")
set(_torch_lib_dir "${CMAKE_MATCH_3}")
set(TORCH_INCLUDE_DIRS "${CMAKE_MATCH_4}")

set(_torch_libs "")
foreach(name c10 torch torch_cpu)
  unset(_lib CACHE)
  find_library(_lib ${name} PATHS "${_torch_lib_dir}" NO_DEFAULT_PATH)
  if(NOT _lib)
    message(FATAL_ERROR "lockstep probe package: no lib${name}.so in ${_torch_lib_dir} (${LOCKSTEP_PYTHON}'s torch)")
  endif()
  list(APPEND _torch_libs "${_lib}")
  if(name STREQUAL "torch")
    set(TORCH_LIBRARY "${_lib}")
  endif()
endforeach()
unset(_lib CACHE)

add_library(lockstep_torch_from_python INTERFACE IMPORTED)
set_target_properties(lockstep_torch_from_python PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  INTERFACE_LINK_LIBRARIES "${_torch_libs}")
set(TORCH_LIBRARIES lockstep_torch_from_python)
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${_torch_abi}")
message(STATUS "lockstep: LibTorch ${Torch_VERSION} from ${LOCKSTEP_PYTHON}'s torch (${_torch_lib_dir}; CPU side, as torch.utils.cpp_extension builds)")
