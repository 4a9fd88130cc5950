#include "harness/result/scenario_series.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TensorRecord Tensor(const std::string& name, TensorKind kind, uint64_t digest, bool replicated = true) {
  TensorRecord t;
  t.name = name;
  t.kind = kind;
  t.digest = Digest128{0, digest};
  t.numel = 4;
  t.dtype = "float32";
  t.replicated = replicated;
  return t;
}

// Ranks 0..n-1, steps 0..steps; every tensor digest is the same on all ranks unless `odd` says
// otherwise: (rank, step) from which that rank's fc.weight differs.
std::vector<RankTrace> Traces(int n, int64_t steps, int odd_rank = -1, int64_t odd_from = 0) {
  std::vector<RankTrace> traces;
  for (int r = 0; r < n; ++r) {
    RankTrace t;
    t.header.rank = r;
    t.header.world_size = n;
    for (int64_t s = 0; s <= steps; ++s) {
      StepRecord rec;
      rec.step = s;
      rec.loss = s == 0 ? kNaN : 2.0 / double(s);
      const bool odd = r == odd_rank && s >= odd_from;
      rec.tensors.push_back(Tensor("fc.weight", TensorKind::kParam, odd ? 1000 + s : 100 + s));
      rec.tensors.push_back(Tensor("fc.bias", TensorKind::kParam, 200 + s));
      rec.tensors.push_back(Tensor("fc.weight", TensorKind::kGrad, 300 + s));
      rec.tensors.push_back(Tensor("fc.weight#exp_avg", TensorKind::kOptimizerState, 400 + s + r, false));
      t.steps.push_back(rec);
    }
    traces.push_back(t);
  }
  return traces;
}

TEST(ScenarioSeriesTest, CleanRunHasCurvesAndNoDivergence) {
  const ScenarioSeries s = BuildSeries(Traces(3, 4));
  EXPECT_EQ(s.steps, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(s.loss_by_rank.size(), 3u);
  EXPECT_TRUE(std::isnan(s.loss_by_rank.at(1)[0]));
  EXPECT_DOUBLE_EQ(s.loss_by_rank.at(1)[2], 1.0);
  // Sharded optimizer state differs per rank by design: neither listed nor compared.
  EXPECT_EQ(s.tensors, (std::vector<std::string>{"fc.weight", "fc.bias", "fc.weight (grad)"}));
  EXPECT_TRUE(s.divergent_cells.empty());
  EXPECT_EQ(s.divergent_cells_omitted, 0);
}

TEST(ScenarioSeriesTest, DivergentCellsNameTheGroups) {
  const ScenarioSeries s = BuildSeries(Traces(4, 4, /*odd_rank=*/2, /*odd_from=*/3));
  ASSERT_EQ(s.divergent_cells.size(), 2u);  // steps 3 and 4, fc.weight only
  const DivergenceCell& c = s.divergent_cells[0];
  EXPECT_EQ(c.step, 3);
  EXPECT_EQ(c.tensor, "fc.weight");
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].first, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(c.groups[0].second, "00000000000000000000000000000067");  // 100 + 3
  EXPECT_EQ(c.groups[1].first, (std::vector<int>{2}));
  EXPECT_EQ(c.groups[1].second, "000000000000000000000000000003eb");  // 1000 + 3
  EXPECT_EQ(s.divergent_cells[1].step, 4);
}

TEST(ScenarioSeriesTest, TraceOrderDoesNotMatterAndShortRanksGetNaN) {
  std::vector<RankTrace> traces = Traces(3, 3);
  traces[1].steps.resize(2);  // rank 1 died after step 1
  std::swap(traces[0], traces[2]);
  const ScenarioSeries s = BuildSeries(traces);
  EXPECT_EQ(s.steps.size(), 4u);
  EXPECT_EQ(s.loss_by_rank.begin()->first, 0);
  EXPECT_TRUE(std::isnan(s.loss_by_rank.at(1)[3]));
  EXPECT_DOUBLE_EQ(s.loss_by_rank.at(2)[3], 2.0 / 3.0);
  EXPECT_TRUE(s.divergent_cells.empty());  // a missing rank is not a disagreement
}

TEST(ScenarioSeriesTest, CapsDivergentCells) {
  const ScenarioSeries s = BuildSeries(Traces(2, 10, /*odd_rank=*/1, /*odd_from=*/1), /*max_divergent_cells=*/4);
  ASSERT_EQ(s.divergent_cells.size(), 4u);
  EXPECT_EQ(s.divergent_cells.front().step, 1);  // the earliest cells are kept
  EXPECT_EQ(s.divergent_cells.back().step, 4);
  EXPECT_EQ(s.divergent_cells_omitted, 6);
}

TEST(ScenarioSeriesTest, KeepsTheLastCollectivesOfEachRank) {
  std::vector<RankTrace> traces = Traces(2, 1);
  for (RankTrace& t : traces) {
    for (uint64_t seq = 0; seq < 12; ++seq) {
      CollectiveRecord c;
      c.group = "world";
      c.seq = seq;
      c.op = "all_reduce";
      c.step = 1;
      c.start_s = double(seq);
      if (!(t.header.rank == 1 && seq == 11)) c.end_s = double(seq) + 0.5;
      t.collectives.push_back(c);
    }
  }
  const ScenarioSeries s = BuildSeries(traces);
  ASSERT_EQ(s.last_collectives.size(), 2 * kLastCollectivesPerRank);
  EXPECT_EQ(s.last_collectives.front().rank, 0);
  EXPECT_EQ(s.last_collectives.front().seq, 12 - kLastCollectivesPerRank);
  EXPECT_EQ(s.last_collectives.back().rank, 1);
  EXPECT_EQ(s.last_collectives.back().seq, 11u);
  EXPECT_FALSE(s.last_collectives.back().end_s.has_value());
  EXPECT_EQ(s.last_collectives.front().end_s, std::optional<double>(double(12 - kLastCollectivesPerRank) + 0.5));
}

TEST(ScenarioSeriesTest, NoTraces) {
  const ScenarioSeries s = BuildSeries({});
  EXPECT_TRUE(s.steps.empty());
  EXPECT_TRUE(s.loss_by_rank.empty());
  EXPECT_TRUE(s.last_collectives.empty());
}

}  // namespace
}  // namespace lockstep
