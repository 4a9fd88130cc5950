#include "harness/discovery/native_collective_log.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lockstep {
namespace {

// Every event as one line: "begin nccl:ab 0 all_reduce float32 8" or "end nccl:ab 0".
class Lines : public NativeCollectiveObserver {
 public:
  void Begin(const CollectiveRecord& c) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back("begin " + c.group + " " + std::to_string(c.seq) + " " + c.op + " " + c.dtype + " " +
                    std::to_string(c.count));
  }
  void End(const std::string& group, uint64_t seq) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back("end " + group + " " + std::to_string(seq));
  }
  std::mutex mu;
  std::vector<std::string> lines;
};

CollectiveRecord AllReduce(const std::string& group, uint64_t seq, int64_t count) {
  CollectiveRecord c;
  c.group = group;
  c.seq = seq;
  c.op = "all_reduce";
  c.dtype = "float32";
  c.count = count;
  c.reduce = "sum";
  return c;
}

class NativeCollectiveLogTest : public ::testing::Test {
 protected:
  void SetUp() override { ResetNativeCollectivesForTest(); }
  void TearDown() override { ResetNativeCollectivesForTest(); }
};

TEST_F(NativeCollectiveLogTest, EventsBeforeTheObserverAreHandedOverInOrder) {
  RecordNativeCollectiveBegin(AllReduce("nccl:ab", 0, 8));
  RecordNativeCollectiveEnd("nccl:ab", 0);
  auto seen = std::make_shared<Lines>();
  SetNativeCollectiveObserver(seen);
  RecordNativeCollectiveBegin(AllReduce("nccl:ab", 1, 4));
  EXPECT_EQ(seen->lines, (std::vector<std::string>{"begin nccl:ab 0 all_reduce float32 8", "end nccl:ab 0",
                                                   "begin nccl:ab 1 all_reduce float32 4"}));
  EXPECT_EQ(DroppedNativeCollectives(), 0u);
}

TEST_F(NativeCollectiveLogTest, ARemovedObserverHearsNothingMore) {
  auto seen = std::make_shared<Lines>();
  SetNativeCollectiveObserver(seen);
  RecordNativeCollectiveEnd("nccl:ab", 3);
  SetNativeCollectiveObserver(nullptr);
  RecordNativeCollectiveEnd("nccl:ab", 4);
  EXPECT_EQ(seen->lines, std::vector<std::string>{"end nccl:ab 3"});
  // The event after removal waits for the next observer.
  auto next = std::make_shared<Lines>();
  SetNativeCollectiveObserver(next);
  EXPECT_EQ(next->lines, std::vector<std::string>{"end nccl:ab 4"});
}

TEST_F(NativeCollectiveLogTest, WithoutAnObserverTheLogKeepsABoundedPrefixAndCountsTheRest) {
  for (size_t i = 0; i < kMaxPendingNativeCollectives + 5; ++i) RecordNativeCollectiveEnd("nccl:ab", i);
  EXPECT_EQ(DroppedNativeCollectives(), 5u);
  auto seen = std::make_shared<Lines>();
  SetNativeCollectiveObserver(seen);
  ASSERT_EQ(seen->lines.size(), kMaxPendingNativeCollectives);
  EXPECT_EQ(seen->lines.front(), "end nccl:ab 0");
  EXPECT_EQ(seen->lines.back(), "end nccl:ab " + std::to_string(kMaxPendingNativeCollectives - 1));
}

// NCCL starts a collective on the calling thread and ends it on its proxy thread: with both
// threads recording at once, each end still reaches the observer after its begin.
TEST_F(NativeCollectiveLogTest, AnEndNeverOvertakesItsBeginAcrossThreads) {
  auto seen = std::make_shared<Lines>();
  SetNativeCollectiveObserver(seen);
  constexpr int kOps = 2000;
  std::mutex mu;
  std::vector<uint64_t> begun;  // seqs whose begin returned, for the "proxy" to end
  std::thread proxy([&] {
    for (int ended = 0; ended < kOps;) {
      std::vector<uint64_t> ready;
      {
        std::lock_guard<std::mutex> lock(mu);
        ready.swap(begun);
      }
      for (uint64_t s : ready) RecordNativeCollectiveEnd("nccl:ab", s), ++ended;
      std::this_thread::yield();
    }
  });
  for (int i = 0; i < kOps; ++i) {
    RecordNativeCollectiveBegin(AllReduce("nccl:ab", static_cast<uint64_t>(i), 1));
    std::lock_guard<std::mutex> lock(mu);
    begun.push_back(static_cast<uint64_t>(i));
  }
  proxy.join();
  std::vector<bool> began(kOps, false);
  ASSERT_EQ(seen->lines.size(), 2u * kOps);
  for (const std::string& line : seen->lines) {
    const bool is_end = line.rfind("end ", 0) == 0;
    const uint64_t seq = std::stoull(line.substr(is_end ? 12 : 14));
    if (is_end) {
      EXPECT_TRUE(began[seq]) << "end of seq " << seq << " before its begin";
    } else {
      began[seq] = true;
    }
  }
}

}  // namespace
}  // namespace lockstep
