# Checks a shared object lockstep puts into a process that is not its own (LockstepInjectedObject.cmake):
# it exports nothing but its entry points (EXPORTS: globs over demangled names; no std:: or
# __gnu_cxx:: symbol above all: a libstdc++ symbol that one object exports binds the process's
# other copies to it, issue 35), and says how it carries libstdc++ (NEEDED libstdc++.so.6, or a
# copy of its own, kept private).
#
#   cmake -DOBJECT=<file> -DEXPORTS=<glob>,<glob>... [-DNM=<nm>] [-DREADELF=<readelf>]
#         [-DEXPECT=leak] -P CheckInjectedObject.cmake
#
# Exit 0 and one line "lockstep: <file>: ..." when the object is as it must be; a fatal error
# naming every unexpected export otherwise. EXPECT=leak turns it round (the test that the check
# fires: tests/injected_objects/): it passes only when it finds exported std:: symbols.
cmake_minimum_required(VERSION 3.18)

string(REPLACE "," ";" EXPORTS "${EXPORTS}")
if(NOT OBJECT OR NOT EXISTS "${OBJECT}")
  message(FATAL_ERROR "CheckInjectedObject: no object '${OBJECT}'")
endif()
if(NOT NM)
  find_program(NM NAMES nm)
endif()
if(NOT READELF)
  find_program(READELF NAMES readelf)
endif()
get_filename_component(_name "${OBJECT}" NAME)
if(NOT NM OR NOT READELF)
  message(FATAL_ERROR "CheckInjectedObject: ${_name}: nm or readelf not found (binutils): cannot check what it exports")
endif()

# How it carries libstdc++.
execute_process(COMMAND "${READELF}" -d -W "${OBJECT}" OUTPUT_VARIABLE _dynamic RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "CheckInjectedObject: readelf -d ${OBJECT} failed")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[([^]\n]*)\\]" _needed_lines "${_dynamic}")
set(_needed "")
foreach(line ${_needed_lines})
  string(REGEX REPLACE ".*\\[([^]]*)\\]" "\\1" lib "${line}")
  list(APPEND _needed "${lib}")
endforeach()
set(_private "")
if("libstdc++.so.6" IN_LIST _needed)
  set(_runtime "libstdc++ shared (NEEDED libstdc++.so.6)")
else()
  # Its own copy: private only if nothing of it is exported, which the check below makes sure of.
  set(_runtime "libstdc++ linked in (no NEEDED libstdc++.so.6)")
  set(_private ", kept private")
endif()

# What it exports: the defined symbols of its dynamic symbol table, demangled.
execute_process(COMMAND "${NM}" -D --defined-only -C "${OBJECT}" OUTPUT_VARIABLE _nm RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "CheckInjectedObject: nm -D ${OBJECT} failed")
endif()
string(REPLACE ";" "\\;" _nm "${_nm}")
string(REPLACE "\n" ";" _lines "${_nm}")
set(_patterns "")
foreach(glob ${EXPORTS})
  if(NOT glob MATCHES "^[A-Za-z0-9_:*]+$")
    message(FATAL_ERROR "CheckInjectedObject: export glob '${glob}': only names, '::' and '*'")
  endif()
  string(REPLACE "*" ".*" re "${glob}")
  list(APPEND _patterns "^${re}$")
endforeach()
set(_exports "")
set(_unexpected "")
set(_runtime_exports "")
foreach(line IN LISTS _lines)
  # "<address> <type> <name>"; a linker's version node (type A) is no symbol.
  if(NOT line MATCHES "^[0-9a-fA-F]+ ([A-Za-z]) (.*)$")
    continue()
  endif()
  set(type "${CMAKE_MATCH_1}")
  set(sym "${CMAKE_MATCH_2}")
  if(type STREQUAL "A")
    continue()
  endif()
  list(APPEND _exports "${sym}")
  # A symbol of the C++ runtime: std::/__gnu_cxx:: and what the compiler emits for them (typeinfo,
  # vtables, guards), the ABI's __cxa_*/__cxxabiv1, the unwinder's _Unwind_*, operator new/delete.
  # A function template's demangled name starts with its return type ("void std::vector<...>").
  string(REGEX REPLACE "\\(.*" "" head "${sym}")
  if(head MATCHES "^((typeinfo( name)?|vtable|VTT|guard variable|construction vtable) for )?([^ ]+ )?(std::|__gnu_cxx::|__cxxabiv1::)"
     OR head MATCHES "^(__cxa_|_Unwind_|__gxx_personality|operator new|operator delete)")
    list(APPEND _runtime_exports "${sym}")
  endif()
  set(allowed FALSE)
  foreach(re IN LISTS _patterns)
    if(sym MATCHES "${re}")
      set(allowed TRUE)
      break()
    endif()
  endforeach()
  if(NOT allowed)
    list(APPEND _unexpected "${sym}")
  endif()
endforeach()
list(LENGTH _exports _n)
list(LENGTH _runtime_exports _n_runtime)

if(EXPECT STREQUAL "leak")
  if(_n_runtime EQUAL 0)
    message(FATAL_ERROR "CheckInjectedObject: ${_name} exports no C++ runtime symbol, but this object was made to leak some: the check would not fire")
  endif()
  list(GET _runtime_exports 0 _first)
  message(STATUS "lockstep: ${_name}: ${_runtime}; the check fires: ${_n_runtime} C++ runtime symbols exported, e.g. ${_first}")
  return()
endif()

# A C++ runtime symbol is never an entry point, whatever glob it matches.
foreach(sym IN LISTS _runtime_exports)
  if(NOT sym IN_LIST _unexpected)
    list(APPEND _unexpected "${sym}")
  endif()
endforeach()
if(_unexpected)
  list(LENGTH _unexpected _n_unexpected)
  string(REPLACE ";" "\n    " _list "${_unexpected}")
  set(_why "")
  if(_n_runtime GREATER 0)
    set(_why " (${_n_runtime} of them the C++ runtime's: loaded into a program, they would bind its other copies of libstdc++ to this one's, issue 35)")
  endif()
  string(REPLACE ";" ", " _entry "${EXPORTS}")
  message(FATAL_ERROR "lockstep: ${_name}: ${_runtime}; exports ${_n_unexpected} symbols beyond its entry points (${_entry})${_why}:\n    ${_list}")
endif()
string(REPLACE ";" ", " _shown "${EXPORTS}")
message(STATUS "lockstep: ${_name}: ${_runtime}${_private}; exports ${_n} symbol(s), all entry points (${_shown})")
