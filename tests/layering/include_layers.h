// The include graph against the declared layer order (LOCKSTEP_LAYERS in the top CMakeLists.txt).
// A source file may include only files of its own folder and of folders earlier in the order, so
// no include crosses a layer upward and no two folders depend on each other; inside a folder the
// files must not include each other in a cycle.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockstep {

// One `#include "path"` line. Paths are relative to the source root ("harness/result/finding.h").
struct IncludeEdge {
  std::string from;
  int line = 0;
  std::string to;
};

// Every `#include "..."` in the C++ and CUDA files under `dirs` (relative to `root`). Includes of
// files that are not in the tree (generated headers, system headers written with quotes) are
// kept: their folder still decides whether they may be included.
std::vector<IncludeEdge> ScanIncludes(const std::filesystem::path& root, const std::vector<std::string>& dirs);

// "from:line: ..." for every edge that goes to a folder later in `order` than its own, from or
// to a folder that is in no layer, and for every cycle between files.
std::vector<std::string> CheckIncludeLayers(const std::vector<std::string>& order,
                                            const std::vector<IncludeEdge>& edges);

// A third-party header that puts the part including it in a layer: <mpi.h> and CUPTI's, NCCL's and
// LibTorch's headers belong to what runs in a rank, never to plain data or to what computes on it.
struct SystemHeaderRule {
  std::string prefix;       // "mpi.h", "cupti", "torch/"
  std::string lowest;       // the first folder of `order` that may include it ("harness/topology")
};

// Every `#include <...>` in the same files as ScanIncludes reads, tests and test data left out (a
// test may drive a part with more than the part itself uses); `to` is the header without brackets.
std::vector<IncludeEdge> ScanSystemIncludes(const std::filesystem::path& root, const std::vector<std::string>& dirs);

// "from:line: ..." for every system include a rule puts in a layer above the including file's.
// `allowed`: files that may, each kept with its reason where the caller lists it.
std::vector<std::string> CheckSystemHeaders(const std::vector<std::string>& order,
                                            const std::vector<SystemHeaderRule>& rules,
                                            const std::vector<IncludeEdge>& edges,
                                            const std::vector<std::string>& allowed);

// Splits a space-separated list of folders ("harness/core harness/trace ...").
std::vector<std::string> SplitLayerOrder(const std::string& text);

}  // namespace lockstep
