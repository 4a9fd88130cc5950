#include "probe/held_works.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace lockstep::probe {
namespace {

// The recording backend's hold (held_works.h): a work goes only where no one else holds it,
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
