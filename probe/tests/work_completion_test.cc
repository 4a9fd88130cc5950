// WhenWorkEnds: the end of a collective as a backend reports it, including the backend that
// reports nothing. The null work is what ProcessGroupNCCL returns for a synchronous all-reduce;
// the probe once called through it and killed every program with a plain dist.all_reduce on NCCL
// (the GPU run of 2026-11-26, docs/GPU.md).
#include "probe/work_completion.h"

#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace lockstep::probe {
namespace {

// A work whose result is ready when the test completes its future.
class FutureWork : public c10d::Work {
 public:
  FutureWork() : future_(c10::make_intrusive<c10::ivalue::Future>(c10::NoneType::get())) {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  void Complete() { future_->markCompleted(c10::IValue()); }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

TEST(WhenWorkEnds, NoWorkHasEndedAtOnce) {
  int ended = 0;
  WhenWorkEnds(c10::intrusive_ptr<c10d::Work>(), [&] { ++ended; });
  EXPECT_EQ(ended, 1);
}

TEST(WhenWorkEnds, WorkWithoutAFutureHasEndedAtOnce) {
  // c10d::Work's own getFuture throws: the backend finished inside the call.
  int ended = 0;
  WhenWorkEnds(c10::make_intrusive<c10d::Work>(), [&] { ++ended; });
  EXPECT_EQ(ended, 1);
}

TEST(WhenWorkEnds, WorkWithAFutureEndsWhenItsResultIsReady) {
  auto work = c10::make_intrusive<FutureWork>();
  int ended = 0;
  WhenWorkEnds(work, [&] { ++ended; });
  EXPECT_EQ(ended, 0);
  work->Complete();
  EXPECT_EQ(ended, 1);
}

// The recording backend's hold (work_completion.h): a work goes only where no one else holds it,
// so that a backend's worker thread never frees it last (SIGABRT at exit, 2026-11-27).
class DestructionCounted : public c10d::Work {
 public:
  explicit DestructionCounted(int* destroyed) : destroyed_(destroyed) {}
  ~DestructionCounted() override { ++*destroyed_; }

 private:
  int* destroyed_;
};

TEST(HeldWorks, AWorkGoesOnlyOnceNoOneElseHoldsIt) {
  LetGoOfAllWorks();
  int destroyed = 0;
  c10::intrusive_ptr<c10d::Work> worker_ref = c10::make_intrusive<DestructionCounted>(&destroyed);
  HoldWork(worker_ref);
  HoldWork(c10::intrusive_ptr<c10d::Work>());  // no work: nothing held
  EXPECT_EQ(HeldWorkCount(), 1u);
  LetGoOfUnsharedWorks();  // the "worker" still holds it
  EXPECT_EQ(HeldWorkCount(), 1u);
  EXPECT_EQ(destroyed, 0);
  worker_ref.reset();  // the worker let go: it was not the last
  EXPECT_EQ(destroyed, 0);
  LetGoOfUnsharedWorks();  // destroyed here, on this thread
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(HeldWorkCount(), 0u);
}

TEST(HeldWorks, AtExitWaitsForTheWorkersThenLetsGoOfAll) {
  LetGoOfAllWorks();
  int destroyed = 0;
  c10::intrusive_ptr<c10d::Work> worker_ref = c10::make_intrusive<DestructionCounted>(&destroyed);
  HoldWork(worker_ref);
  EXPECT_FALSE(WaitUntilWorksAreUnshared(std::chrono::milliseconds(20)));
  std::thread worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    worker_ref.reset();
  });
  EXPECT_TRUE(WaitUntilWorksAreUnshared(std::chrono::seconds(30)));
  worker.join();
  EXPECT_EQ(destroyed, 0);
  LetGoOfAllWorks();
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(HeldWorkCount(), 0u);
}

}  // namespace
}  // namespace lockstep::probe
