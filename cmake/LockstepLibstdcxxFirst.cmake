# libstdc++ first in every link's needed list, so that a program's std:: calls bind to the
# system's libstdc++ and never to LibTorch's copies.
#
# PyPI's torch wheels export the copies of libstdc++'s std::filesystem that their build linked in
# statically (pytorch#133437; libtorch.so and libtorch_cpu.so of 2.11 still do). A program that
# needs libtorch before libstdc++ binds its own std::filesystem calls to those copies, and
# remove_all crashes through a null pointer in them. `-lstdc++` first (--no-as-needed) puts the
# system's definitions first in the lookup order.
#
# That holds only where `-lstdc++` names the shared library. A toolchain whose library folder has
# only libstdc++.a (the GPU image's g++ 13.3 in /opt/gcc, 2026-11-26) takes the archive there, at
# the head of the line where nothing is undefined yet, so it adds nothing; libtorch then defines
# std::filesystem for the program, the archive at the end of the line the rest, and the program
# mixes two implementations: lockstep-bench died of SIGSEGV at PC 0 in libtorch.so's remove_all
# on the GPU (reproduced on Debian 12 by linking it that way: bench/crash_report.h named the
# caller). Such a program loads the system's libstdc++.so.6 anyway (LibTorch needs it), so
# programs name that file itself. Shared objects keep `-lstdc++`: the objects lockstep injects
# into other processes are built to carry the archive privately (LockstepInjectedObject.cmake).

# Whether a program linked with this toolchain and these flags gets libstdc++ shared.
function(_lockstep_programs_link_libstdcxx_shared out)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/lockstep_libstdcxx_first)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/main.cc "#include <string>\nint main(int argc, char**) { return int(std::to_string(argc).size()) - 1; }\n")
  separate_arguments(flags UNIX_COMMAND "${CMAKE_CXX_FLAGS} ${CMAKE_EXE_LINKER_FLAGS}")
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} ${flags} -o ${dir}/main ${dir}/main.cc -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(STATUS "lockstep: could not link a test program with ${CMAKE_CXX_COMPILER} (${err}); assuming it links libstdc++ shared")
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  find_program(_readelf NAMES readelf)
  if(NOT _readelf)
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND ${_readelf} -d -W ${dir}/main OUTPUT_VARIABLE dynamic)
  if(dynamic MATCHES "NEEDED[^\n]*libstdc\\+\\+\\.so")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The libstdc++.so.6 programs load: the compiler's, else the dynamic linker's cache, else the
# usual folders.
function(_lockstep_find_libstdcxx_runtime out)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT (IS_ABSOLUTE "${path}" AND EXISTS "${path}"))
    set(path "")
    execute_process(COMMAND ldconfig -p OUTPUT_VARIABLE cache ERROR_QUIET)
    if(cache MATCHES "libstdc\\+\\+\\.so\\.6 \\([^)]*x86-64[^)]*\\) => ([^\n]+)" OR
       cache MATCHES "libstdc\\+\\+\\.so\\.6 \\([^)]*\\) => ([^\n]+)")
      set(path "${CMAKE_MATCH_1}")
    endif()
  endif()
  if(NOT (IS_ABSOLUTE "${path}" AND EXISTS "${path}"))
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-multiarch OUTPUT_VARIABLE arch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    unset(_lockstep_libstdcxx_so6 CACHE)
    find_file(_lockstep_libstdcxx_so6 libstdc++.so.6
              PATHS /usr/lib/${arch} /lib/${arch} /usr/lib64 /lib64 /usr/lib NO_DEFAULT_PATH)
    set(path "${_lockstep_libstdcxx_so6}")
  endif()
  if(IS_ABSOLUTE "${path}" AND EXISTS "${path}")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

_lockstep_programs_link_libstdcxx_shared(_shared)
set(_for_programs "-lstdc++")
if(NOT _shared)
  _lockstep_find_libstdcxx_runtime(_runtime)
  if(_runtime)
    set(_for_programs "${_runtime}")
    message(STATUS "lockstep: ${CMAKE_CXX_COMPILER} finds only libstdc++.a for programs; they link the system's ${_runtime} first, the libstdc++ LibTorch loads (a program carrying the archive would bind std::filesystem to LibTorch's copies)")
  else()
    message(WARNING "lockstep: ${CMAKE_CXX_COMPILER} finds only libstdc++.a and no libstdc++.so.6 was found: programs that link LibTorch may bind std::filesystem to LibTorch's copies and crash (cmake/LockstepLibstdcxxFirst.cmake)")
  endif()
endif()
set(LOCKSTEP_LIBSTDCXX_FOR_PROGRAMS "${_for_programs}" CACHE INTERNAL "what programs link first: -lstdc++ or the path of libstdc++.so.6")
add_link_options("LINKER:--push-state,--no-as-needed"
                 "$<IF:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>,${_for_programs},-lstdc++>"
                 "LINKER:--pop-state")
