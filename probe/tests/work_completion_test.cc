// WhenWorkEnds: the end of a collective as a backend reports it, including the backend that
// reports nothing. The null work is what ProcessGroupNCCL returns for a synchronous all-reduce;
// the probe once called through it and killed every program with a plain dist.all_reduce on NCCL
// (the GPU run of 2026-11-26, docs/GPU.md).
#include "probe/work_completion.h"

#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lockstep::probe
