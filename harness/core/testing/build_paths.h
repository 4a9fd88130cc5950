// Where this build's checkout and build tree are, for the tests and benchmarks that read the
// repository's files or run its programs. Their targets get LOCKSTEP_SOURCE_DIR and
// LOCKSTEP_BINARY_DIR as calls of these (lockstep_build_paths, harness/core/CMakeLists.txt; a unit
// that uses them includes this header), rather than as string macros holding the paths: ccache
// reuses a unit's object only for the same compiler command, and a command naming the checkout's
// folder matched in that folder alone, while CI builds every run in a fresh clone elsewhere. Only
// the one generated unit behind these names the folders.
#pragma once

namespace lockstep::build_paths {

const char* SourceDir();  // the checkout (CMake's PROJECT_SOURCE_DIR)
const char* BinaryDir();  // the build tree (PROJECT_BINARY_DIR)

}  // namespace lockstep::build_paths
