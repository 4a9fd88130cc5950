#include "harness/launcher/spawn_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using Clock = SpawnWatch::Clock;

class SpawnWatchTest : public ::testing::Test {
 protected:
  // Spawning k's folder; its spawning.json only when `nprocs` > 0 (the probe writes it last,
  // before the spawning's processes start).
  fs::path Spawn(int k, int nprocs) {
    const fs::path dir = dir_ / ("spawn-" + std::to_string(k));
    fs::create_directories(dir);
    if (nprocs > 0) {
      std::ofstream(dir / "spawning.json") << R"({"spawning": )" << k << R"(, "function": "demo", "nprocs": )" << nprocs
                                           << "}\n";
    }
    return dir;
  }
  static void Append(const fs::path& dir, int rank, const std::string& text) {
    const fs::path path = dir / ("rank-" + std::to_string(rank) + ".trace");
    const bool fresh = !fs::exists(path);
    std::ofstream out(path, std::ios::app | std::ios::binary);
    if (fresh) out << R"({"type":"header","schema":"lockstep.trace/2.0","rank":)" << rank << "}\n";
    out << text;
  }
  static std::string Step(int64_t step) { return R"({"type":"step","step":)" + std::to_string(step) + "}\n"; }
  static std::string Footer() { return R"({"type":"footer","steps_completed":1,"status":"ok"})" "\n"; }

  testing::TempDir temp_{"lockstep-spawn-watch-"};
  const fs::path dir_ = temp_.path();
};

TEST_F(SpawnWatchTest, NoSpawningUntilItsSpawningJsonIsThere) {
  SpawnWatch watch(dir_, {});
  EXPECT_FALSE(watch.Poll(Clock::now()));
  EXPECT_EQ(watch.newest(), nullptr);
  Spawn(1, /*nprocs=*/0);
  EXPECT_FALSE(watch.Poll(Clock::now()));
  EXPECT_EQ(watch.newest(), nullptr) << "a folder without its spawning.json is a spawning not begun yet";
  Spawn(1, 2);
  EXPECT_TRUE(watch.Poll(Clock::now()));
  ASSERT_NE(watch.newest(), nullptr);
  EXPECT_EQ(watch.newest()->spawning.index, 1);
  EXPECT_EQ(watch.newest()->spawning.function, "demo");
  EXPECT_EQ(watch.newest()->watcher.size(), 2) << "its world: nprocs ranks";
}

// A spawning's ranks start when each shows its step-0 record, end when each wrote its footer;
// their steps are progress, and the progress callback hears them with their own rank.
TEST_F(SpawnWatchTest, FollowsTheSpawnedRanksFromStartToEnd) {
  std::vector<std::pair<int, int64_t>> heard;
  SpawnWatch watch(dir_, [&](int rank, int64_t step) { heard.emplace_back(rank, step); });
  const fs::path dir = Spawn(1, 2);
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(watch.Poll(t0));
  const SpawnWatch::World& w = *watch.newest();
  EXPECT_EQ(w.began, t0);
  Append(dir, 0, Step(0));
  EXPECT_TRUE(watch.Poll(t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(w.started) << "rank 1 has not started";
  Append(dir, 1, Step(0));
  const Clock::time_point t2 = t0 + std::chrono::seconds(2);
  EXPECT_TRUE(watch.Poll(t2));
  ASSERT_TRUE(w.started);
  EXPECT_EQ(*w.started, t2);
  EXPECT_EQ(w.last_progress, t2);
  EXPECT_FALSE(watch.Poll(t0 + std::chrono::seconds(3))) << "nothing new";
  EXPECT_EQ(w.last_progress, t2);
  for (int r = 0; r < 2; ++r) Append(dir, r, Step(1) + Footer());
  EXPECT_TRUE(watch.Poll(t0 + std::chrono::seconds(4)));
  ASSERT_TRUE(w.ended);
  EXPECT_THAT(heard, ::testing::Contains(std::make_pair(1, int64_t{1})));
  watch.Discount(std::chrono::seconds(10));
  EXPECT_EQ(*w.ended, t0 + std::chrono::seconds(14)) << "the launcher's starved time moves its windows";
}

// The program's next spawning replaces the last: several begun between two looks, the newest.
TEST_F(SpawnWatchTest, TheNewestSpawningIsTheOneWatched) {
  SpawnWatch watch(dir_, {});
  Spawn(1, 2);
  ASSERT_TRUE(watch.Poll(Clock::now()));
  Spawn(2, 1);
  Spawn(3, 4);
  ASSERT_TRUE(watch.Poll(Clock::now()));
  EXPECT_EQ(watch.newest()->spawning.index, 3);
  EXPECT_EQ(watch.newest()->watcher.size(), 4);
  EXPECT_FALSE(watch.newest()->started);
}

}  // namespace
}  // namespace lockstep
