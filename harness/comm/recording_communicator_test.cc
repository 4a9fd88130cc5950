#include "harness/comm/recording_communicator.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <mutex>
#include <vector>

#include "harness/comm/thread_communicator.h"

namespace lockstep {
namespace {

struct Event {
  bool begin = false;
  CollectiveFingerprint fp;
  Status status;
};

class ListenerForTest : public CollectiveListener {
 public:
  void OnCollectiveBegin(const CollectiveFingerprint& fp) override { events.push_back({true, fp, Status::Ok()}); }
  void OnCollectiveEnd(const CollectiveFingerprint& fp, const Status& status) override {
    events.push_back({false, fp, status});
  }
  std::vector<Event> events;
};

// Skips the collectives whose (group, seq) it is told to, and remembers the steps it saw.
class SkippingHooks : public CollectiveInterceptor {
 public:
  SkippingHooks(std::string group, uint64_t seq) : group_(std::move(group)), seq_(seq) {}
  bool BeforeCollective(const CollectiveFingerprint& fp, int64_t step) override {
    steps.push_back(step);
    return !(fp.group == group_ && fp.seq == seq_);
  }
  std::vector<int64_t> steps;

 private:
  std::string group_;
  uint64_t seq_;
};

TEST(RecordingCommunicatorTest, NumbersAndFingerprintsEveryCollective) {
  ThreadWorld world(2);
  std::vector<ListenerForTest> listeners(2);
  world.RunOwned([&](std::unique_ptr<Communicator> comm) {
    const int r = comm->rank();
    RecordingCommunicator rec(std::move(comm), &listeners[r], nullptr);
    torch::Tensor t = torch::ones({6}, torch::kFloat32);
    ASSERT_TRUE(rec.AllReduce(t, ReduceOp::kAvg).ok());
    torch::Tensor in = torch::ones({3}, torch::kInt64);
    torch::Tensor gathered = torch::empty({6}, torch::kInt64);
    ASSERT_TRUE(rec.AllGather(in, gathered).ok());
    torch::Tensor rs_in = torch::ones({4}, torch::kFloat64);
    torch::Tensor rs_out = torch::empty({2}, torch::kFloat64);
    ASSERT_TRUE(rec.ReduceScatter(rs_in, rs_out, ReduceOp::kMax).ok());
    torch::Tensor b = torch::zeros({5}, torch::kUInt8);
    ASSERT_TRUE(rec.Broadcast(b, 1).ok());
    ASSERT_TRUE(rec.Barrier().ok());
    EXPECT_EQ(rec.next_seq(), 5u);
  });
  for (int r = 0; r < 2; ++r) {
    const auto& ev = listeners[r].events;
    ASSERT_EQ(ev.size(), 10u);
    for (size_t i = 0; i < ev.size(); ++i) {
      EXPECT_EQ(ev[i].begin, i % 2 == 0);
      EXPECT_EQ(ev[i].fp.seq, i / 2);
      EXPECT_EQ(ev[i].fp.group, "world");
      if (!ev[i].begin) {
        EXPECT_TRUE(ev[i].status.ok() && ev[i].status.message().empty());
      }
    }
    const CollectiveFingerprint& ar = ev[0].fp;
    EXPECT_EQ(ar.op, CollectiveOp::kAllReduce);
    EXPECT_EQ(ar.dtype, "float32");
    EXPECT_EQ(ar.count, 6);
    EXPECT_EQ(ar.reduce, "avg");
    EXPECT_EQ(ar.root, -1);
    const CollectiveFingerprint& ag = ev[2].fp;
    EXPECT_EQ(ag.op, CollectiveOp::kAllGather);
    EXPECT_EQ(ag.dtype, "int64");
    EXPECT_EQ(ag.count, 3) << "what this rank contributes";
    EXPECT_EQ(ag.reduce, "");
    const CollectiveFingerprint& rs = ev[4].fp;
    EXPECT_EQ(rs.op, CollectiveOp::kReduceScatter);
    EXPECT_EQ(rs.dtype, "float64");
    EXPECT_EQ(rs.count, 4);
    EXPECT_EQ(rs.reduce, "max");
    const CollectiveFingerprint& bc = ev[6].fp;
    EXPECT_EQ(bc.op, CollectiveOp::kBroadcast);
    EXPECT_EQ(bc.dtype, "uint8");
    EXPECT_EQ(bc.root, 1);
    const CollectiveFingerprint& ba = ev[8].fp;
    EXPECT_EQ(ba.op, CollectiveOp::kBarrier);
    EXPECT_EQ(ba.dtype, "");
    EXPECT_EQ(ba.count, 0);
  }
}

TEST(RecordingCommunicatorTest, SplitChildrenCountTheirOwnSeqAndShareTheStep) {
  ThreadWorld world(4);
  std::vector<ListenerForTest> listeners(4);
  std::vector<SkippingHooks> hooks(4, SkippingHooks("none", 0));
  world.RunOwned([&](std::unique_ptr<Communicator> comm) {
    const int r = comm->rank();
    RecordingCommunicator rec(std::move(comm), &listeners[r], &hooks[r]);
    rec.set_step(0);
    torch::Tensor t = torch::ones({2});
    ASSERT_TRUE(rec.AllReduce(t, ReduceOp::kSum).ok());
    auto slice = rec.Split(r / 2, r, "slice" + std::to_string(r / 2));
    ASSERT_TRUE(slice.ok());
    rec.set_step(3);  // set on the parent, seen by the child
    ASSERT_TRUE((*slice)->AllReduce(t, ReduceOp::kSum).ok());
    ASSERT_TRUE((*slice)->Barrier().ok());
    ASSERT_TRUE(rec.Barrier().ok());
    auto* child = dynamic_cast<RecordingCommunicator*>(slice->get());
    ASSERT_NE(child, nullptr) << "Split returns a recording child";
    EXPECT_EQ(child->step(), 3);
  });
  for (int r = 0; r < 4; ++r) {
    const auto& ev = listeners[r].events;
    ASSERT_EQ(ev.size(), 8u);
    EXPECT_EQ(ev[0].fp.group, "world");
    EXPECT_EQ(ev[0].fp.seq, 0u);
    EXPECT_EQ(ev[2].fp.group, "slice" + std::to_string(r / 2));
    EXPECT_EQ(ev[2].fp.seq, 0u);
    EXPECT_EQ(ev[4].fp.group, "slice" + std::to_string(r / 2));
    EXPECT_EQ(ev[4].fp.seq, 1u);
    EXPECT_EQ(ev[6].fp.group, "world");
    EXPECT_EQ(ev[6].fp.seq, 1u);
    EXPECT_EQ(hooks[r].steps, std::vector<int64_t>({0, 3, 3, 3}));
  }
}

TEST(RecordingCommunicatorTest, AHookSkipsTheCollectiveButItIsStillRecorded) {
  ThreadWorld world(2);
  std::vector<ListenerForTest> listeners(2);
  // Every rank skips world seq 1, so that the thread backend sees matching sequences.
  std::vector<SkippingHooks> hooks(2, SkippingHooks("world", 1));
  world.RunOwned([&](std::unique_ptr<Communicator> comm) {
    const int r = comm->rank();
    RecordingCommunicator rec(std::move(comm), &listeners[r], &hooks[r]);
    torch::Tensor a = torch::full({3}, r + 1.0);
    ASSERT_TRUE(rec.AllReduce(a, ReduceOp::kSum).ok());
    EXPECT_TRUE(torch::equal(a, torch::full({3}, 3.0)));
    torch::Tensor b = torch::full({3}, r + 1.0);
    Status skipped = rec.AllReduce(b, ReduceOp::kSum);
    EXPECT_TRUE(skipped.ok());
    EXPECT_TRUE(skipped.message().empty()) << "the caller sees a plain ok";
    EXPECT_TRUE(torch::equal(b, torch::full({3}, r + 1.0))) << "skipped: the tensor keeps the local value";
    torch::Tensor c = torch::full({3}, r + 1.0);
    ASSERT_TRUE(rec.AllReduce(c, ReduceOp::kSum).ok());
    EXPECT_TRUE(torch::equal(c, torch::full({3}, 3.0)));
  });
  for (int r = 0; r < 2; ++r) {
    const auto& ev = listeners[r].events;
    ASSERT_EQ(ev.size(), 6u);
    EXPECT_TRUE(ev[2].begin);
    EXPECT_EQ(ev[2].fp.seq, 1u);
    EXPECT_FALSE(ev[3].begin);
    EXPECT_TRUE(ev[3].status.ok());
    EXPECT_EQ(ev[3].status.message(), RecordingCommunicator::kSkippedNote);
    EXPECT_EQ(ev[5].fp.seq, 2u);
    EXPECT_TRUE(ev[5].status.message().empty());
  }
}

TEST(RecordingCommunicatorTest, BackendErrorsReachTheListenerAndTheCaller) {
  ThreadWorld world(2);
  world.FailNextCall(0, "injected");
  std::vector<ListenerForTest> listeners(2);
  std::vector<Status> results(2);
  world.RunOwned([&](std::unique_ptr<Communicator> comm) {
    const int r = comm->rank();
    RecordingCommunicator rec(std::move(comm), &listeners[r], nullptr);
    results[r] = rec.Barrier();
  });
  EXPECT_EQ(results[0].message(), "rank 0 group world: barrier: injected");
  EXPECT_EQ(results[1].message(), "rank 1 group world: barrier: peer rank 0 failed: injected");
  ASSERT_EQ(listeners[0].events.size(), 2u);
  EXPECT_EQ(listeners[0].events[1].status.message(), results[0].message());
}

}  // namespace
}  // namespace lockstep
