#include "tests/layering/include_layers.h"

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
