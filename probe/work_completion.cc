#include "probe/work_completion.h"

#include <ATen/core/ivalue.h>

#include <algorithm>
#include <iterator>

#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace lockstep::probe {

void WhenWorkEnds(const c10::intrusive_ptr<c10d::Work>& work, std::function<void()> ended) {
  if (!work) {
    ended();
    return;
  }
  // c10d::Work has no query for whether it has a future (its base getFuture throws a fixed
  // message, no number in it), so this asks by catching.
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const c10::Error&) {
    future.reset();
  }
  if (!future) {
    ended();
    return;
  }
  future->addCallback([ended = std::move(ended)](c10::ivalue::Future&) { ended(); });
}

namespace {

struct HeldWorks {
  std::mutex mu;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
};

// Never destroyed: dropping a work in static destruction, after Python is gone, is what this
// avoids.
HeldWorks& Held() {
  static HeldWorks* held = new HeldWorks;
  return *held;
}

}  // namespace

void HoldWork(const c10::intrusive_ptr<c10d::Work>& work) {
  if (!work) return;
  HeldWorks& h = Held();
  std::lock_guard<std::mutex> lock(h.mu);
  h.works.push_back(work);
}

void LetGoOfUnsharedWorks() {
  std::vector<c10::intrusive_ptr<c10d::Work>> unshared;
  {
    HeldWorks& h = Held();
    std::lock_guard<std::mutex> lock(h.mu);
    auto shared_end = std::partition(h.works.begin(), h.works.end(),
                                     [](const c10::intrusive_ptr<c10d::Work>& w) { return w.use_count() > 1; });
    std::move(shared_end, h.works.end(), std::back_inserter(unshared));
    h.works.erase(shared_end, h.works.end());
  }
  // Destroyed here, outside the lock: freeing their tensors may take the GIL.
}

bool WaitUntilWorksAreUnshared(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      HeldWorks& h = Held();
      std::lock_guard<std::mutex> lock(h.mu);
      bool shared = false;
      for (const auto& w : h.works) shared = shared || w.use_count() > 1;
      if (!shared) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void LetGoOfAllWorks() {
  std::vector<c10::intrusive_ptr<c10d::Work>> all;
  {
    HeldWorks& h = Held();
    std::lock_guard<std::mutex> lock(h.mu);
    all.swap(h.works);
  }
}

size_t HeldWorkCount() {
  HeldWorks& h = Held();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.works.size();
}

}  // namespace lockstep::probe
