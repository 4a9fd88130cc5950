# Helpers that keep every target's flags the same.

# Warnings apply to our code only (LibTorch's headers are system includes).
function(lockstep_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
endfunction()

# lockstep_library(name SOURCES ... DEPS ...)
function(lockstep_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  lockstep_warnings(${name})
endfunction()

# lockstep_test(name SOURCES ... DEPS ...): one gtest binary, tests discovered by ctest.
function(lockstep_test name)
  if(NOT LOCKSTEP_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  # lockstep_build_paths: LOCKSTEP_SOURCE_DIR and LOCKSTEP_BINARY_DIR (harness/core/testing/build_paths.h).
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} lockstep_build_paths GTest::gtest GTest::gtest_main GTest::gmock)
  # Tests may reuse a library's precompiled LibTorch header; GCC accepts it only when compiled with
  # the same -fPIC the libraries use (executables default to -fPIE).
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fPIC>)
  lockstep_warnings(${name})
  # gtest_discover_tests flattens list-valued PROPERTIES (CMake 3.25), so each discovered test
  # gets one label, and the MPI variables its subprocesses need come from the environment
  # (ci/run-tests.sh exports them; see LOCKSTEP_MPI_TEST_ENV).
  set(label unit)
  if(ARG_LABELS)
    list(GET ARG_LABELS 0 label)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${label})
endfunction()

# lockstep_mpi_test(name NP n SOURCES ... DEPS ...): a gtest binary run under mpirun -np n.
# Each rank writes its own gtest XML (rank in the name) so outputs never overwrite each other;
# tests/mpi_gtest_main.cc makes non-zero ranks quiet on stdout.
function(lockstep_mpi_test name)
  if(NOT LOCKSTEP_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "NP;SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT TARGET ${name})
    add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/mpi_gtest_main.cc)
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} lockstep_build_paths GTest::gtest GTest::gmock MPI::MPI_C)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fPIC>)
    lockstep_warnings(${name})
  endif()
  foreach(np ${ARG_NP})
    add_test(NAME ${name}.np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${name}.np${np} PROPERTIES
      ENVIRONMENT "${LOCKSTEP_MPI_TEST_ENV}" LABELS "mpi;${ARG_LABELS}" TIMEOUT 600
      PROCESSORS ${np})
  endforeach()
endfunction()
