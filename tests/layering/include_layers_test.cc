#include "tests/layering/include_layers.h"
#include "harness/core/testing/build_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::vector<std::string> kOrder = {"harness/core", "harness/result", "checkers", "harness/runner"};

// The tree itself: no include crosses a layer upward, none leaves the declared layers, no cycle.
TEST(IncludeLayersTest, TheTreeKeepsItsLayers) {
  const std::vector<std::string> order = SplitLayerOrder(LOCKSTEP_LAYER_ORDER);
  ASSERT_GT(order.size(), 10u);
  const std::vector<IncludeEdge> edges =
      ScanIncludes(LOCKSTEP_SOURCE_DIR, {"harness", "checkers", "reports", "probe", "bench", "tests"});
  ASSERT_GT(edges.size(), 500u) << "the scan found too few includes to be looking at the tree";
  EXPECT_THAT(CheckIncludeLayers(order, edges), IsEmpty());
}

// What a rank runs with (MPI, CUPTI, NCCL, LibTorch) stays out of plain data and what computes on it.
const std::vector<SystemHeaderRule> kSystemHeaderRules = {
    {"mpi.h", "harness/topology"}, {"cupti", "harness/topology"}, {"nccl.h", "harness/topology"},
    {"torch/", "harness/topology"}, {"ATen/", "harness/topology"}, {"c10/", "harness/topology"},
    {"cuda", "harness/topology"}};

TEST(IncludeLayersTest, NoSystemHeaderPutsAPartAboveItsLayer) {
  const std::vector<std::string> order = SplitLayerOrder(LOCKSTEP_LAYER_ORDER);
  const std::vector<IncludeEdge> edges = ScanSystemIncludes(LOCKSTEP_SOURCE_DIR, {"harness", "checkers", "reports"});
  ASSERT_GT(edges.size(), 200u);
  // The build's description reads the MPI version macros of <mpi.h> (no MPI call). Nothing else:
  // a tensor's digest (LibTorch, CUDA) is harness/capture's, a rank's layer, and harness/trace is
  // plain data again (issue 47).
  const std::vector<std::string> allowed = {"harness/core/build_info.cc.in"};
  EXPECT_THAT(CheckSystemHeaders(order, kSystemHeaderRules, edges, allowed), IsEmpty());
}

// What issue 28 found: the PMPI and CUPTI recorders in harness/discovery, a plain-data folder.
TEST(IncludeLayersTest, AnMpiOrCuptiHeaderInAPlainDataFolderFails) {
  const std::vector<std::string> order = {"harness/core", "harness/discovery", "checkers", "harness/topology",
                                          "harness/native_recorders"};
  EXPECT_THAT(CheckSystemHeaders(order, kSystemHeaderRules,
                                 {{"harness/discovery/pmpi_discovery.cc", 10, "mpi.h"},
                                  {"harness/discovery/cupti_discovery_recorder.h", 12, "cupti_callbacks.h"},
                                  {"harness/native_recorders/pmpi_discovery.cc", 10, "mpi.h"},
                                  {"checkers/a.cc", 3, "vector"}},
                                 {}),
              ElementsAre("harness/discovery/pmpi_discovery.cc:10: includes <mpi.h>, which belongs to "
                          "harness/topology's layer or above; harness/discovery is below it",
                          "harness/discovery/cupti_discovery_recorder.h:12: includes <cupti_callbacks.h>, which "
                          "belongs to harness/topology's layer or above; harness/discovery is below it"));
}

TEST(IncludeLayersTest, DownwardAndSameFolderIncludesPass) {
  EXPECT_THAT(CheckIncludeLayers(kOrder, {{"checkers/checker.h", 3, "harness/result/finding.h"},
                                          {"checkers/a.cc", 1, "checkers/checker.h"},
                                          {"harness/runner/r.cc", 9, "harness/core/status.h"}}),
              IsEmpty());
}

// The cycle issue 16 found: run_result.h included checkers/finding.h.
TEST(IncludeLayersTest, AnUpwardIncludeFails) {
  EXPECT_THAT(CheckIncludeLayers(kOrder, {{"harness/result/run_result.h", 11, "checkers/finding.h"}}),
              ElementsAre("harness/result/run_result.h:11: includes \"checkers/finding.h\": harness/result is below "
                          "checkers and may not include it"));
}

TEST(IncludeLayersTest, AFileOutsideEveryLayerFails) {
  EXPECT_THAT(CheckIncludeLayers(kOrder, {{"checkers/a.cc", 2, "fixtures/x.h"}}),
              ElementsAre(HasSubstr("the included file is in no layer")));
  EXPECT_THAT(CheckIncludeLayers(kOrder, {{"harness/resultx/a.cc", 2, "harness/core/status.h"}}),
              ElementsAre(HasSubstr("the including file is in no layer")));
}

TEST(IncludeLayersTest, ACycleInsideAFolderFails) {
  EXPECT_THAT(CheckIncludeLayers(kOrder, {{"checkers/a.h", 1, "checkers/b.h"},
                                          {"checkers/b.h", 1, "checkers/c.h"},
                                          {"checkers/c.h", 1, "checkers/a.h"}}),
              ElementsAre("include cycle: checkers/a.h -> checkers/b.h -> checkers/c.h -> checkers/a.h"));
}

TEST(IncludeLayersTest, TheLongestFolderDecides) {
  // harness/trace/cuda is in harness/trace's layer unless it is named itself.
  const std::vector<std::string> order = {"harness/trace", "harness/comm", "harness/trace/cuda"};
  EXPECT_THAT(CheckIncludeLayers(order, {{"harness/trace/cuda/k.cu", 1, "harness/comm/c.h"}}), IsEmpty());
  EXPECT_THAT(CheckIncludeLayers(order, {{"harness/trace/t.cc", 1, "harness/trace/cuda/k.h"}}),
              ElementsAre(HasSubstr("harness/trace is below harness/trace/cuda")));
}

TEST(IncludeLayersTest, ScanReadsQuotedIncludesOnly) {
  const std::vector<IncludeEdge> edges = ScanIncludes(LOCKSTEP_SOURCE_DIR, {"tests/layering"});
  bool found = false;
  for (const IncludeEdge& e : edges) {
    EXPECT_NE(e.to.front(), '<');
    found |= e.from == "tests/layering/include_layers.cc" && e.to == "tests/layering/include_layers.h" && e.line == 1;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lockstep
